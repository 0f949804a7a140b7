"""Zero-code capture and replay of real SDKs (openai, anthropic) and plain httpx/requests, against a fake server."""

import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import adopt_signing_key, keep_signing_key, requires, run_wop
from tests.fake_provider import FakeProvider

requires("openai")
requires("anthropic")

OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"

SDK_AGENT = f"""
import asyncio, json, os
import anthropic, openai

base = os.environ["BASE"]
question = os.environ.get("QUESTION", "where is order A-1?")
oa = openai.OpenAI(base_url=base + "/v1", api_key="{OPENAI_KEY}", max_retries=0)
tools = [{{"type": "function", "function": {{"name": "lookup_order", "description": "Find an order",
          "parameters": {{"type": "object", "properties": {{"order_id": {{"type": "string"}}}}}}}}}}]
messages = [{{"role": "user", "content": question}}]
first = oa.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
call = first.choices[0].message.tool_calls[0]
print("tool call:", call.function.name, call.function.arguments)
messages += [first.choices[0].message.model_dump(exclude_none=True),
             {{"role": "tool", "tool_call_id": call.id, "content": json.dumps({{"status": "shipped"}})}}]
final = oa.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
print("openai:", final.choices[0].message.content, final.usage.total_tokens)
stream = oa.chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": "stream it"}}],
                                    stream=True)
print("openai stream:", [chunk.choices[0].delta.content for chunk in stream if chunk.choices])

an = anthropic.Anthropic(base_url=base, api_key="{ANTHROPIC_KEY}", max_retries=0)
reply = an.messages.create(model="claude-x", max_tokens=50, system="be brief",
                           messages=[{{"role": "user", "content": "hello claude"}}])
print("anthropic:", reply.content[0].text, reply.stop_reason, reply.usage.output_tokens)
with an.messages.stream(model="claude-x", max_tokens=50, messages=[{{"role": "user", "content": "stream claude"}}]) as s:
    print("anthropic stream:", list(s.text_stream))

async def async_call():
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="{OPENAI_KEY}", max_retries=0)
    answer = await client.chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": "async"}}])
    return answer.choices[0].message.content

print("async:", asyncio.run(async_call()))
"""


def capture(tmp_path: Path, script: str, env: dict) -> tuple:
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(script))
    out = tmp_path / "source"
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(program), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done, out


def replay(tmp_path: Path, source: Path, *options: str, env: dict, name: str = "replay") -> tuple:
    done = run_wop("replay", str(source), "--json", "--out", str(tmp_path / name), *options, env=env, cwd=tmp_path)
    return done, orjson.loads(done.stdout)


@pytest.fixture(scope="module")
def recorded_sdk_agent(tmp_path_factory, isolation) -> tuple:
    """SDK_AGENT captured once against the fake provider (gone afterwards) for the module's tests, which read it and
    replay it (each replay writes under its own test's tmp_path): its capture process, the capture, the provider's
    URL, how many requests the provider saw, and the recorder's signing key."""
    directory = tmp_path_factory.mktemp("sdk-agent")
    with isolation(), FakeProvider() as provider:
        captured, source = capture(directory, SDK_AGENT, {"BASE": provider.url})
        return captured, source, provider.url, len(provider.requests), keep_signing_key(directory / "key")


@pytest.fixture
def sdk_agent(recorded_sdk_agent) -> tuple:
    """recorded_sdk_agent, its capture recorded by this test's user: (capture process, capture, provider URL,
    requests the provider saw)."""
    *recorded, key = recorded_sdk_agent
    adopt_signing_key(key)
    return tuple(recorded)


def test_openai_and_anthropic_sdks_replay_offline_and_print_the_same(tmp_path, sdk_agent):
    captured, source, url, provider_requests = sdk_agent
    env = {"BASE": url}
    assert provider_requests == 6
    types = [e["type"] for e in CaptureReader(source)]
    assert types.count("llm_request") == 6 and types.count("llm_response") == 6
    requests = [e["data"] for e in CaptureReader(source) if e["type"] == "llm_request"]
    assert [r["provider"] for r in requests] == ["openai"] * 3 + ["anthropic"] * 2 + ["openai"]
    assert all(len(r["cacheKey"]) == 64 for r in requests)
    streamed = [e["data"] for e in CaptureReader(source) if e["type"] == "llm_response" and "stream" in e["data"]]
    assert [s["response"]["text"] for s in streamed] == ["answer to stream it ", "answer to stream claude "]
    assert streamed[1]["stopReason"] == "end_turn"
    replayed, report = replay(tmp_path, source, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert report["score"]["score"] == 1.0
    assert replayed.stderr.splitlines()[:7] == captured.stdout.splitlines()
    everything = b"".join(p.read_bytes() for p in source.rglob("*") if p.is_file())
    for key in (OPENAI_KEY, ANTHROPIC_KEY):
        assert key.encode() not in everything


def test_a_changed_message_is_located_in_the_request(tmp_path, sdk_agent):
    _, source, url, _ = sdk_agent
    env = {"BASE": url}
    done, report = replay(tmp_path, source, env={**env, "QUESTION": "where is order B-2?"})
    assert done.returncode == 1
    divergence = report["divergences"][0]
    assert divergence["code"] == "event_payload_mismatch" and divergence["eventType"] == "llm_request"
    first_request = next(event["seq"] for event in CaptureReader(source) if event["type"] == "llm_request")
    assert divergence["eventSeq"] == first_request and divergence["jsonPath"] == "$.messages[0].content"
    assert "wop replay" in done.stderr  # the SDK surfaced the error answer instead of hanging


PLAIN_HTTP = """
import asyncio, os
import httpx, requests

base = os.environ["BASE"]
print("httpx get:", httpx.get(base + "/status?token=tok-secret-123456").json()["path"])
print("httpx post:", httpx.post(base + "/orders", json={"order": "A-1"}).json()["echo"])
print("requests:", requests.post(base + "/orders", json={"order": "A-2"}).json()["echo"])

async def main():
    async with httpx.AsyncClient() as client:
        response = await client.post(base + "/orders", json={"order": "A-3"})
        return response.json()["echo"]

print("async httpx:", asyncio.run(main()))
"""


def test_plain_httpx_and_requests_calls_are_http_tool_calls_that_replay(tmp_path):
    requires("httpx")
    with FakeProvider() as provider:
        env = {"BASE": provider.url}
        captured, source = capture(tmp_path, PLAIN_HTTP, env)
    calls = [e["data"] for e in CaptureReader(source) if e["type"] == "tool_call"]
    assert [c["name"] for c in calls] == ["http"] * 4
    assert [c["args"]["method"] for c in calls] == ["GET", "POST", "POST", "POST"]
    assert "tok-secret-123456" not in calls[0]["args"]["url"] and "REDACTED" in calls[0]["args"]["url"]
    results = [e["data"] for e in CaptureReader(source) if e["type"] == "tool_result"]
    assert results[1]["result"]["status"] == 200 and results[1]["result"]["body"]["echo"] == {"order": "A-1"}
    replayed, report = replay(tmp_path, source, env=env)
    assert replayed.returncode == 0, replayed.stderr
    # the server echoed the secret back in a field with a plain name ("path"): on disk, and so in a replay, it is redacted
    expected = captured.stdout.replace("tok-secret-123456", "***REDACTED***").splitlines()
    assert replayed.stderr.splitlines()[:4] == expected


STREAMED_UPLOADS = """
import io, os
import requests

base = os.environ["BASE"]
print(requests.post(base + "/file", data=io.BytesIO(b'{"from": "a file"}')).json()["echo"])
print(requests.post(base + "/chunks", data=(part for part in (b'{"from": ', b'"chunks"}'))).json()["echo"])
"""


def test_requests_uploads_from_a_file_or_a_generator_are_sent_recorded_and_replayed(tmp_path):
    """requests hands a file-like or iterable body to urllib3 to stream. Before, the program died on a TypeError (the
    exchange took the body's len) and nothing was sent."""
    with FakeProvider() as provider:
        env = {"BASE": provider.url}
        captured, source = capture(tmp_path, STREAMED_UPLOADS, env)
    assert provider.requests == [{"from": "a file"}, {"from": "chunks"}]
    calls = [event["data"]["args"] for event in CaptureReader(source) if event["type"] == "tool_call"]
    assert [call["body"] for call in calls] == [{"from": "a file"}, {"from": "chunks"}]
    replayed, report = replay(tmp_path, source, "--strict", env=env)
    assert replayed.returncode == 0 and report["diverged"] is False, replayed.stderr
    assert replayed.stderr.splitlines() == captured.stdout.splitlines()


def test_an_http_request_with_no_recorded_match_gets_an_error_answer_not_a_hang(tmp_path):
    with FakeProvider() as provider:
        env = {"BASE": provider.url}
        _, source = capture(tmp_path, """
            import os, requests
            print(requests.post(os.environ["BASE"] + "/orders", json={"order": os.environ.get("ORDER", "A-1")}).status_code)
        """, env)
    done, report = replay(tmp_path, source, "--lenient", env={**env, "ORDER": "Z-9"})
    assert done.returncode == 1
    assert report["divergences"][0]["jsonPath"] == "$.args.body.order"
    assert report["replay"]["exitCode"] == 0


NODE_AGENT = """
const base = process.env.OPENAI_BASE_URL;
async function main() {
  const headers = {"content-type": "application/json", "authorization": "Bearer sk-node-secret-0123456789abcdef"};
  const plain = await fetch(base + "/chat/completions", {method: "POST", headers,
    body: JSON.stringify({model: "gpt-4o-mini", messages: [{role: "user", content: process.env.Q || "hi from node"}]})});
  console.log("node:", (await plain.json()).choices[0].message.content);
  const streamed = await fetch(base + "/chat/completions", {method: "POST", headers,
    body: JSON.stringify({model: "gpt-4o-mini", stream: true, messages: [{role: "user", content: "node stream"}]})});
  const text = await streamed.text();
  const words = text.split("\\n").filter(l => l.startsWith("data: {")).map(l => JSON.parse(l.slice(6)).choices[0].delta.content || "");
  console.log("node stream:", words.join(""));
}
main().catch(error => { console.error(error.message); process.exit(1); });
"""


def test_a_node_program_is_captured_and_replayed_through_the_proxy(tmp_path):
    import shutil

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    program = tmp_path / "agent.js"
    program.write_text(NODE_AGENT)
    with FakeProvider() as provider:
        env = {"OPENAI_BASE_URL": provider.url + "/v1"}
        captured = run_wop("capture", "--proxy", "--out", str(tmp_path / "source"), "--", "node", str(program),
                           env=env, cwd=tmp_path)
        assert captured.returncode == 0, captured.stderr
        assert len(provider.requests) == 2
    assert captured.stdout.splitlines() == ["node: answer to hi from node", "node stream: answer to node stream "]
    types = [e["type"] for e in CaptureReader(tmp_path / "source")]
    assert types == ["run_start", "llm_request", "llm_response", "llm_request", "llm_response", "run_end"]
    replayed = run_wop("replay", str(tmp_path / "source"), "--out", str(tmp_path / "replay"), env=env, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr  # the proxy comes back without --proxy
    assert replayed.stdout.splitlines()[:2] == captured.stdout.splitlines()
    everything = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".js")
    assert b"sk-node-secret-0123456789abcdef" not in everything
    changed = run_wop("replay", "--proxy", str(tmp_path / "source"), "--json", "--out", str(tmp_path / "changed"),
                      env={**env, "Q": "something else"}, cwd=tmp_path)
    assert changed.returncode == 1
    assert orjson.loads(changed.stdout)["divergences"][0]["jsonPath"] == "$.messages[0].content"


def test_curl_through_the_proxy(tmp_path):
    import shutil

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    script = tmp_path / "ask.sh"
    script.write_text('curl -s "$ANTHROPIC_BASE_URL/v1/messages" -H "content-type: application/json" '
                      '-H "x-api-key: sk-ant-curl-secret-0123456789" '
                      '-d \'{"model":"claude-x","max_tokens":20,"messages":[{"role":"user","content":"from curl"}]}\'\n')
    with FakeProvider() as provider:
        env = {"ANTHROPIC_BASE_URL": provider.url}
        captured = run_wop("capture", "--proxy", "--out", str(tmp_path / "source"), "--", "sh", str(script),
                           env=env, cwd=tmp_path)
    assert captured.returncode == 0 and "answer to from curl" in captured.stdout
    replayed = run_wop("replay", "--proxy", str(tmp_path / "source"), "--out", str(tmp_path / "replay"),
                       env=env, cwd=tmp_path)
    assert replayed.returncode == 0 and "answer to from curl" in replayed.stdout
    assert b"sk-ant-curl-secret" not in (tmp_path / "source" / "events.jsonl").read_bytes()
