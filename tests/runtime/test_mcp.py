"""MCP agents under the real `wop` CLI: each request to the server is one recorded tool call, and a replay serves the
session from the capture with the server gone and its data changed (runtime/adapters/mcp_adapter.py).

Each agent (tests/mcp_agents.py) is captured against the fake provider; then the orders file is changed and the
server made unavailable, and two strict replays exit 0 with the same output while no server starts; a changed
prompt diverges at the prompt, a changed tool argument at the tool call. Every agent runs with mcp 2.x (this
Python) and mcp 1.x (.ci/mcp1-venv)."""

import json
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import adopt_signing_key, keep_signing_key, requires, run_wop
from tests.fake_provider import FakeProvider
from tests.mcp_agents import (
    LANGCHAIN,
    NODE_FILESYSTEM,
    OPENAI_AGENTS,
    SDK_HTTP_SPAWNED,
    SDK_STDIO,
    environment,
    mcp_version,
    node_server,
    pythons,
    write_agent,
    write_node_launcher,
)
from tests.programs import events, replay

requires("mcp")


def captured(tmp_path: Path, python: str, env: dict[str, str]) -> Path:
    """agent.py captured against a fake provider that is gone afterwards; the capture's directory."""
    with FakeProvider() as provider:
        done = run_wop("capture", "--out", str(tmp_path / "source"), "--", python, "agent.py",
                       env=environment(BASE=provider.url, **env), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert provider.requests, "the agent asked the model nothing"
    return tmp_path / "source"


@pytest.fixture(scope="module")
def stdio_captures(tmp_path_factory, isolation) -> Callable[[str], tuple[Path, Path]]:
    """SDK_STDIO captured once per Python, when a test first asks for it, in a directory of its own (the agent, its
    server, the orders file, the server's marks, the capture in source/); that directory and the recorder's signing
    key. The official SDK's test and the fork's test share one capture, each on a copy (stdio_capture)."""
    made: dict[str, tuple[Path, Path]] = {}

    def recorded(python: str) -> tuple[Path, Path]:
        if python not in made:
            directory = tmp_path_factory.mktemp("stdio")
            with isolation():
                write_agent(directory, SDK_STDIO)
                captured(directory, python, {})
                made[python] = directory, keep_signing_key(directory.with_suffix(".key"))
        return made[python]

    return recorded


def stdio_capture(stdio_captures: Callable[[str], tuple[Path, Path]], python: str, tmp_path: Path) -> Path:
    """python's shared SDK_STDIO directory copied into tmp_path, its capture recorded by this test's user (a test
    changes the orders and removes the server in its copy); the capture."""
    directory, key = stdio_captures(python)
    shutil.copytree(directory, tmp_path, dirs_exist_ok=True)
    adopt_signing_key(key)
    return tmp_path / "source"


def mcp_calls(capture: Path) -> list[dict]:
    """The MCP requests a capture holds (tool_call data), in order."""
    return [event["data"] for event in events(capture, "tool_call") if event["data"].get("kind") == "mcp"]


def assert_replays_offline(tmp_path: Path, source: Path, env: dict[str, str], *, tool_path: str,
                           changed_argument: dict[str, str], prompt_path: str = "$.messages[0].content") -> str:
    """Orders changed, server gone: two strict replays exit 0 with the same output and start no server; a changed prompt
    diverges at the prompt, a changed argument at the tool call. Returns the replays' output."""
    (tmp_path / "orders.json").write_text(json.dumps({"A-1": {"item": "sofa", "status": "lost"}}))
    for mark in ("server-starts.txt", "server-calls.txt"):
        (tmp_path / mark).unlink(missing_ok=True)
    base = environment(BASE="http://127.0.0.1:9", **env)
    outputs = []
    for attempt in range(2):
        done, report = replay(tmp_path, source, env=base, name=f"replay{attempt}")
        assert done.returncode == 0, done.stderr
        assert not report["divergences"] and report["score"]["score"] == 1.0
        outputs.append(done.stderr)
    assert outputs[0] == outputs[1] and "lamp" in outputs[0] and "sofa" not in outputs[0]
    assert not (tmp_path / "server-calls.txt").exists(), "a server answered during the replay"
    done, report = replay(tmp_path, source, env={**base, "PROMPT": "Greet the customer"}, name="prompt")
    assert done.returncode == 1, done.stderr
    first = report["divergences"][0]
    assert (first["code"], first["eventType"], first["jsonPath"]) == (
        "event_payload_mismatch", "llm_request", prompt_path)
    done, report = replay(tmp_path, source, env={**base, **changed_argument}, name="argument")
    assert done.returncode == 1, done.stderr
    first = report["divergences"][0]
    assert (first["code"], first["eventType"], first["jsonPath"]) == (
        "event_payload_mismatch", "tool_call", tool_path)
    return outputs[0]


@pytest.mark.parametrize("python", pythons())
def test_official_sdk_over_stdio_replays_with_the_server_gone(tmp_path, stdio_captures, python):
    source = stdio_capture(stdio_captures, python, tmp_path)
    calls = mcp_calls(source)
    assert [call["args"]["method"] for call in calls] == ["initialize", "tools/list", "tools/call", "tools/call"]
    assert calls[2]["args"]["server"] == {"command": python, "args": ["server.py"]}
    assert calls[2]["args"]["params"]["arguments"] == {"order_id": "A-1"}
    assert (tmp_path / "server-starts.txt").exists()
    results = {event["data"]["callId"]: event["data"] for event in events(source, "tool_result")}
    assert "lamp" in json.dumps(results[calls[2]["callId"]]["result"]["result"])
    (progress,) = results[calls[2]["callId"]]["result"]["notifications"]  # the server's, before its reply
    assert progress["method"] == "notifications/progress" and progress["params"]["message"] == "opening the orders file"
    assert calls[2]["args"]["params"]["_meta"] == {}  # its progressToken was its own request id
    (tmp_path / "server.py").rename(tmp_path / "server-gone.py")
    outputs = assert_replays_offline(tmp_path, source, {}, tool_path="$.args.params.arguments.order_id",
                                     changed_argument={"ORDER": "B-2"})
    assert "progress 1.0 2.0 opening the orders file" in outputs  # the recorded notification, to today's request
    assert not (tmp_path / "server-starts.txt").exists(), "the stdio server started during the replay"
    shown = run_wop("show", str(source), cwd=tmp_path)
    assert 'mcp python' in shown.stdout and 'tools/call lookup_order({"order_id":"A-1"})' in shown.stdout


@pytest.mark.parametrize("python", pythons())
def test_a_spawned_http_server_probed_until_it_answers_replays(tmp_path, python):
    write_agent(tmp_path, SDK_HTTP_SPAWNED)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    source = captured(tmp_path, python, {"PORT": port})
    calls = mcp_calls(source)
    assert [call["args"]["method"] for call in calls].count("tools/call") == 2
    assert calls[-1]["args"]["server"] == {"url": f"http://127.0.0.1:{port}/mcp"}
    assert not any(event["data"].get("name") == "http" for event in events(source, "tool_call")), \
        "the MCP session's HTTP requests were recorded a second time"
    manifest = json.loads((source / "manifest.json").read_text())
    assert any(process["argv"][:2] == ["server.py", "http"] for process in manifest["program"]["processes"]), \
        "the server, started with a filtered environment, was not recorded"
    assert not [event for event in events(source, "nondeterministic") if event["data"].get("unrecorded")]
    assert_replays_offline(tmp_path, source, {"PORT": port}, tool_path="$.args.params.arguments.order_id",
                           changed_argument={"ORDER": "B-2"})


@pytest.mark.parametrize("python", pythons())
def test_the_node_filesystem_server_is_not_started_in_a_replay(tmp_path, python):
    entry = node_server()
    write_agent(tmp_path, NODE_FILESYSTEM)
    write_node_launcher(tmp_path, entry)
    source = captured(tmp_path, python, {})
    calls = mcp_calls(source)
    assert calls[-1]["args"]["method"] == "tools/call" and calls[-1]["args"]["params"]["name"] == "read_text_file"
    assert (tmp_path / "server-starts.txt").read_text().split() == ["node"]
    (tmp_path / "node-server.sh").unlink()
    assert_replays_offline(tmp_path, source, {}, tool_path="$.args.params.arguments.path",
                           changed_argument={"ORDER": "other.json"})
    assert not (tmp_path / "server-starts.txt").exists(), "the Node server started during the replay"


@pytest.mark.parametrize("python", pythons())
def test_openai_agents_mcp_server_stdio_replays(tmp_path, python):
    requires("agents")
    write_agent(tmp_path, OPENAI_AGENTS)
    source = captured(tmp_path, python, {})
    methods = [call["args"]["method"] for call in mcp_calls(source)]
    assert methods.count("tools/call") == 2, methods
    assert len(events(source, "llm_request")) == 2
    (tmp_path / "server.py").rename(tmp_path / "server-gone.py")
    assert_replays_offline(tmp_path, source, {}, tool_path="$.args.params.arguments.order_id",
                           changed_argument={"ORDER": "B-2"}, prompt_path="$.messages[1].content")
    assert not (tmp_path / "server-starts.txt").exists(), "the stdio server started during the replay"


@pytest.mark.parametrize("python", pythons())
def test_langchain_mcp_adapters_replay(tmp_path, python):
    pytest.importorskip("langchain_mcp_adapters")
    if mcp_version(python) != 1:
        pytest.skip("langchain-mcp-adapters works with mcp 1.x only (0.3.2 requires mcp<2; 0.3.1 fails to import on 2.x)")
    write_agent(tmp_path, LANGCHAIN)
    source = captured(tmp_path, python, {})
    methods = [call["args"]["method"] for call in mcp_calls(source)]
    assert methods.count("tools/call") == 2, methods
    (tmp_path / "server.py").rename(tmp_path / "server-gone.py")
    assert_replays_offline(tmp_path, source, {}, tool_path="$.args.params.arguments.order_id",
                           changed_argument={"ORDER": "B-2"})
    assert not (tmp_path / "server-starts.txt").exists(), "the stdio server started during the replay"


def test_a_fork_runs_the_calls_past_its_branch_point_on_the_real_server(tmp_path, stdio_captures):
    source = stdio_capture(stdio_captures, sys.executable, tmp_path)
    lookup = next(event["seq"] for event in events(source, "tool_call")
                  if event["data"]["args"]["params"].get("name") == "lookup_order")
    (tmp_path / "orders.json").write_text(json.dumps({"A-1": {"item": "sofa", "status": "lost"}}))
    (tmp_path / "server-starts.txt").unlink()
    with FakeProvider() as provider:  # the LLM call after the branch point runs live too
        done = run_wop("fork", str(source), "--from-seq", str(lookup), "--json", "--out", str(tmp_path / "fork"),
                       env=environment(BASE=provider.url), cwd=tmp_path)
    assert "sofa" in done.stderr and "lamp" not in done.stderr, done.stderr
    assert (tmp_path / "server-starts.txt").exists()
    assert (tmp_path / "server-calls.txt").read_text().split()[-2:] == ["lookup_order", "now"]
    live = [event["data"] for event in events(tmp_path / "fork", "tool_result") if "sourceSeq" not in event]
    assert len(live) == 2 and "sofa" in json.dumps(live[0]["result"])


def test_an_mcp_call_reads_as_its_server_method_and_what_it_asks():
    from openwop_cli.report.summary import summarize

    stdio = {"command": "/usr/bin/python3", "args": ["/srv/tools/server.py", "--verbose"]}

    def call(method, params, server=stdio):
        return summarize({"type": "tool_call", "data": {"kind": "mcp", "name": "mcp", "callId": "t1",
                                                        "args": {"server": server, "method": method, "params": params}}})

    assert call("tools/call", {"name": "lookup_order", "arguments": {"order_id": "A-1"}, "_meta": {"x": 1}}) == \
        'mcp python3 server.py --verbose tools/call lookup_order({"order_id":"A-1"})'
    assert call("resources/read", {"uri": "file:///data/orders.json"}, {"url": "http://127.0.0.1:8000/mcp"}) == \
        "mcp 127.0.0.1:8000/mcp resources/read file:///data/orders.json"
    assert call("tools/list", {}) == "mcp python3 server.py --verbose tools/list"
    assert call("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"}}).startswith(
        'mcp python3 server.py --verbose completion/complete {"ref":{"type":"ref/prompt","name":"greet"}}')

    def result(reply):
        return summarize({"type": "tool_result", "data": {"callId": "t1", "ok": True, "result": reply}})

    assert result({"id": 3, "result": {"tools": []}}) == 'ok {"tools":[]}'
    assert result({"id": 3, "error": {"code": -32602, "message": "Unknown tool: nope"}}) == \
        "error -32602: Unknown tool: nope"
