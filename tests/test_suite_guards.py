"""The suite's own guard: a test that records into the user's real store fails the run; the user's own `wop` in
another shell meanwhile does not."""

import os
import subprocess
import sys

from tests.conftest import ROOT, _listing, written_by_tests


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
    _capture(store, "by-a-test", dict(os.environ))  # this test's own environment: PYTEST_CURRENT_TEST is set
    users = {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}
    _capture(store, "by-the-user", users)
    assert written_by_tests(store, before, _listing(store)) == ["captures/by-a-test"]
    assert written_by_tests(store, _listing(store), _listing(store)) == []
