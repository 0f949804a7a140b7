"""A newcomer's walk through the README: the Quick start, then every `sh` command block in order, in one shell,
from a fresh WOP_HOME and a fresh copy of the bundled examples and fixtures.

Each command must exit with the code the README gives it in a trailing `# exit N` comment (0 when it says
none). What this suite cannot run is left out and said here: `pip install` (the environment the suite runs in
already has it) and the Quick start's test command (this suite is that command). Blocks fenced `console` show
commands for a project of your own (your pytest suite, a Phoenix endpoint, a cassette, a node program) and are
not run.
"""

import os
import re
import shutil
import subprocess
import sys

from tests.conftest import ROOT

FENCED_SH = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
EXIT_COMMENT = re.compile(r"^\s*exit (\d+)")


def readme_commands() -> list[tuple[str, int]]:
    """(command, expected exit code) for every line of every `sh` block, in README order."""
    commands = []
    for block in FENCED_SH.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        for line in block.splitlines():
            command, _, comment = line.partition("  #")
            command = _runnable(command.strip())
            if command:
                expected = EXIT_COMMENT.match(comment)
                commands.append((command, int(expected.group(1)) if expected else 0))
    return commands


def _runnable(command: str) -> str:
    """The command without what this suite cannot run (see the module docstring)."""
    if command.startswith("#"):
        return ""
    parts = [part.strip() for part in command.split("&&")]
    kept = [part for part in parts if not part.startswith("pip install") and "-m pytest" not in part]
    return " && ".join(kept)


def test_every_readme_command_block_runs_in_order_with_the_exit_code_it_promises(tmp_path):
    commands = readme_commands()
    assert commands[0][0] == "wop capture -- python3 examples/support_agent.py && wop show last"
    assert len(commands) > 20
    work = tmp_path / "walk"
    for name in ("examples", "fixtures"):
        shutil.copytree(ROOT / name, work / name)
    script = ["set -u", f"wop() {{ {sys.executable} -m openwop_cli \"$@\"; }}"]
    for number, (command, expected) in enumerate(commands, start=1):
        quoted = command.replace("'", "")
        script.append(f"{{ {command}; }} </dev/null >>out.log 2>&1; code=$?")
        script.append(f"if [ $code -ne {expected} ]; then echo 'command {number} exited '$code', the README says "
                      f"{expected}: {quoted}'; tail -n 25 out.log; exit 1; fi")
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120", "PAGER": "cat",
                               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    assert done.returncode == 0, done.stdout + done.stderr
