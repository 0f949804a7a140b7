"""A capture survives what kills or starves `wop capture`: kill -9 of the parent, a full disk."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from tests.conftest import run_wop, start_capture, wait_for_events

STEADY_PROGRAM = """
    import os, sys, time
    import openwop_cli as wop

    @wop.tool
    def step(index):
        return index

    print(os.getpid(), flush=True)
    for index in range(150):  # ~150 small events over ~3 s, no LLM call to flush them
        step(index)
        time.sleep(0.02)
    print("recorded", flush=True)
    time.sleep(120)
"""


def process_ended(pid: int) -> bool:
    """True once pid has exited (a zombie nobody reaps counts: it runs no more)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to see the child end")
def test_kill_9_of_wop_capture_keeps_what_it_received_and_the_child_ends(tmp_path):
    program = tmp_path / "steady.py"
    program.write_text(textwrap.dedent(STEADY_PROGRAM))
    out = tmp_path / "capture"
    wop = start_capture(program, out)
    try:
        child = int(wop.stdout.readline())
        assert wop.stdout.readline().strip() == "recorded"
        time.sleep(1.0)  # every event was made more than 0.5 s before the kill
        os.kill(wop.pid, signal.SIGKILL)
        wop.wait()
        deadline = time.monotonic() + 30
        while not process_ended(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_ended(child), "the recorded program ran on after wop capture was killed"
    finally:
        if wop.poll() is None:
            os.killpg(wop.pid, signal.SIGKILL)
    events = list(CaptureReader(out))
    assert [event["type"] for event in events] == ["run_start"] + ["tool_call", "tool_result"] * 150
    verified = run_wop("verify", str(out))
    assert verified.returncode == 3
    assert "never finalized" in verified.stdout and "301 events were written, the last is seq 300" in verified.stdout


def test_the_sink_writes_an_event_within_the_flush_interval_without_being_asked(tmp_path):
    sink = CaptureSink(tmp_path / "c", redactor=Redactor("default", ()))
    sink.start({})
    sink.append("tool_call", {"name": "t", "args": {}, "callId": "1"})
    deadline = time.monotonic() + 30
    while not (tmp_path / "c" / "events.jsonl").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert orjson.loads((tmp_path / "c" / "events.jsonl").read_bytes())["data"]["name"] == "t"
    sink.finalize("ok")


def test_a_program_that_records_then_idles_has_its_events_on_disk_while_it_runs(tmp_path):
    program = tmp_path / "idle.py"
    program.write_text("import time, openwop_cli as wop\nwop.tool(lambda: 1)()\nprint('ready', flush=True)\n"
                       "time.sleep(120)\n")
    out = tmp_path / "capture"
    wop = start_capture(program, out)
    try:
        assert wop.stdout.readline().strip() == "ready"
        wait_for_events(out, 3)
        assert [event["type"] for event in CaptureReader(out)] == ["run_start", "tool_call", "tool_result"]
    finally:
        os.killpg(wop.pid, signal.SIGKILL)
        wop.wait()


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs, where this machine lets us mount one (the RLIMIT_FSIZE test in test_capture_command.py
    injects the same failure where it does not)."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_ends_with_lost_in_the_manifest_and_no_torn_line(tmp_path, small_disk):
    program = tmp_path / "chatty.py"
    program.write_text("import openwop_cli as wop\nfor i in range(20000):\n"
                       "    wop.nondeterministic('rng', 'pad', lambda: 'x' * 200)\nprint('program finished')\n")
    out = small_disk / "capture"
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(program), cwd=tmp_path)
    assert done.returncode == 0 and "program finished" in done.stdout
    assert done.stderr.count("warning: capture writes") == 1
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    written = (out / "events.jsonl").read_bytes()
    assert manifest["status"] == "error" and manifest["eventCount"] == 2 + 20000
    assert written.endswith(b"\n") and manifest["lost"]["fromSeq"] == written.count(b"\n") > 0
    assert manifest["lost"]["events"] == manifest["eventCount"] - manifest["lost"]["fromSeq"]
    verified = run_wop("verify", str(out))
    assert verified.returncode == 0 and "lost" in verified.stdout and "No space left" in verified.stdout
    assert not (out / ".wop-reserve").exists()


def test_every_capture_file_is_readable_by_its_owner_only(tmp_path):
    program = tmp_path / "p.py"
    program.write_text("import openwop_cli as wop\nwop.tool(lambda: 'x' * 70_000)()\n")
    out = tmp_path / "capture"
    assert run_wop("capture", "--out", str(out), "--", sys.executable, str(program), cwd=tmp_path).returncode == 0
    html = tmp_path / "report.html"
    assert run_wop("report", str(out), "-o", str(html)).returncode == 0
    modes = {path.relative_to(tmp_path): path.stat().st_mode & 0o777 for path in [out, *out.rglob("*"), html]}
    assert modes[Path("capture")] == 0o700 and modes[Path("report.html")] == 0o600
    assert all(mode in (0o700, 0o600) for mode in modes.values()), modes
    assert any(path.parts[1:2] == ("blobs",) for path in modes)


BURST_THEN_QUIET_PROGRAM = """
    import time
    import openwop_cli as wop

    @wop.tool
    def step(index):
        return {"index": index, "note": "x" * 300}

    for index in range(2000):  # ~1.6 MB: full batches, each sent by the flusher thread
        step(index)
    time.sleep(0.5)
    step("last")  # alone, after the batches: nothing but the flush interval sends it
    print("recorded", flush=True)
    time.sleep(120)
"""


def test_an_event_recorded_after_a_burst_of_batches_is_sent_while_the_program_goes_quiet(tmp_path):
    program = tmp_path / "burst.py"
    program.write_text(textwrap.dedent(BURST_THEN_QUIET_PROGRAM))
    out = tmp_path / "capture"
    wop = start_capture(program, out)
    try:
        assert wop.stdout.readline().strip() == "recorded"
        wait_for_events(out, 1 + 2 * 2001)
    finally:
        os.killpg(wop.pid, signal.SIGKILL)
        wop.wait()
    results = [event["data"]["result"]["index"] for event in CaptureReader(out) if event["type"] == "tool_result"]
    assert results == [*range(2000), "last"]
