"""The SDK in library use (`wop.capture`) and as a pass-through when nothing records."""

import asyncio
import os
import subprocess
import sys
import uuid
from datetime import datetime

import orjson
import pytest

import openwop_cli as wop
from openwop_cli.format.reader import CaptureReader


@wop.tool
def lookup(order_id: str, verbose: bool = False) -> dict:
    return {"id": order_id, "verbose": verbose}


@wop.tool
def explode(reason: str) -> None:
    raise RuntimeError(reason)


@wop.tool
async def fetch(url: str) -> str:
    await asyncio.sleep(0)
    return f"body of {url}"


class Client:
    @wop.tool
    def search(self, query, *extra, limit=3):
        return [query, *extra][:limit]


def recorded(path) -> list[dict]:
    return [{"type": event["type"], **event["data"]} for event in CaptureReader(path, resolve_blobs=True)]


def test_without_a_session_every_call_is_a_plain_pass_through(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert lookup("A-1") == {"id": "A-1", "verbose": False}
    assert asyncio.run(fetch("u")) == "body of u"
    assert wop.llm_call("openai", "m", {"messages": []}, lambda: 42) == 42
    assert isinstance(wop.now(), datetime) and isinstance(wop.uuid4(), uuid.UUID)
    assert 1 <= wop.randint(1, 3) <= 3 and wop.version("change", 1, 4) == 4
    wop.state.write("c", 1)
    with pytest.raises(RuntimeError, match="boom"):
        explode("boom")
    assert list(tmp_path.iterdir()) == []


def test_capture_block_records_calls_values_and_state_in_order(tmp_path):
    with wop.capture(name="lib", out=tmp_path / "c") as run:
        lookup("A-1", verbose=True)
        Client().search("shoes", "red", limit=1)
        moment = wop.now()
        pick = wop.randint(1, 6, key="die")
        ident = wop.uuid4()
        branch = wop.version("prompt-v2", 1, 2)
        wop.state.write("ticket", {"topic": "shipping"}, reducer="merge", node_id="triage", schema_version=2)
        wop.state.set("_loopbackCount:review", 1)
        body = asyncio.run(fetch("https://example.com"))
    assert run.manifest["status"] == "ok" and run.manifest["name"] == "lib"
    events = recorded(run.path)
    assert [e["type"] for e in events] == [
        "run_start", "tool_call", "tool_result", "tool_call", "tool_result", "nondeterministic", "nondeterministic",
        "nondeterministic", "nondeterministic", "state_mutation", "state_mutation", "tool_call", "tool_result", "run_end"]
    assert events[1]["args"] == {"order_id": "A-1", "verbose": True}
    assert events[3]["args"] == {"query": "shoes", "extra": ["red"], "limit": 1} and events[4]["result"] == ["shoes"]
    assert events[5]["source"] == "clock" and events[5]["value"] == moment.isoformat()
    assert (events[6]["source"], events[6]["key"], events[6]["value"]) == ("rng", "die", pick)
    assert events[7]["value"] == str(ident)
    assert (events[8]["source"], events[8]["key"], events[8]["value"]) == ("version", "prompt-v2", branch)
    assert {k: events[9][k] for k in ("kind", "channel", "value", "reducer", "nodeId", "schemaVersion")} == {
        "kind": "channel", "channel": "ticket", "value": {"topic": "shipping"}, "reducer": "merge",
        "nodeId": "triage", "schemaVersion": 2}
    assert events[10]["kind"] == "variable" and events[10]["key"] == "_loopbackCount:review"
    assert events[12]["result"] == body
    assert events[13]["status"] == "ok"


def test_a_failing_tool_is_recorded_and_its_exception_re_raised(tmp_path):
    with pytest.raises(RuntimeError, match="no stock"):
        with wop.capture(out=tmp_path / "c") as run:
            explode("no stock")
    events = recorded(run.path)
    assert events[2]["ok"] is False and events[2]["error"]["type"] == "RuntimeError"
    assert events[2]["error"]["message"] == "no stock" and events[2]["callId"] == events[1]["callId"]
    assert run.manifest["status"] == "error" and "RuntimeError: no stock" in run.manifest["error"]


def test_llm_call_records_the_recipe_key_stop_reason_and_usage_sync_and_async(tmp_path):
    from openwop_cli.format.cachekey import cache_key

    request = {"messages": [{"role": "user", "content": "hi"}], "temperature": 0.1, "max_tokens": 9,
               "tools": [{"type": "function", "function": {"name": "b", "parameters": {}}},
                         {"type": "function", "function": {"name": "a", "parameters": {}}}]}
    response = {"choices": [{"message": {"content": "yo"}, "finish_reason": "stop"}], "usage": {"total_tokens": 5}}

    async def async_client():
        return {"content": [{"type": "text", "text": "yo"}], "stop_reason": "end_turn", "usage": {"input_tokens": 3}}

    with wop.capture(out=tmp_path / "c") as run:
        assert wop.llm_call("openai", "gpt-x", request, lambda: response) is response
        asyncio.run(wop.llm_call("anthropic", "claude-x", {"system": "be brief", "messages": request["messages"]},
                                 async_client))
    events = recorded(run.path)
    expected_key = cache_key({"provider": "openai", "model": "gpt-x", "messages": request["messages"],
                              "temperature": 0.1, "tools": [{"name": "a", "parameters": {}}, {"name": "b", "parameters": {}}]})
    assert events[1]["cacheKey"] == expected_key and events[1]["request"] == request
    assert (events[2]["stopReason"], events[2]["usage"]) == ("stop", {"total_tokens": 5})
    assert events[2]["callId"] == events[1]["callId"]
    anthropic_key = cache_key({"provider": "anthropic", "model": "claude-x",
                               "messages": [{"role": "system", "content": "be brief"}, *request["messages"]]})
    assert events[3]["cacheKey"] == anthropic_key
    assert (events[4]["stopReason"], events[4]["usage"]) == ("end_turn", {"input_tokens": 3})


def test_sdk_objects_and_odd_values_are_recorded_as_json(tmp_path):
    from dataclasses import dataclass
    from pathlib import PurePosixPath

    @dataclass
    class Order:
        id: str
        tags: frozenset

    class Opaque:
        def __repr__(self):
            return "<Opaque thing>"

    with wop.capture(out=tmp_path / "c") as run:
        wop.nondeterministic("process", "odd", lambda: {"order": Order("A", frozenset({"b", "a"})),
                                                         "path": PurePosixPath("/x/y"), 3: Opaque(), "raw": b"\x00\xff"})
    value = recorded(run.path)[1]["value"]
    assert value["order"] == {"id": "A", "tags": ["a", "b"]}
    assert value["path"] == "/x/y" and value["3"] == "<Opaque thing>"
    assert value["raw"] == b"\x00\xff"


def test_capture_as_a_decorator(tmp_path):
    @wop.capture(name="decorated", out=tmp_path / "c")
    def job():
        return lookup("A-9")

    assert job() == {"id": "A-9", "verbose": False}
    assert [e["type"] for e in recorded(tmp_path / "c")] == ["run_start", "tool_call", "tool_result", "run_end"]


STANDALONE = """
import sys
import openwop_cli as wop
wop.random(key="a")
sys.exit(4)
"""


def test_wop_mode_capture_without_the_cli_writes_and_finalizes_the_capture_itself(tmp_path):
    env = {**os.environ, "WOP_MODE": "capture", "WOP_CAPTURE_DIR": str(tmp_path / "c")}
    done = subprocess.run([sys.executable, "-c", STANDALONE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 4
    manifest = orjson.loads((tmp_path / "c" / "manifest.json").read_bytes())
    assert manifest["status"] == "error" and manifest["error"] == "exited with code 4"
    assert [e["type"] for e in recorded(tmp_path / "c")] == ["run_start", "nondeterministic", "run_end"]


def test_an_unknown_wop_mode_warns_and_runs_unrecorded(tmp_path):
    env = {**os.environ, "WOP_MODE": "record-everything"}
    done = subprocess.run([sys.executable, "-c", "import openwop_cli as wop; print(wop.randint(5, 5))"],
                          env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "5"
    assert "not one of off, capture, replay" in done.stderr


def test_state_writes_return_the_reduced_value_with_or_without_a_recording(tmp_path):
    wop.state.declare("log", "append", max_size=2)
    assert [wop.state.write("log", item) for item in "abc"][-1] == ["b", "c"]
    assert wop.state.get("log") == ["b", "c"] and wop.state.get("nothing", 7) == 7
    with wop.capture(out=tmp_path / "c") as run:
        wop.state.declare("ticket", "merge", default={"open": True})
        assert wop.state.get("ticket") == {"open": True}
        assert wop.state.write("ticket", {"topic": "billing"}) == {"open": True, "topic": "billing"}
        assert wop.state.set("_loopbackCount:review", 2) == 2
        assert wop.state.set("_loopbackCount:review", 3) == 5
        with pytest.raises(ValueError, match="merge takes an object"):
            wop.state.write("ticket", "not an object")
    kinds = [(e["type"], e.get("kind")) for e in recorded(run.path)]
    assert kinds[1:5] == [("state_mutation", "declare"), ("state_mutation", "channel"),
                          ("state_mutation", "variable"), ("state_mutation", "variable")]
    from openwop_cli.channels.fold import fold_events

    assert fold_events(CaptureReader(run.path)).snapshot()["channels"] == {"ticket": {"open": True, "topic": "billing"}}


BIG_INTEGERS = """
import os
import httpx
import openwop_cli as wop

@wop.tool
def double(x):
    return {"twice": x * 2}

@wop.tool
def refuse(x):
    raise ValueError(x, 2**90)

print(double(2**65))
print(wop.state.set("k", 2**70))
print(wop.nondeterministic("s", "k", lambda: 2**80))
print(wop.state.write("log", 2**66, reducer="append"))
print(wop.randint(2**100, 2**101, key="draw") > 2**99)
try:
    refuse(-2**70)
except ValueError as exc:
    print("refused", exc)
answer = httpx.post(os.environ["BASE"] + "/orders", json={"n": 2**70})
print(answer.status_code, answer.json()["path"])
"""


def test_integers_beyond_64_bits_are_recorded_exactly_and_a_strict_replay_hands_them_back(tmp_path):
    from tests.conftest import run_wop
    from tests.fake_provider import FakeProvider

    program = tmp_path / "agent.py"
    program.write_text(BIG_INTEGERS)
    with FakeProvider() as provider:
        env = {"BASE": provider.url}
        captured = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, str(program), env=env,
                           cwd=tmp_path)
    assert captured.returncode == 0, captured.stderr
    assert str(2**66) in captured.stdout and f"refused ({-2**70}, {2**90})" in captured.stdout
    events = recorded(tmp_path / "c")
    assert events[1]["args"] == {"x": {"$bigint": str(2**65)}}
    assert events[3]["value"] == {"$bigint": str(2**70)} and events[4]["value"] == {"$bigint": str(2**80)}
    replayed = run_wop("replay", str(tmp_path / "c"), "--strict", "--json", "--out", str(tmp_path / "r"), env=env,
                       cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    report = orjson.loads(replayed.stdout)
    assert report["score"]["score"] == 1.0 and not report["divergences"] and not report.get("notes")
    assert captured.stdout in replayed.stderr  # the replayed program printed the same ints, not their records
    for command in (("show", str(tmp_path / "c")), ("state", str(tmp_path / "c"), "--json"),
                    ("diff", str(tmp_path / "c"), str(tmp_path / "r")), ("verify", str(tmp_path / "c"))):
        assert run_wop(*command).returncode == 0, command
    state = orjson.loads(run_wop("state", str(tmp_path / "c"), "--json").stdout)
    assert state["channels"]["log"] == [{"$bigint": str(2**66)}]


BIG_COUNTERS = """
import openwop_cli as wop

wop.state.write("c", 2**70, reducer="counter")
wop.state.write("c", 5, reducer="counter")
wop.state.write("halves", 2**63, reducer="counter")
wop.state.write("halves", 2**63, reducer="counter")
wop.state.write("back", 2**70, reducer="counter")
wop.state.write("back", -(2**70) + 7, reducer="counter")
print(wop.state.get("c"), wop.state.get("halves"), wop.state.get("back"))
"""


def test_a_counter_folds_integers_beyond_64_bits(tmp_path):
    """A counter channel written 2**70 (recorded as {"$bigint": digits}), and one whose total goes beyond 64 bits from
    writes within them. Before, the capture and its replay were fine but `wop state` failed the first write with
    validation_error "counter takes a number to add, got dict"."""
    from tests.conftest import run_wop

    program = tmp_path / "agent.py"
    program.write_text(BIG_COUNTERS)
    captured = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, str(program), cwd=tmp_path)
    assert captured.returncode == 0, captured.stderr
    assert captured.stdout.split() == [str(2**70 + 5), str(2**64), "7"]
    done = run_wop("state", str(tmp_path / "c"), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    state = orjson.loads(done.stdout)
    assert state["channels"]["c"] == {"$bigint": str(2**70 + 5)}, state
    assert state["channels"]["halves"] == {"$bigint": str(2**64)} and state["channels"]["back"] == 7, state
    assert "validation_error" not in done.stdout
    at_first = orjson.loads(run_wop("state", str(tmp_path / "c"), "--json", "--at", "1").stdout)
    assert at_first["channels"]["c"] == {"$bigint": str(2**70)}, at_first
    replayed = run_wop("replay", str(tmp_path / "c"), "--strict", "--json", "--out", str(tmp_path / "r"), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert captured.stdout in replayed.stderr
