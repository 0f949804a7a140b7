"""Which Pythons `wop capture` starts before its capture is ready, and what it records of a Python that is not its own:
real interpreters and virtual environments made here (no network), run under the real `wop`."""

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import run_wop


def virtualenv(path: Path, *, system_site_packages: bool) -> Path:
    """A virtual environment made from this Python, without pip; its python."""
    options = ["--system-site-packages"] if system_site_packages else []
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", *options, str(path)], check=True)
    return path / "bin" / "python"


def site_packages(venv_python: Path) -> Path:
    return next((venv_python.parent.parent / "lib").glob("python*/site-packages"))


def test_another_environments_python_starts_only_once_the_capture_is_ready(tmp_path):
    """Its .pth files run before any sitecustomize, so it could not be held back: with the capture's --out taken it
    never starts, and otherwise it starts ungated."""
    python = virtualenv(tmp_path / "venv", system_site_packages=True)
    marker = tmp_path / "started"
    (site_packages(python) / "zz_marker.pth").write_text(
        f"import os; 'WOP_SINK' in os.environ and open({str(marker)!r}, 'w').write(str('WOP_GATE' in os.environ))\n")
    existing = tmp_path / "c"
    assert run_wop("capture", "--out", str(existing), "--", sys.executable, "-c", "pass").returncode == 0

    refused = run_wop("capture", "--out", str(existing), "--", str(python), "-c", "print('ran')")
    assert refused.returncode == 2 and "already holds a capture" in refused.stderr
    assert not marker.exists() and "ran" not in refused.stdout

    done = run_wop("capture", "--out", str(tmp_path / "d"), "--", str(python), "-c", "import time; time.time()")
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "False"
    assert "ambient" in run_wop("show", str(tmp_path / "d")).stdout


@functools.cache
def older_python() -> str | None:
    """A Python older than wop's runtime needs (3.11), if this machine has one: on PATH, or installed beside this one
    (pyenv, uv and the like keep their versions side by side)."""
    named = (shutil.which(f"python{version}") for version in ("2.7", "3.8", "3.9", "3.10"))
    beside = sorted(Path(sys.base_prefix).parent.glob("*/bin/python[23].*[0-9]"))
    for candidate in (*named, *beside):
        try:
            done = subprocess.run([str(candidate), "-c", "import sys; print(sys.hexversion)"], capture_output=True,
                                  text=True, timeout=60) if candidate else None
        except OSError:
            continue
        if done is not None and done.returncode == 0 and int(done.stdout) < 0x030B0000:
            return str(candidate)
    return None


def without_orjson(tmp_path: Path) -> Path:
    """The python of a virtual environment without wop's dependencies (as a system Python may be)."""
    python = virtualenv(tmp_path / "bare", system_site_packages=False)
    assert subprocess.run([str(python), "-c", "import orjson"], capture_output=True).returncode != 0
    return python


def unusable_python(kind: str, tmp_path: Path) -> str:
    if kind == "without orjson":
        return str(without_orjson(tmp_path))
    if older_python() is None:
        pytest.skip("no Python older than 3.11 on this machine")
    return older_python()


@pytest.mark.parametrize("kind", ["without orjson", "older than 3.11"])
def test_the_command_in_a_python_the_runtime_cannot_run_in_ends_before_its_first_line_with_one_line(tmp_path, kind):
    """Exit 3, as a replayed process that cannot load the runtime ends: the program never ran, and the capture says
    how the run ended. With the capture's --out taken, it is not even started."""
    python = unusable_python(kind, tmp_path)
    program = "import time; time.time(); print('ran')"
    done = run_wop("capture", "--out", str(tmp_path / "c"), "--", python, "-c", program)
    assert done.returncode == 3
    assert "ran" not in done.stdout and "Traceback" not in done.stderr
    refusal = [line for line in done.stderr.splitlines() if line.startswith("wop: cannot record in")]
    assert len(refusal) == 1 and "the program did not run" in refusal[0]
    assert ("orjson" if kind == "without orjson" else "needs Python 3.11 or later") in refusal[0]
    manifest = orjson.loads((tmp_path / "c" / "manifest.json").read_bytes())
    assert manifest["status"] == "error" and manifest["error"] == "exited with code 3"

    taken = run_wop("capture", "--out", str(tmp_path / "c"), "--", python, "-c", program)
    assert taken.returncode == 2 and "already holds a capture" in taken.stderr
    assert "cannot record in" not in taken.stderr


@pytest.mark.parametrize("kind", ["without orjson", "older than 3.11"])
def test_a_python_the_runtime_cannot_run_in_started_by_the_program_runs_unrecorded_with_one_warning(tmp_path, kind):
    """Ending it would change what the program does; the rest of the run is recorded as usual."""
    python = unusable_python(kind, tmp_path)
    program = tmp_path / "program.py"
    program.write_text("import subprocess, sys, time\ntime.time()\n"
                       f"done = subprocess.run([{python!r}, '-c', 'import time; time.time(); print(\"child ran\")'])\n"
                       "print('child exit', done.returncode)\n")
    done = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["child ran", "child exit 0"]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("wop: process")]
    assert len(warnings) == 1 and "is not recorded" in warnings[0] and python in warnings[0], done.stderr
    assert "Traceback" not in done.stderr
    events = [event for event in CaptureReader(tmp_path / "c") if event["type"] == "nondeterministic"]
    assert [event["origin"]["site"]["file"] for event in events] == ["program.py"]


def test_an_orjson_that_does_not_load_stops_recording_with_one_warning_not_a_traceback_in_the_program(tmp_path):
    """Found where the bootstrap looks, but not loadable (built for another Python): known only at the first event."""
    python = without_orjson(tmp_path)
    broken = site_packages(python) / "orjson"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('orjson: built for another Python')\n")
    done = run_wop("capture", "--out", str(tmp_path / "c"), "--", str(python), "-c",
                   "import time, uuid; time.time(); uuid.uuid4(); print('ran')")
    assert done.returncode == 0 and done.stdout == "ran\n"
    assert "Traceback" not in done.stderr
    warnings = [line for line in done.stderr.splitlines() if "built for another Python" in line]
    assert len(warnings) == 1 and "events are not recorded" in warnings[0], done.stderr
