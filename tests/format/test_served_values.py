"""Every value a replay hands the program is checked by format/ first: a capture that passes `verify` never crashes
wop's code inside the replayed program, and one holding a value a replay cannot serve fails `verify` and the replay
with exit 3, naming its seq and field."""

import re
import sys

import orjson
import pytest

from tests.conftest import run_wop, write_capture
from tests.format.test_hostile_captures import forge, lines_of

ANSWER = {"provider": "openai", "model": "m", "callId": "llm1", "ok": True, "status": 200,
          "headers": {"content-type": "text/event-stream"}, "streamFormat": "sse",
          "stream": [{"data": '{"choices":[{"delta":{"content":"hi"}}]}'}, {"data": "[DONE]"}],
          "response": {"text": "hi"}}
EVENTS = [
    ("run_start", {"argv": ["python", "agent.py"]}),
    ("nondeterministic", {"source": "clock", "key": "time.time", "value": 1763875573.5, "ambient": True}),
    ("llm_request", {"provider": "openai", "model": "m", "callId": "llm1", "request": {"messages": []}}),
    ("llm_response", ANSWER),
    ("tool_call", {"name": "http", "callId": "h2", "args": {"method": "GET", "url": "http://x/"}}),
    ("tool_result", {"callId": "h2", "ok": True, "result": {"status": 200, "headers": {"a": "b"}, "body": "ok"}}),
    ("tool_call", {"name": "lookup", "callId": "t3", "args": {}}),
    ("tool_result", {"callId": "t3", "ok": True, "result": {"status": "shipped", "headers": ["any", "value"]}}),
    ("run_end", {"exitCode": 0, "status": "ok"}),
]


@pytest.mark.parametrize(("seq", "path", "value", "named"), [
    (1, ["value"], -1, "data.value"),
    (3, ["stream", 0, "data"], 5, "data.stream[0].data"),
    (3, ["stream", 1], "data: x", "data.stream[1]"),
    (3, ["headers"], [["content-type", "text/event-stream"]], "data.headers"),
    (3, ["headers", "content-type"], 7, "data.headers.content-type"),
    (3, ["status"], "200", "data.status"),
    (5, ["result", "headers"], [["a", "b"]], "data.result.headers"),
    (5, ["result", "status"], -1, "data.result.status"),
])
def test_a_value_a_replay_cannot_serve_fails_verify_and_the_replay_with_exit_3(tmp_path, seq, path, value, named):
    capture = write_capture(tmp_path / "c", EVENTS, program={"argv": [sys.executable, "-c", "pass"]})
    lines = lines_of(capture)
    event = orjson.loads(lines[seq])
    target = event["data"]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    lines[seq] = orjson.dumps(event) + b"\n"
    forge(capture, lines)
    verify = run_wop("verify", str(capture))
    assert verify.returncode == 3 and f"seq {seq}: field {named}" in verify.stdout, verify.stdout
    replay = run_wop("replay", str(capture), "--out", str(tmp_path / "r"), "--", sys.executable, "-c", "pass")
    assert replay.returncode == 3 and f"seq {seq}: field {named}" in replay.stderr, replay.stderr
    assert "Traceback" not in replay.stderr


def test_what_a_user_tool_returns_is_served_as_it_was_whatever_its_shape(tmp_path):
    capture = write_capture(tmp_path / "c", EVENTS)
    assert run_wop("verify", str(capture)).returncode == 0


@pytest.mark.parametrize("damage", ["changed", "missing", "unknown encoding"])
def test_a_blob_verify_rejects_is_never_served(tmp_path, damage):
    """A recorded answer kept in a blob that was changed, removed or names an encoding wop does not write: the replay
    refuses the capture (exit 3 naming the seq) before the program runs, never serving it after a warning."""
    program = tmp_path / "agent.py"
    program.write_text("import openwop_cli as wop\n@wop.tool\ndef big():\n    return 'x' * 100000\n"
                       "print(len(big()))\n")
    done = run_wop("capture", "--no-output", "--out", str(tmp_path / "source"), "--", sys.executable, str(program),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = tmp_path / "source" / "events.jsonl"
    [result] = [orjson.loads(line) for line in events.read_bytes().splitlines() if b'"tool_result"' in line]
    reference = result["data"]["result"]
    blob = tmp_path / "source" / "blobs" / "sha256" / reference["$blob"][7:9] / reference["$blob"][7:]
    if damage == "changed":
        blob.chmod(0o600)
        blob.write_bytes(b'"tampered"')
    elif damage == "missing":
        blob.unlink()
    else:
        lines = (tmp_path / "source" / "events.jsonl").read_bytes().splitlines(keepends=True)
        forge(tmp_path / "source", [re.sub(rb'"encoding":"[\w-]+"', b'"encoding":"utf-16"', line) for line in lines])
    replayed = run_wop("replay", str(tmp_path / "source"), "--out", str(tmp_path / "replay"), cwd=tmp_path)
    assert replayed.returncode == 3, replayed.stdout + replayed.stderr
    assert f"seq {result['seq']}" in replayed.stderr and "Traceback" not in replayed.stderr
    assert "100000" not in replayed.stdout
