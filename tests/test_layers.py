"""format/ and runtime/ run inside users' programs: importing them must not pull in the CLI's heavy libraries."""

import subprocess
import sys

CHECK = """
import sys
import openwop_cli
import openwop_cli.format.sink, openwop_cli.format.reader, openwop_cli.format.cachekey, openwop_cli.format.verify
import openwop_cli.runtime.sdk, openwop_cli.runtime.launcher, openwop_cli.runtime.channel, openwop_cli.runtime.bootstrap
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
import openwop_cli.report.plain, openwop_cli.store, openwop_cli.home, openwop_cli.replay.launch
late = ("orjson", "dataclasses", "openwop_cli.replay.batch", "openwop_cli.replay.run", "openwop_cli.runtime.session",
        "openwop_cli.runtime.ambient", "openwop_cli.format.schema")
print(",".join(sorted(name for name in late if name in sys.modules)))
"""


def test_what_wop_replay_imports_before_it_starts_the_program_leaves_the_heavy_modules_for_later():
    """`wop replay` starts the program (gated) before it loads orjson (10 ms with dataclasses and uuid), the replay
    engine or the runtime's session: what it imports first is the program's start-up too (bench_startup)."""
    done = subprocess.run([sys.executable, "-c", BEFORE_THE_PROGRAM_STARTS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
