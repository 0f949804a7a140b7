"""urllib.request (http.client underneath) and boto3's bedrock-runtime (urllib3 underneath, AWS event
streams): recorded with no code changes, replayed offline, a changed prompt located in the request."""


from tests.conftest import requires
from tests.fake_provider import FakeProvider
from tests.programs import capture, events, replay, round_trip, unrecorded_connections

URLLIB_AGENT = """
import json, os, urllib.request

base = os.environ["BASE"] + "/v1/chat/completions"
question = os.environ.get("QUESTION", "where is order A-1?")

def ask(content, **extra):
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}], **extra}).encode()
    return urllib.request.Request(base, data=body, headers={"content-type": "application/json",
                                                            "authorization": "Bearer sk-urllib-secret-0123456789"})

with urllib.request.urlopen(ask(question)) as response:
    print("json:", json.load(response)["choices"][0]["message"]["content"], response.status)
with urllib.request.urlopen(ask("stream it", stream=True)) as response:
    lines = [line.decode().strip() for line in response]
    print("sse:", "".join(json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                          for line in lines if line.startswith("data: {")))
with urllib.request.urlopen(ask("read it", stream=True)) as response:
    print("sse read:", response.read(10), len(response.read()) > 0)
print("get:", json.loads(urllib.request.urlopen(os.environ["BASE"] + "/status").read())["path"])
"""


def test_urllib_request_through_http_client(tmp_path):
    requests = round_trip(tmp_path, URLLIB_AGENT, calls=3, changed={"QUESTION": "where is order B-2?"},
                          json_path="$.messages[0].content")
    assert [r["http"]["url"].rsplit("/", 2)[-2:] for r in requests] == [["chat", "completions"]] * 3
    recorded = (tmp_path / "source" / "events.jsonl").read_bytes()
    assert b"sk-urllib-secret" not in recorded


BEDROCK_AGENT = """
import json, os
import boto3

client = boto3.client("bedrock-runtime", endpoint_url=os.environ["BASE"])
model = "anthropic.claude-3-haiku-20240307-v1:0"
question = os.environ.get("QUESTION", "where is order A-1?")

reply = client.converse(modelId=model, messages=[{"role": "user", "content": [{"text": question}]}],
                        system=[{"text": "be brief"}], inferenceConfig={"maxTokens": 50, "temperature": 0.2})
print("converse:", reply["output"]["message"]["content"][0]["text"], reply["stopReason"], reply["usage"])
stream = client.converse_stream(modelId=model, messages=[{"role": "user", "content": [{"text": "stream it"}]}])
parts = [event for event in stream["stream"]]
print("converse stream:", "".join(e["contentBlockDelta"]["delta"]["text"] for e in parts if "contentBlockDelta" in e),
      [next(iter(e)) for e in parts][-2:])
body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 50,
                   "messages": [{"role": "user", "content": "invoke it"}]})
print("invoke:", json.loads(client.invoke_model(modelId=model, body=body)["body"].read())["content"][0]["text"])
chunks = client.invoke_model_with_response_stream(modelId=model, body=body)["body"]
deltas = [json.loads(event["chunk"]["bytes"]) for event in chunks]
print("invoke stream:", "".join(d["delta"]["text"] for d in deltas if d["type"] == "content_block_delta"))
"""


def test_boto3_bedrock_runtime_json_and_event_streams(tmp_path):
    requires("boto3")
    requests = round_trip(tmp_path, BEDROCK_AGENT, calls=4, changed={"QUESTION": "where is order B-2?"},
                          json_path="$.messages[0].content[0].text")
    assert {(r["provider"], r["model"]) for r in requests} == {("bedrock", "anthropic.claude-3-haiku-20240307-v1:0")}
    responses = [event["data"] for event in events(tmp_path / "source", "llm_response")]
    assert [r.get("streamFormat") for r in responses] == [None, "eventstream", None, "eventstream"]
    assert responses[1]["response"] == {"text": "answer to stream it ", "toolCalls": [], "stopReason": "end_turn",
                                        "usage": {"inputTokens": 7, "outputTokens": 5, "totalTokens": 12}}
    assert responses[3]["response"]["text"] == "answer to invoke it " and responses[3]["stopReason"] == "end_turn"
    assert responses[1]["stream"][1] == {"headers": {":event-type": "contentBlockDelta", ":content-type": "application/json",
                                                     ":message-type": "event"},
                                         "data": '{"contentBlockIndex": 0, "delta": {"text": "answer "}}'}


REQUESTS_HTTPX = """
import asyncio, os
import httpx, httpx2, requests

base = os.environ["BASE"]
print(requests.post(base + "/orders", json={"n": 1}).json()["echo"])
with requests.Session() as session:
    print(session.get(base + "/status").json()["ok"])
print(httpx.post(base + "/orders", json={"n": 2}).json()["echo"])
print(httpx2.post(base + "/orders", json={"n": 3}).json()["echo"])

async def main():
    async with httpx.AsyncClient() as client:
        return (await client.post(base + "/orders", json={"n": 4})).json()["echo"]

print(asyncio.run(main()))
"""


def test_requests_httpx_and_httpx2_record_each_call_exactly_once(tmp_path):
    with FakeProvider() as provider:
        done, source = capture(tmp_path, REQUESTS_HTTPX, {"BASE": provider.url})
        assert done.returncode == 0, done.stderr
        assert len(provider.requests) == 5
    calls = [event["data"] for event in events(source, "tool_call")]
    assert [(c["args"]["method"], c["args"]["body"]) for c in calls] == [
        ("POST", {"n": 1}), ("GET", None), ("POST", {"n": 2}), ("POST", {"n": 3}), ("POST", {"n": 4})]
    assert len(events(source, "tool_result")) == 5 and not unrecorded_connections(source)
    replayed, report = replay(tmp_path, source, env={"BASE": provider.url})
    assert replayed.returncode == 0 and report["score"]["matchedEvents"] == 5


def test_a_failed_connection_replays_as_the_same_error(tmp_path):
    script = """
        import os, urllib.request, urllib.error
        try:
            urllib.request.urlopen(os.environ["BASE"] + "/status", timeout=5)
        except urllib.error.URLError as exc:
            print("failed:", type(exc.reason).__name__)
    """
    with FakeProvider() as provider:
        base = provider.url
    done, source = capture(tmp_path, script, {"BASE": base})
    assert done.returncode == 0 and done.stdout == "failed: ConnectionRefusedError\n"
    assert events(source, "tool_result")[0]["data"]["error"]["type"] == "ConnectionRefusedError"
    replayed, report = replay(tmp_path, source, env={"BASE": base})
    assert replayed.returncode == 0 and "failed: ConnectionRefusedError" in replayed.stderr
