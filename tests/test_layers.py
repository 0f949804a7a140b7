"""format/ and runtime/ run inside users' programs: importing them must not pull in the CLI's heavy libraries."""

import subprocess
import sys

from tests.conftest import ROOT

CHECK = """
import sys
import openwop_cli
import openwop_cli.format.sink, openwop_cli.format.reader, openwop_cli.format.cachekey, openwop_cli.format.verify
import openwop_cli.runtime.sdk, openwop_cli.host.launcher, openwop_cli.runtime.sender, openwop_cli.runtime.bootstrap
openwop_cli.tool(lambda: None)
heavy = sorted(name for name in ("typer", "rich", "deepdiff", "click") if name in sys.modules)
print(",".join(heavy))
"""


def test_format_and_runtime_layers_import_no_typer_rich_or_deepdiff():
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


BEFORE_THE_PROGRAM_STARTS = """
import sys
import openwop_cli.cli.entry, openwop_cli.cli.replay_action, openwop_cli.config, openwop_cli.replay.controls
import openwop_cli.report.plain, openwop_cli.store, openwop_cli.home, openwop_cli.host.replay_launch
late = ("orjson", "dataclasses", "openwop_cli.host.replay_batch", "openwop_cli.host.run_replay", "openwop_cli.runtime.session",
        "openwop_cli.runtime.ambient", "openwop_cli.format.schema")
print(",".join(sorted(name for name in late if name in sys.modules)))
"""


def test_what_wop_replay_imports_before_it_starts_the_program_leaves_the_heavy_modules_for_later():
    """`wop replay` starts the program (gated) before it loads orjson (10 ms with dataclasses and uuid), the replay
    engine or the runtime's session: what it imports first is the program's start-up too (bench_startup)."""
    done = subprocess.run([sys.executable, "-c", BEFORE_THE_PROGRAM_STARTS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_the_import_contract_holds_with_imports_inside_functions_counted():
    """pyproject's import-linter contract: each layer imports only those below it (program side never the host side),
    and what runs inside a recorded program loads no CLI library."""
    done = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()", "--no-cache"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_the_independent_check_finds_no_cycle_and_no_upward_import():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_imports.py")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "no cycle, none upward" in done.stdout, done.stdout


def test_the_independent_check_sees_an_import_inside_a_function(tmp_path):
    """The check is not blind to what the contract is about: a function-level import that points up, in a copy of the
    package, makes it fail and name the import."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "openwop_cli", copy / "openwop_cli", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    target = copy / "openwop_cli" / "format" / "events.py"
    target.write_text(target.read_text() + "\n\ndef _late():\n    from openwop_cli.host import launcher\n")
    done = subprocess.run([sys.executable, str(copy / "scripts" / "check_imports.py")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert "upward import: openwop_cli.format.events -> openwop_cli.host.launcher" in done.stdout
