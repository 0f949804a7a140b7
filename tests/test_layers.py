"""format/ runs inside users' programs: importing it must not pull in the CLI's heavy libraries."""

import subprocess
import sys

CHECK = """
import sys
import openwop_cli
import openwop_cli.format.sink, openwop_cli.format.reader, openwop_cli.format.cachekey, openwop_cli.format.verify
heavy = sorted(name for name in ("typer", "rich", "deepdiff", "click") if name in sys.modules)
print(",".join(heavy))
"""


def test_format_layer_imports_no_typer_rich_or_deepdiff():
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
