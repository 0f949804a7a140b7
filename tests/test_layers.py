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
