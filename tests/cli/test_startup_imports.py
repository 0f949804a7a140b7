"""What `wop capture` and `wop replay` load before they start the program: everything else loads while the program's
interpreter starts, in parallel (bench/bench_startup.py times the whole). The modules are read at the moment wop
starts the program's process, by a wrapper around subprocess.Popen."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_wop

LOADED_AT_THE_START = """
import subprocess, sys
from pathlib import Path

started = subprocess.Popen.__init__
record = Path(sys.argv[1])

def starting(self, *args, **kwargs):
    if not record.exists():
        record.write_text("\\n".join(sorted(sys.modules)))
    started(self, *args, **kwargs)

subprocess.Popen.__init__ = starting
sys.argv = ["wop", *sys.argv[2:]]
from openwop_cli.cli.entry import main
main()
"""

# What the program's start never waits for: the JSON and validation libraries, the redactor and its Hyperscan, the
# settings' TOML parser and the per-user directories, the runtime of the program side, the replay machinery.
LOADED_LATER = ("orjson", "dataclasses", "msgspec", "hyperscan", "tomllib", "platformdirs", "openwop_cli.format.redact",
                "openwop_cli.format.shape", "openwop_cli.format.sink", "openwop_cli.runtime.session",
                "openwop_cli.runtime.callsite", "openwop_cli.runtime.children", "openwop_cli.host.run_replay",
                "openwop_cli.replay.engine", "sysconfig")


def loaded_at_the_start(tmp_path: Path, *args: str, env: dict | None = None) -> set[str]:
    record = tmp_path / "loaded.txt"
    record.unlink(missing_ok=True)
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                **(env or {})}
    done = subprocess.run([sys.executable, "-c", LOADED_AT_THE_START, str(record), *args], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120, env={k: v for k, v in full_env.items() if v is not None})
    assert done.returncode == 0, done.stderr
    return set(record.read_text().split())


def test_wop_capture_starts_the_program_before_it_reads_the_settings_or_loads_the_capture_side(tmp_path):
    # A project that configures wop (its settings need a TOML parser) and the default store (the per-user data
    # directory): neither stands between `wop capture` and the program's start.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "agent"\n\n[tool.wop]\nambient = false\n')
    loaded = loaded_at_the_start(tmp_path, "capture", "--", sys.executable, "-c", "print(1)", env={"WOP_HOME": None})
    assert sorted(name for name in LOADED_LATER if name in loaded) == []


@pytest.mark.parametrize("program", [["agent.py"], ["-c", "print(1)"]])
def test_wop_replay_starts_the_program_before_it_reads_the_capture_or_loads_the_replay_side(tmp_path, program):
    # The settings (the replay's policy, here [tool.wop]'s) reach the program with its go; the capture's signature,
    # which trusts a command that is no script of this tree, is checked before that go.
    (tmp_path / "agent.py").write_text("print(1)\n")
    done = run_wop("capture", "--out", str(tmp_path / "source"), "--", sys.executable, *program, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\npolicy = "lenient"\n')
    loaded = loaded_at_the_start(tmp_path, "replay", "--out", str(tmp_path / "again"), str(tmp_path / "source"))
    assert sorted(name for name in (*LOADED_LATER, "hmac") if name in loaded) == []
