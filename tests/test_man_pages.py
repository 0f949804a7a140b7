"""man/ pages: generated from the command line's help, never out of date, rendered by man."""

import importlib.util
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, run_wop


def generator():
    spec = importlib.util.spec_from_file_location("make_man", ROOT / "man" / "make_man.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_page_is_up_to_date_with_the_help():
    expected = generator().pages()
    on_disk = {path.name: path.read_text(encoding="utf-8") for path in (ROOT / "man").glob("*.1")}
    stale = sorted(name for name in expected if on_disk.get(name) != expected[name])
    extra = sorted(set(on_disk) - set(expected))
    assert not stale and not extra, f"run `python man/make_man.py` (stale: {stale}, no longer a command: {extra})"
    assert {"wop.1", "wop-capture.1", "wop-replay.1", "wop-diff.1"} <= set(expected)


def test_man_renders_the_replay_page():
    if shutil.which("man") is None or shutil.which("groff") is None:
        pytest.skip("man/groff are not installed here (CI installs them)")
    done = subprocess.run(["man", "-l", str(ROOT / "man" / "wop-replay.1")], capture_output=True, text=True,
                          env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin", "MANPAGER": "cat", "PAGER": "cat"})
    assert done.returncode == 0, done.stderr
    for heading in ("NAME", "SYNOPSIS", "OPTIONS", "EXIT STATUS"):
        assert heading in done.stdout
    assert "--strict, --lenient" in done.stdout and "--junit FILE" in done.stdout


def test_shell_completion_is_offered():
    assert "--install-completion" in run_wop("--help").stdout
