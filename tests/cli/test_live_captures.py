"""A capture being written is not deleted under its writer (`wop rm`, `wop gc`), a writer whose capture was deleted
anyway says so instead of "ok", and a store without the room a capture reserves is refused before the program runs."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from openwop_cli.format.sink import RESERVE_BYTES
from tests.conftest import run_wop

WAITING = """
import pathlib, sys, time
import openwop_cli as wop

@wop.tool
def step():
    return 1

step()
go = pathlib.Path(sys.argv[1])
print("started", flush=True)
while not go.exists():
    time.sleep(0.02)
step()
print("done", flush=True)
"""


def start_waiting_capture(tmp_path: Path, out: Path) -> tuple[subprocess.Popen, Path]:
    """`wop capture` of a program that waits for a file: (the running wop, the file that lets it finish)."""
    program = tmp_path / "waiting.py"
    program.write_text(WAITING)
    go = tmp_path / "go"
    wop = subprocess.Popen([sys.executable, "-m", "openwop_cli", "capture", "--out", str(out), "--", sys.executable,
                            str(program), str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True, env={**os.environ, "NO_COLOR": "1"})
    assert wop.stdout.readline().strip() == "started"
    return wop, go


def test_rm_and_gc_refuse_a_capture_while_wop_capture_writes_it(tmp_path, wop_home):
    out = wop_home / "captures" / "live"
    wop, go = start_waiting_capture(tmp_path, out)
    try:
        removed = run_wop("rm", "--yes", str(out))
        assert removed.returncode == 2 and "a running wop is writing it" in removed.stderr
        collected = run_wop("gc", "--older-than", "0", "--yes", "--json")
        report = orjson.loads(collected.stdout)
        assert report["captures"] == [] and "a running wop is writing it" in report["skipped"][str(out)]
        assert (out / "events.jsonl").exists()
        go.touch()
        stdout, stderr = wop.communicate(timeout=60)
    finally:
        if wop.poll() is None:
            os.killpg(wop.pid, signal.SIGKILL)
    assert wop.returncode == 0 and "done" in stdout and " ok" in stderr
    assert not (out / ".wop-lock").exists()
    assert run_wop("rm", "--yes", str(out)).returncode == 0 and not out.exists()


def test_the_lock_of_a_killed_writer_does_not_keep_its_capture(tmp_path, wop_home):
    out = wop_home / "captures" / "crashed"
    wop, go = start_waiting_capture(tmp_path, out)
    os.killpg(wop.pid, signal.SIGKILL)
    wop.wait()
    assert (out / ".wop-lock").exists()  # left behind, and held by nobody
    removed = run_wop("rm", "--yes", str(out))
    assert removed.returncode == 0, removed.stderr
    assert not out.exists()


def test_a_capture_deleted_under_wop_capture_is_not_reported_ok(tmp_path):
    out = tmp_path / "doomed"
    wop, go = start_waiting_capture(tmp_path, out)
    try:
        shutil.rmtree(out)
        go.touch()
        stdout, stderr = wop.communicate(timeout=60)
    finally:
        if wop.poll() is None:
            os.killpg(wop.pid, signal.SIGKILL)
    assert "done" in stdout
    assert wop.returncode == 3, stderr
    assert "deleted while wop was writing it" in stderr and "captured" not in stderr
    assert not out.exists()


@pytest.fixture
def small_disk(tmp_path):
    """A 200 KiB tmpfs (less than the 256 KiB a capture reserves), unmounted after the test; root only."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "small"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_store_without_room_for_the_reserve_is_refused_before_the_program_runs(tmp_path, small_disk):
    assert shutil.disk_usage(small_disk).free < RESERVE_BYTES
    marker = tmp_path / "ran"
    done = run_wop("capture", "--out", str(small_disk / "c"), "--", sys.executable, "-c",
                   f"open({str(marker)!r}, 'w').close()", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "less free than the 256 KiB" in done.stderr and "--out" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not marker.exists() and not (small_disk / "c").exists()
    in_store = run_wop("capture", "--", sys.executable, "-c", "print('x')", env={"WOP_HOME": str(small_disk)},
                       cwd=tmp_path)
    assert in_store.returncode == 2 and "x" not in in_store.stdout
    assert not any((small_disk / "captures").iterdir())
