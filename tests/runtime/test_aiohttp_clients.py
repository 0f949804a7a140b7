"""aiohttp and the SDKs built on it (litellm's default async transport, google-genai's `client.aio`):
recorded with no code changes, replayed offline, a changed prompt located in the request."""


from tests.conftest import requires
from tests.programs import round_trip

requires("aiohttp")

AIOHTTP_AGENT = """
import asyncio, json, os
import aiohttp

base = os.environ["BASE"] + "/v1/chat/completions"
question = os.environ.get("QUESTION", "where is order A-1?")

def body(content, **extra):
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}], **extra}

async def main():
    async with aiohttp.ClientSession(headers={"authorization": "Bearer sk-aiohttp-secret-0123456789"}) as session:
        async with session.post(base, json=body(question)) as response:
            print("json:", (await response.json())["choices"][0]["message"]["content"])
        response = await session.post(base, data=json.dumps(body("lines", stream=True)),
                                      headers={"content-type": "application/json"})
        words = [json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                 async for line in response.content if line.startswith(b"data: {")]
        response.release()
        print("sse lines:", "".join(words))
        async with session.post(base, json=body("chunks", stream=True)) as response:
            data = b"".join([chunk async for chunk in response.content.iter_chunked(7)])
            print("sse chunks:", data.count(b"data: {"), response.headers["content-type"])
        async with session.post(base, json=body("any", stream=True)) as response:
            print("sse any:", b"".join([chunk async for chunk in response.content.iter_any()]).count(b"[DONE]"))
        async with session.get(os.environ["BASE"] + "/status", params={"verbose": "1"}) as response:
            print("text:", json.loads(await response.text())["path"])
        first, second = await asyncio.gather(*(session.post(base, json=body(f"concurrent {n}")) for n in (1, 2)))
        print("gather:", [(await r.json())["choices"][0]["message"]["content"] for r in (first, second)])

asyncio.run(main())
"""


def test_aiohttp_json_and_streams_replay_offline(tmp_path):
    requests = round_trip(tmp_path, AIOHTTP_AGENT, calls=6, changed={"QUESTION": "where is order B-2?"},
                          json_path="$.messages[0].content")
    assert [r["request"]["messages"][0]["content"] for r in requests[:4]] == [
        "where is order A-1?", "lines", "chunks", "any"]
    recorded = b"".join(path.read_bytes() for path in tmp_path.rglob("events.jsonl"))
    assert recorded and b"sk-aiohttp-secret" not in recorded


def test_an_aiohttp_sse_stream_is_recorded_event_by_event(tmp_path):
    from tests.fake_provider import FakeProvider
    from tests.programs import capture, events

    with FakeProvider() as provider:
        done, source = capture(tmp_path, AIOHTTP_AGENT, {"BASE": provider.url})
    assert done.returncode == 0, done.stderr
    streamed = [event["data"] for event in events(source, "llm_response") if "stream" in event["data"]]
    assert len(streamed) == 3 and all(data.get("streamComplete", True) for data in streamed)
    assert streamed[0]["response"]["text"] == "answer to lines " and streamed[0]["stream"][-1]["data"] == "[DONE]"
    tools = [event["data"] for event in events(source, "tool_call")]
    assert [tool["args"]["url"].rsplit("/", 1)[1] for tool in tools] == ["status?verbose=1"]


LITELLM_AGENT = """
import asyncio, os
import litellm

base = os.environ["BASE"] + "/v1"
question = os.environ.get("QUESTION", "hello litellm")

async def main():
    reply = await litellm.acompletion(model="openai/gpt-4o-mini", api_base=base, api_key="sk-test-0123456789abcdef",
                                      messages=[{"role": "user", "content": question}])
    print("acompletion:", reply.choices[0].message.content)
    stream = await litellm.acompletion(model="openai/gpt-4o-mini", api_base=base, api_key="sk-test-0123456789abcdef",
                                       messages=[{"role": "user", "content": "stream " + question}], stream=True)
    print("stream:", "".join([chunk.choices[0].delta.content or "" async for chunk in stream]))

asyncio.run(main())
"""


def test_litellm_acompletion_on_its_default_aiohttp_transport(tmp_path):
    requires("litellm")
    requests = round_trip(tmp_path, LITELLM_AGENT, calls=2, changed={"QUESTION": "hello again"},
                          json_path="$.messages[0].content")
    assert {r["provider"] for r in requests} == {"openai"}


GENAI_AGENT = """
import asyncio, os
from google import genai
from google.genai import types

client = genai.Client(api_key="AIzaTEST-0123456789abcdefghijkl", http_options=types.HttpOptions(base_url=os.environ["BASE"]))
question = os.environ.get("QUESTION", "hello gemini")

async def main():
    reply = await client.aio.models.generate_content(model="gemini-2.0-flash", contents=question)
    print("aio:", reply.text, reply.usage_metadata.total_token_count)
    chunks = await client.aio.models.generate_content_stream(model="gemini-2.0-flash", contents="stream " + question)
    print("aio stream:", "".join([chunk.text async for chunk in chunks]))

asyncio.run(main())
"""


def test_google_genai_client_aio(tmp_path):
    requires("google.genai")
    requests = round_trip(tmp_path, GENAI_AGENT, calls=2, changed={"QUESTION": "hello again"},
                          json_path="$.contents[0].parts[0].text")
    assert [(r["provider"], r["model"]) for r in requests] == [("google", "gemini-2.0-flash")] * 2


STOPS_EARLY = """
import asyncio, os, urllib.request, json
import aiohttp

base = os.environ["BASE"] + "/v1/chat/completions"
body = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "a long answer please"}]}

async def main():
    async with aiohttp.ClientSession() as session:
        async with session.post(base, json=body) as response:
            print("aiohttp first:", (await response.content.readline())[:26])
asyncio.run(main())
request = urllib.request.Request(base, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
with urllib.request.urlopen(request) as response:
    print("urllib first:", response.readline()[:26])
"""


def test_a_stream_the_program_stops_reading_is_recorded_as_far_as_it_came(tmp_path):
    from tests.fake_provider import FakeProvider
    from tests.programs import capture, events, replay

    with FakeProvider(event_delay=0.2) as provider:
        done, source = capture(tmp_path, STOPS_EARLY, {"BASE": provider.url})
    assert done.returncode == 0, done.stderr
    streamed = [event["data"] for event in events(source, "llm_response")]
    assert [data.get("streamComplete") for data in streamed] == [False, False]
    assert all(0 < len(data["stream"]) < 8 for data in streamed)
    replayed, report = replay(tmp_path, source, env={"BASE": provider.url})
    assert replayed.returncode == 0 and not report["divergences"]
    assert done.stdout in replayed.stderr
