"""websockets recorded frame by frame: the asyncio, sync and legacy clients and openai's realtime client against a
fake server; two replays with the server gone exit 0, and a changed outgoing message diverges at that frame."""

import os
import subprocess
import sys

import orjson
import pytest

from tests.conftest import requires, run_wop
from tests.programs import OFFLINE_SDKS, capture, events, replay, unrecorded_connections

pytest.importorskip("websockets")

from tests.fake_websocket import FakeWebsocketServer, RedirectingWebsocketServer  # noqa: E402 (needs websockets)

ASYNC_ECHO = """
import asyncio, json, os
from websockets.asyncio.client import connect

async def main():
    async with connect(os.environ["WS"]) as ws:
        print(await ws.recv())
        await ws.send(os.environ.get("MESSAGE", "where is A-1?"))
        print(await ws.recv())
        await ws.send(json.dumps({"order": "A-2"}))
        print(await ws.recv())
        await ws.send(b"\\x01\\x02\\x03")
        print(await ws.recv())
        await ws.send("bye")
        try:
            await ws.recv()
        except Exception as exc:
            print(type(exc).__name__, ws.close_code, ws.close_reason)

asyncio.run(main())
"""

LEGACY_ECHO = ASYNC_ECHO.replace("from websockets.asyncio.client import connect",
                                 "from websockets.legacy.client import connect")

SYNC_ECHO = """
import os
from websockets.sync.client import connect

with connect(os.environ["WS"]) as ws:
    print(ws.recv())
    ws.send(os.environ.get("MESSAGE", "where is A-1?"))
    print(ws.recv())
    ws.send(["frag", "mented"])
    print(ws.recv())
print("closed", ws.close_code)
"""

REALTIME = """
import asyncio, os
from openai import AsyncOpenAI

async def main():
    client = AsyncOpenAI(api_key="sk-test-0123456789", base_url=os.environ["BASE"])
    async with client.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
        await connection.conversation.item.create(item={"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": os.environ.get("MESSAGE", "where is A-1?")}]})
        await connection.response.create()
        text = []
        async for event in connection:
            if event.type == "session.created":
                print("session", event.session.id)
            elif event.type == "response.output_text.delta":
                text.append(event.delta)
            elif event.type == "response.done":
                break
        print("".join(text).strip())

asyncio.run(main())
"""


def round_trip(tmp_path, script: str, changed_path: str, frame: int) -> list[dict]:
    """Capture against the fake server, replay twice with it gone, then with MESSAGE changed: the websocket calls."""
    with FakeWebsocketServer() as server:
        env = {"WS": server.url, "BASE": server.url.replace("ws://", "http://") + "/v1"}
        done, source = capture(tmp_path, script, env)
    assert done.returncode == 0, done.stderr
    assert not unrecorded_connections(source), "the connection went unrecorded"
    for attempt in range(2):
        replayed, report = replay(tmp_path, source, env=env, name=f"replay{attempt}")
        assert replayed.returncode == 0 and not report["divergences"], replayed.stderr
        assert done.stdout in replayed.stderr
    changed, report = replay(tmp_path, source, env={**env, "MESSAGE": "where is B-2?"}, name="changed")
    assert changed.returncode == 1, changed.stderr
    first = report["divergences"][0]
    assert (first["code"], first["eventType"], first["jsonPath"]) == ("event_payload_mismatch", "tool_call", changed_path)
    assert first["expected"]["data"]["args"]["frame"] == frame
    calls = [event["data"] for event in events(source, "tool_call")]
    assert {call["name"] for call in calls} == {"websocket"}
    return [(call, result["data"]) for call, result in zip(calls, events(source, "tool_result"))]


def test_an_asyncio_echo_agent_records_text_json_binary_and_the_close_code(tmp_path):
    calls = round_trip(tmp_path, ASYNC_ECHO, "$.args.text", 1)
    (opening, opened), *sent = calls
    assert opening["args"]["url"].startswith("ws://127.0.0.1:") and opened["result"]["status"] == 101
    assert opened["result"]["received"] == [{"text": '{"type": "hello"}'}]  # pushed before the first send
    assert "authorization" not in opening["headers"]
    assert [{key: value for key, value in call["args"].items() if key != "url"} for call, _ in sent] == [
        {"frame": 1, "text": "where is A-1?"}, {"frame": 2, "json": {"order": "A-2"}},
        {"frame": 3, "binary": b"\x01\x02\x03"}, {"frame": 4, "text": "bye"}]
    assert [result["result"]["received"] for _, result in sent] == [
        [{"text": "echo: where is A-1?"}], [{"text": '{"echo": {"order": "A-2"}}'}], [{"binary": b"\x03\x02\x01"}],
        [{"close": {"code": 4000, "reason": "done"}}]]


def test_the_legacy_client_records_and_replays_the_events_of_the_asyncio_client(tmp_path):
    legacy = round_trip(tmp_path, LEGACY_ECHO, "$.args.text", 1)
    with FakeWebsocketServer() as server:
        done, source = capture(tmp_path, ASYNC_ECHO, {"WS": server.url}, name="asyncio")
    assert done.returncode == 0, done.stderr
    today = [(event["data"], result["data"]) for event, result in zip(events(source, "tool_call"),
                                                                       events(source, "tool_result"))]
    assert [comparable(pair) for pair in legacy] == [comparable(pair) for pair in today]


def test_the_legacy_client_redirected_to_another_server_records_and_replays_both_openings(tmp_path):
    with FakeWebsocketServer() as target, RedirectingWebsocketServer(target.url + "/moved") as server:
        done, source = capture(tmp_path, LEGACY_ECHO, {"WS": server.url})
    assert done.returncode == 0, done.stderr
    assert not unrecorded_connections(source), "the connection after the redirect went unrecorded"
    openings = [event["data"]["args"]["url"] for event in events(source, "tool_call")[:2]]
    assert openings == [server.url + "/", target.url + "/moved"]
    replayed, report = replay(tmp_path, source, env={"WS": server.url})
    assert replayed.returncode == 0 and not report["divergences"], replayed.stderr
    assert done.stdout in replayed.stderr


def comparable(pair: tuple[dict, dict]) -> tuple[dict, dict]:
    """A websocket call and its result without what changes from connection to connection (port, date)."""
    call, result = pair
    args = {key: value for key, value in call["args"].items() if key != "url"}
    headers = {key: value for key, value in call.get("headers", {}).items() if key != "host"}
    answer = {key: value for key, value in result["result"].items() if key != "headers"}
    return {**call, "args": args, "headers": headers}, {**result, "result": answer}


IN_PROCESS = """
import runpy
import openwop_cli as wop
with wop.capture(out="own"):
    runpy.run_path("agent.py", run_name="__main__")
"""


def test_the_frames_are_recorded_alike_by_wop_capture_and_by_the_program_itself(tmp_path):
    """`wop capture` builds the events of the frames a program sends it raw; `wop.capture` in the program builds them
    there: the same events."""
    with FakeWebsocketServer() as server:
        done, source = capture(tmp_path, ASYNC_ECHO, {"WS": server.url}, name="wop")
        assert done.returncode == 0, done.stderr
        own = subprocess.run([sys.executable, "-c", IN_PROCESS], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120, env={**os.environ, **OFFLINE_SDKS, "WS": server.url})
        assert own.returncode == 0, own.stderr
    built_by_wop, built_in_process = websocket_events(source), websocket_events(tmp_path / "own")
    assert len(built_by_wop) == 2 * 5 and built_by_wop == built_in_process


def websocket_events(capture_dir) -> list[tuple]:
    """The capture's websocket calls and results as (type, data, thread, site), the server's date header aside."""
    found = [event for event in events(capture_dir) if event["type"] in ("tool_call", "tool_result")]
    for event in found:
        (event["data"].get("result") or {}).get("headers", {}).pop("date", None)
    return [(event["type"], event["data"], event["origin"]["thread"], event["origin"].get("site")) for event in found]


def test_a_sync_client_records_a_fragmented_message_as_one_and_its_own_close(tmp_path):
    calls = round_trip(tmp_path, SYNC_ECHO, "$.args.text", 1)
    assert [call["args"].get("text") for call, _ in calls[1:3]] == ["where is A-1?", "fragmented"]
    close, closed = calls[3]
    assert close["args"]["close"] == {"code": 1000, "reason": ""} and closed["result"]["received"] == [
        {"close": {"code": 1000, "reason": ""}}]


def test_the_openai_realtime_client_diverges_at_the_changed_events_json_path(tmp_path):
    requires("openai")
    calls = round_trip(tmp_path, REALTIME, "$.args.json.item.content[0].text", 2)
    assert "/v1/realtime?model=gpt-realtime" in calls[0][0]["args"]["url"]
    assert [call["args"]["json"]["type"] for call, _ in calls[1:4]] == [
        "session.update", "conversation.item.create", "response.create"]


def test_the_proxy_says_it_cannot_tunnel_a_websocket_instead_of_forwarding_it_stripped():
    import http.client

    from openwop_cli.host.proxy import UPGRADE_REFUSED, LLMProxy
    from openwop_cli.runtime.session import AppendRecorder, Session

    recorded = []
    proxy = LLMProxy(Session(AppendRecorder(lambda *args, **kwargs: recorded.append(args))), {})
    proxy.start()
    try:
        connection = http.client.HTTPConnection(proxy.url.removeprefix("http://"))
        connection.request("GET", f"/{proxy.token}/openai/v1/realtime?model=gpt-realtime", headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        answer = connection.getresponse()
        assert (answer.status, answer.read().decode()) == (501, UPGRADE_REFUSED)
    finally:
        proxy.stop()
    assert not recorded


def fork(tmp_path, source, at: int, env: dict, name: str):
    """`wop fork --from-seq at --json` of the echo agent; returns (process, report)."""
    done = run_wop("fork", str(source), "--from-seq", str(at), "--json", "--out", str(tmp_path / name),
                   env={**OFFLINE_SDKS, **env}, cwd=tmp_path)
    return done, orjson.loads(done.stdout) if done.stdout.startswith("{") else None


def test_a_fork_from_before_the_opening_runs_the_connection_live_on_the_real_server(tmp_path):
    with FakeWebsocketServer() as server:
        done, source = capture(tmp_path, ASYNC_ECHO, {"WS": server.url})
        assert done.returncode == 0, done.stderr
        opening = events(source, "tool_call")[0]["seq"]
        forked, report = fork(tmp_path, source, opening, {"WS": server.url, "MESSAGE": "where is B-2?"}, "fork")
        assert forked.returncode == 0 and not report["notes"], forked.stderr
        assert "echo: where is B-2?" in forked.stderr  # the live server's answer, not the capture's
        assert server.received[-4] == "where is B-2?"
    calls = [event["data"] for event in events(tmp_path / "fork", "tool_call")]
    results = [event["data"]["result"] for event in events(tmp_path / "fork", "tool_result")]
    assert [call["args"].get("frame") for call in calls] == [None, 1, 2, 3, 4]  # one opening
    assert results[0]["status"] == 101 and results[0]["received"] == [{"text": '{"type": "hello"}'}]
    assert results[1]["received"] == [{"text": "echo: where is B-2?"}]


@pytest.mark.parametrize("script", [ASYNC_ECHO, SYNC_ECHO, LEGACY_ECHO], ids=["asyncio", "sync", "legacy"])
def test_a_fork_past_a_served_connections_opening_closes_it_naming_it_never_hangs(tmp_path, script):
    with FakeWebsocketServer() as server:
        done, source = capture(tmp_path, script, {"WS": server.url})
        assert done.returncode == 0, done.stderr
        opening, first, second = (event["seq"] for event in events(source, "tool_call")[:3])
        received = len(server.received)
        forked, report = fork(tmp_path, source, second, {"WS": server.url}, "fork")
        assert len(server.received) == received, "the fork sent a frame of the served connection to the server"
    assert forked.returncode == 1 and report is not None, forked.stderr
    assert "where is A-1?" in forked.stderr and "cannot go live mid-stream" in forked.stderr
    [note] = report["notes"]
    assert (note["code"], note["eventSeq"]) == ("websocket_not_live", opening)
    assert f"{server.url}/: frame 2 is past the fork's branch point (--from-seq {second})" in note["detail"]
    assert f"fork from seq {opening} or earlier" in note["detail"]
