"""The replay source over a capture: the spec's strict cursor, and the content-key index."""

from openwop_cli.format.redact import Redactor
from openwop_cli.replay.engine import ReplayEngine
from openwop_cli.replay.keys import KIND_TOOL
from openwop_cli.replay.source import ReplaySource

ORIGIN = {"pid": 1, "thread": "MainThread"}


def capture(tmp_path, calls):
    from openwop_cli.format.sink import CaptureSink

    sink = CaptureSink(tmp_path / "c", redactor=Redactor("default", ()))
    sink.start({})
    for index, (name, args) in enumerate(calls):
        sink.append("tool_call", {"name": name, "args": args, "callId": f"t{index}"}, origin=ORIGIN)
        sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": index}, origin=ORIGIN)
    sink.append("nondeterministic", {"source": "rng", "key": "pick", "value": 4}, origin=ORIGIN)
    sink.finalize("ok")
    return tmp_path / "c"


def test_the_cursor_goes_in_seq_order_and_never_skips(tmp_path):
    source = ReplaySource(capture(tmp_path, [("a", {}), ("b", {})]))
    cursor = source.cursor()
    assert cursor.remaining() == 3 and cursor.peek()["data"]["name"] == "a"
    assert cursor.next("nondeterministic") is None and cursor.remaining() == 3
    assert cursor.next("tool_call")["data"]["name"] == "a"
    assert cursor.next("tool_call")["data"]["name"] == "b"
    assert cursor.next("nondeterministic")["data"]["value"] == 4
    assert cursor.remaining() == 0 and cursor.peek() is None


def test_calls_are_found_by_content_and_the_secret_in_todays_args_still_matches(tmp_path):
    source_dir = capture(tmp_path, [("login", {"user": "u", "password": "hunter2-long"}), ("lookup", {"id": 7})])
    assert b"hunter2-long" not in (source_dir / "events.jsonl").read_bytes()
    engine = ReplayEngine(ReplaySource.for_serving(source_dir))
    match = engine.match(KIND_TOOL, {"name": "login", "args": {"user": "u", "password": "hunter2-long"}})
    assert match.unit == 0 and match.divergence is None
    assert engine.match(KIND_TOOL, {"name": "lookup", "args": {"id": 7}}).unit == 1
