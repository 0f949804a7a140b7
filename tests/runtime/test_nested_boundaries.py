"""A call recorded at an outer boundary (wop.llm_call, @wop.tool) is one unit: the HTTP adapters below it
record nothing of their own, and in a replay the outer one is served and the inner call never runs."""


from tests.conftest import requires
from tests.fake_provider import FakeProvider
from tests.programs import capture, events, replay

requires("openai")

README_SNIPPET = """
import asyncio, os
import openai
import openwop_cli as wop

client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-0123456789abcdef", max_retries=0)
messages = [{"role": "user", "content": os.environ.get("QUESTION", "where is order A-1?")}]
reply = wop.llm_call("openai", "gpt-4o-mini", {"messages": messages},
                     lambda: client.chat.completions.create(model="gpt-4o-mini", messages=messages))
print("sync:", reply.choices[0].message.content, type(reply).__name__)

async_client = openai.AsyncOpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-0123456789abcdef", max_retries=0)

async def main():
    answers = await asyncio.gather(*(wop.llm_call(
        "openai", "gpt-4o-mini", {"messages": [{"role": "user", "content": f"async {n}"}]},
        lambda n=n: async_client.chat.completions.create(model="gpt-4o-mini",
                                                         messages=[{"role": "user", "content": f"async {n}"}]))
        for n in (1, 2)))
    return [answer.choices[0].message.content for answer in answers]

print("async:", asyncio.run(main()))
"""


def test_the_readme_llm_call_snippet_records_once_and_replays_strictly(tmp_path):
    with FakeProvider() as provider:
        done, source = capture(tmp_path, README_SNIPPET, {"BASE": provider.url})
        assert done.returncode == 0, done.stderr
        assert len(provider.requests) == 3
    requests = events(source, "llm_request")
    assert len(requests) == 3 and len(events(source, "llm_response")) == 3
    assert all("http" not in request["data"] for request in requests)  # wop.llm_call's, not the adapter's
    replayed, report = replay(tmp_path, source, "--strict", env={"BASE": provider.url})
    assert replayed.returncode == 0, replayed.stderr
    assert not report["divergences"] and report["score"]["matchedEvents"] == 3
    assert done.stdout in replayed.stderr


TOOL_AROUND_HTTP = """
import os
import requests
import openwop_cli as wop

@wop.tool
def order_status(order_id: str) -> dict:
    return requests.post(os.environ["BASE"] + "/orders", json={"order": order_id}).json()["echo"]

print(order_status(os.environ.get("ORDER", "A-1")))
"""


def test_http_inside_a_tool_is_the_tools_unit_and_does_not_run_in_a_replay(tmp_path):
    with FakeProvider() as provider:
        done, source = capture(tmp_path, TOOL_AROUND_HTTP, {"BASE": provider.url})
        assert done.returncode == 0, done.stderr
    calls = [event["data"] for event in events(source, "tool_call")]
    assert [call["name"] for call in calls] == ["order_status"]
    with FakeProvider() as provider:
        replayed, report = replay(tmp_path, source, env={"BASE": provider.url})
        assert provider.requests == []
    assert replayed.returncode == 0 and not report["divergences"]
    assert "{'order': 'A-1'}" in replayed.stderr
