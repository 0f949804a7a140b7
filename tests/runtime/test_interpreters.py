"""Which Pythons `wop capture` starts before its capture is ready, and what it records of a Python that is not its own:
real interpreters and virtual environments made here (no network), run under the real `wop`."""

import os
import subprocess
import sys
from pathlib import Path

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
