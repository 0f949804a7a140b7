"""The examples a command's --help prints run as printed on the project's own bundled example (examples/)."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_wop


def help_examples(*command: str) -> list[str]:
    """The lines of the Examples: section of `wop COMMAND --help`."""
    text = run_wop(*command, "--help").stdout
    section = text.split("Examples:", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in section.splitlines() if line.strip()]


def test_every_fork_help_example_runs_as_printed_on_the_bundled_example(tmp_path):
    """Each example after a fresh `wop capture -- python examples/support_agent.py` (which `last` and `support_agent`
    then name): exit 0, or 1 for an --offline edit, which stops at the first call the edit changed."""
    examples = help_examples("fork")
    assert len(examples) >= 4 and all(example.startswith("wop fork ") for example in examples)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    if shutil.which("python") is None:
        pytest.skip("the examples run `python`, which is not on PATH here")
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for example in examples:
        script = (f'wop() {{ {sys.executable} -m openwop_cli "$@"; }}\n'
                  "wop capture -- python examples/support_agent.py >/dev/null 2>&1 || exit 99\n" + example)
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env=env)
        shown = f"{example}\n{done.stdout}{done.stderr}"
        if "--offline" in example:
            assert done.returncode == 1 and "--offline: stopped at seq" in done.stdout, shown
        else:
            assert done.returncode == 0, shown
