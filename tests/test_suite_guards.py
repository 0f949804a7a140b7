"""The suite's own guard: a test that records into the user's real store fails the run; the user's own `wop` in
another shell meanwhile does not."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, SUITE_MARK, _listing, written_by_tests


def _capture(store, name, env):
    """A real `wop capture` into store/captures/NAME, run with env."""
    out = store / "captures" / name
    done = subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--out", str(out), "--", sys.executable,
                           "-c", "print('hi')"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def test_the_real_store_guard_tells_a_test_from_the_user(tmp_path):
    store = tmp_path / "store"
    (store / "captures").mkdir(parents=True)
    before = _listing(store)
    _capture(store, "by-a-test", dict(os.environ))  # this test's own environment: this run's SUITE_MARK is set
    users = {name: value for name, value in os.environ.items() if name not in ("PYTEST_CURRENT_TEST", SUITE_MARK)}
    _capture(store, "by-the-user", users)
    _capture(store, "by-the-users-own-tests", {**users, "PYTEST_CURRENT_TEST": "test_theirs.py::test_x (call)"})
    _capture(store, "by-another-run-of-this-suite", {**users, "WOP_TEST_SUITE_0123456789AB": "1"})
    assert written_by_tests(store, before, _listing(store)) == ["captures/by-a-test"]
    assert written_by_tests(store, _listing(store), _listing(store)) == []


def test_a_capture_whose_first_line_is_not_an_event_is_not_blamed_on_a_test(tmp_path):
    store = tmp_path / "store"
    for name, first in (("list", b"[1]\n"), ("text", b"not json\n"), ("env-text", b'{"data": {"env": "WOP_T"}}\n'),
                        ("empty", b"")):
        (store / "captures" / name).mkdir(parents=True)
        (store / "captures" / name / "events.jsonl").write_bytes(first)
    assert written_by_tests(store, [], _listing(store), mark="WOP_T") == []


class _Read:
    """A directory's entries as os.scandir gave them, read before anything else changed the directory."""

    def __init__(self, entries):
        self._entries = iter(entries)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._entries)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def close(self):
        pass


def test_a_capture_the_user_removes_while_the_guard_lists_the_store_is_left_out(tmp_path, monkeypatch):
    """`wop rm` in another shell between the guard reading captures/ and reading a capture in it: the capture is left
    out of the listing, not a FileNotFoundError that fails the whole run."""
    store = tmp_path / "store"
    for name in ("kept", "removed"):
        (store / "captures" / name / "blobs").mkdir(parents=True)
        (store / "captures" / name / "events.jsonl").write_text("{}\n")
    real_scandir = os.scandir

    def scandir_then_the_user_removes_one(path):
        entries = list(real_scandir(path))
        if not isinstance(path, int) and Path(path) == store / "captures":
            shutil.rmtree(store / "captures" / "removed")
        return _Read(entries)

    monkeypatch.setattr(os, "scandir", scandir_then_the_user_removes_one)
    listed = [name for name, _ in _listing(store)]
    assert "captures/kept/events.jsonl" in listed
    assert not [name for name in listed if name.startswith("captures/removed")]
