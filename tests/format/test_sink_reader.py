import hashlib
import threading

import orjson
import pytest

from openwop_cli.errors import UsageError
from openwop_cli.format.reader import CaptureReader, read_events
from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from tests.conftest import sample_events, write_capture


def test_events_read_back_equal_what_the_sink_wrote(tmp_path):
    events = sample_events(20)
    capture = write_capture(tmp_path / "c", events, name="round-trip")
    read = list(read_events(capture))
    assert [(e["type"], e["data"]) for e in read] == events
    assert [e["seq"] for e in read] == list(range(len(events)))


def test_manifest_events_hash_is_the_sha256_of_the_events_file(tmp_path):
    capture = write_capture(tmp_path / "c", sample_events(50))
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    assert manifest["integrity"]["eventsHash"] == hashlib.sha256((capture / "events.jsonl").read_bytes()).hexdigest()
    assert manifest["status"] == "ok"
    assert manifest["eventCount"] == 102


def test_start_writes_an_incomplete_manifest_that_a_crash_leaves_behind(tmp_path):
    capture = write_capture(tmp_path / "c", sample_events(3), finalize=False)
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    assert manifest["status"] == "incomplete"
    reader = CaptureReader(capture)
    assert len(list(reader)) == 8
    assert [p.kind for p in reader.problems] == ["incomplete"]


def test_sink_refuses_a_directory_that_already_holds_a_capture(tmp_path):
    capture = write_capture(tmp_path / "c", sample_events(1))
    before = (capture / "events.jsonl").read_bytes()
    with pytest.raises(UsageError, match="already holds a capture"):
        CaptureSink(capture).start()
    assert (capture / "events.jsonl").read_bytes() == before


def test_concurrent_appends_get_unique_contiguous_seqs(tmp_path):
    sink = CaptureSink(tmp_path / "c", redactor=Redactor("default", ()), buffer_bytes=512)
    sink.start()

    def work(worker):
        for index in range(200):
            sink.append("tool_call", {"name": "t", "args": {"w": worker, "i": index}, "callId": f"{worker}-{index}"})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sink.finalize()
    read = list(read_events(tmp_path / "c"))
    assert [e["seq"] for e in read] == list(range(1600))
    assert len({e["data"]["callId"] for e in read}) == 1600


def test_large_and_binary_values_go_to_blobs_and_resolve_transparently(tmp_path):
    big = "word " * 20_000
    capture = write_capture(tmp_path / "c", [("tool_result", {"callId": "1", "ok": True, "result": big, "raw": b"\x00\xff"})])
    line = (capture / "events.jsonl").read_bytes()
    assert b"$blob" in line and len(line) < 1000
    [event] = read_events(capture)
    assert event["data"]["result"] == big
    assert event["data"]["raw"] == b"\x00\xff"


DISK_FULL_SCRIPT = """
import resource, signal, sys
from pathlib import Path
from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
warnings = []
sink = CaptureSink(Path(sys.argv[1]), redactor=Redactor("default", ()), buffer_bytes=1, on_warning=warnings.append)
sink.start()
resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))  # files may not grow past 3000 bytes: a full disk
for index in range(40):
    sink.append("tool_call", {"name": "t", "args": {"i": index}, "callId": str(index)})
sink.finalize("ok")
print(len(warnings), warnings[0] if warnings else "")
print("program still running")
"""


def test_disk_failure_keeps_the_program_running_and_the_manifest_says_what_was_lost(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", DISK_FULL_SCRIPT, str(tmp_path / "c")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    count, warning = done.stdout.splitlines()[0].split(" ", 1)
    assert count == "1" and "failed at seq" in warning
    assert "program still running" in done.stdout
    manifest = orjson.loads((tmp_path / "c" / "manifest.json").read_bytes())
    assert manifest["status"] == "error"
    lost = manifest["lost"]
    assert lost["fromSeq"] > 0 and lost["events"] == 40 - lost["fromSeq"]
    assert "events were not written" in manifest["error"]


def test_spliced_lines_are_the_lines_append_would_write(tmp_path):
    data = {"name": "lookup", "args": {"id": 1, "text": "ünï"}, "callId": "t1"}
    origin = {"pid": 7, "thread": "MainThread"}
    sink = CaptureSink(tmp_path / "c", redactor=Redactor("default", ()))
    sink.start({})
    sink.append("tool_call", data, ts=5, origin=origin, source_seq=3)
    sink.append_raw("tool_call", orjson.dumps(data), ts=5, origin_json=orjson.dumps(origin), source_seq=3)
    sink.append_raw("tool_call", orjson.dumps({**data, "api_key": "abcdef123456"}), ts=6)
    sink.finalize("ok")
    first, second, third = (tmp_path / "c" / "events.jsonl").read_bytes().splitlines()
    assert first.replace(b'"seq":0', b'"seq":1') == second
    assert b"abcdef123456" not in third and orjson.loads(third)["data"]["api_key"] == "***REDACTED***"
