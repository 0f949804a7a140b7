"""A strict replay compares the whole request, not only the cache key's fields: a changed option diverges at its path.

Real SDKs (anthropic, openai) against the fake provider; the program reads what to send from the environment, so
the "changed" replay is today's code with one option changed.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from openwop_cli.replay.compare import request_difference
from tests.conftest import adopt_signing_key, keep_signing_key
from tests.fake_provider import FakeProvider
from tests.programs import capture, events, replay

ANTHROPIC = """
import asyncio, json, os
import anthropic

async def main():
    client = anthropic.AsyncAnthropic(base_url=os.environ["BASE"], api_key="sk-ant-test")
    reply = await client.messages.create(model="claude-3-5-haiku-latest", max_tokens=int(os.environ.get("MAX", "300")),
                                         messages=[{"role": "user", "content": "hello"}])
    print(reply.content[0].text)

asyncio.run(main())
"""

RESPONSES = """
import json, os
import openai

client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test")
extra = json.loads(os.environ.get("EXTRA", "{}"))
reply = client.responses.create(model="gpt-4.1-mini", input="what is two and two", **extra)
print(reply.output_text)
"""

STREAM_FLIP = """
import os
import openai

client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test")
streamed = os.environ.get("STREAM", "1") == "1"
reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                                       stream=streamed)
if streamed:
    print("".join(chunk.choices[0].delta.content or "" for chunk in reply if chunk.choices))
else:
    print(reply.choices[0].message.content)
"""


SCRIPTS = {"anthropic": ANTHROPIC, "responses": RESPONSES, "chat": STREAM_FLIP}


class Recording(NamedTuple):
    source: Path
    url: str  # the fake provider's, gone since: a replay that reached it would fail
    raw_requests: list[bytes]  # the request bodies as the provider received them
    key: Path  # the recorder's signing key


@pytest.fixture(scope="module")
def recordings(tmp_path_factory, isolation) -> Callable[[str], Recording]:
    """Each script of SCRIPTS captured once, when a test first asks for it, for the module's tests that read it and
    replay it (a replay writes a capture of its own under its test's tmp_path, never into its source): an SDK's
    capture costs seconds. The capture reads as the asking test's user's own (adopt_signing_key)."""
    made: dict[str, Recording] = {}

    def recorded(name: str) -> Recording:
        if name not in made:
            directory = tmp_path_factory.mktemp(name)
            with isolation(), FakeProvider() as provider:
                done, source = capture(directory, SCRIPTS[name], {"BASE": provider.url})
                assert done.returncode == 0, done.stderr
                made[name] = Recording(source, provider.url, list(provider.raw_requests),
                                       keep_signing_key(directory / "key"))
        adopt_signing_key(made[name].key)
        return made[name]

    return recorded


@pytest.mark.parametrize("name", SCRIPTS)
def test_an_sdks_request_body_is_recorded_as_the_bytes_it_sent(recordings, name):
    """The openai and anthropic SDKs send `json=` through httpx, compactly: the capture writes the very bytes they
    sent, so a replay finds today's request in the recorded line as sent, without writing it again
    (replay.compare; bench/bench_compare.py times both ways)."""
    source, _, raw_requests, _ = recordings(name)
    line = next(line for line in (source / "events.jsonl").read_bytes().splitlines() if b'"llm_request"' in line)
    assert raw_requests and b'"request":' + raw_requests[0] + b',"http":' in line


def test_an_unchanged_request_replays_exactly(tmp_path, recordings):
    source, url, _, _ = recordings("anthropic")
    done, report = replay(tmp_path, source, env={"BASE": url})
    assert done.returncode == 0, done.stderr
    assert report["divergences"] == []


def test_a_changed_max_tokens_diverges_at_its_path(tmp_path, recordings):
    source, url, _, _ = recordings("anthropic")
    done, report = replay(tmp_path, source, env={"BASE": url, "MAX": "5"})
    assert done.returncode == 1, done.stderr
    first = report["divergences"][0]
    assert (first["code"], first["jsonPath"], first["expectedValue"], first["observedValue"]) == \
        ("event_payload_mismatch", "$.max_tokens", 300, 5)
    assert "Traceback" not in done.stderr


def test_added_responses_options_diverge_at_their_paths(tmp_path, recordings):
    source, url, _, _ = recordings("responses")
    for extra, path in (('{"max_output_tokens": 50}', "$.max_output_tokens"),
                        ('{"tool_choice": "none"}', "$.tool_choice"),
                        ('{"reasoning": {"effort": "low"}}', "$.reasoning")):
        done, report = replay(tmp_path, source, env={"BASE": url, "EXTRA": extra}, name=path[2:])
        assert done.returncode == 1, done.stderr
        first = report["divergences"][0]
        assert (first["code"], first["jsonPath"], first["expectedValue"]) == ("event_payload_mismatch", path, None)


def test_a_flipped_stream_flag_diverges_at_the_call_and_never_gets_an_answer_of_the_wrong_shape(tmp_path, recordings):
    source, url, _, _ = recordings("chat")
    [request] = events(source, "llm_request")
    for policy in ("--strict", "--lenient"):
        done, report = replay(tmp_path, source, policy, env={"BASE": url, "STREAM": "0"}, name=policy[2:])
        assert done.returncode == 1, done.stderr
        first = report["divergences"][0]
        assert (first["code"], first["eventSeq"], first["jsonPath"], first["expectedValue"], first["observedValue"]) \
            == ("event_payload_mismatch", request["seq"], "$.stream", True, False)
        assert "AttributeError" not in done.stderr  # the SDK got wop's error, not an SSE body as a str


LLM_CALL_WITH_A_DICT = """
import os
import openwop_cli as wop

request = {"messages": [{"role": "user", "content": f"order A-{n}: where is it?"} for n in range(40)],
           "max_tokens": int(os.environ.get("MAX", "300")), "user": os.environ["KEY"]}
reply = wop.llm_call("openai", "gpt-4o-mini", request, lambda: {"choices": [{"message": {"content": "on its way"}}]})
print(reply["choices"][0]["message"]["content"])
"""


@pytest.mark.parametrize("key", ["customer-7", "sk-proj-" + "Qz7" * 16], ids=["plain", "secret"])
def test_a_dict_request_is_compared_whole_with_or_without_a_secret_in_it(tmp_path, key):
    """wop.llm_call with a dict: the served call hands the JSON its keying wrote to the comparison (a secret makes
    the recorded request differ from today's in clear, and both are then compared as the capture keeps them)."""
    done, source = capture(tmp_path, LLM_CALL_WITH_A_DICT, {"KEY": key})
    assert done.returncode == 0, done.stderr
    done, report = replay(tmp_path, source, env={"KEY": key})
    assert (done.returncode, report["divergences"]) == (0, []), done.stderr
    done, report = replay(tmp_path, source, env={"KEY": key, "MAX": "5"}, name="changed")
    assert done.returncode == 1, done.stderr
    first = report["divergences"][0]
    assert (first["code"], first["jsonPath"], first["expectedValue"], first["observedValue"]) == \
        ("event_payload_mismatch", "$.max_tokens", 300, 5)
    assert key.startswith("customer") or key not in done.stdout + done.stderr


SECRET_IN_A_TOOL = """
import os
import openwop_cli as wop

@wop.tool
def post(url, body):
    return {"posted": body["order"]}

print(post("https://api.example.com/orders", {"api_key": os.environ["SERVICE_KEY"], "order": os.environ["ORDER"]}))
"""


def test_a_tools_divergence_names_the_real_change_and_never_shows_the_secret(tmp_path):
    """The recorded call holds the key redacted; today's holds it in clear. The divergence compares both as the capture
    keeps them: it is at the order that changed, and the key is neither the difference nor printed anywhere."""
    secret = "sk-proj-" + "Qz7" * 16
    done, source = capture(tmp_path, SECRET_IN_A_TOOL, {"SERVICE_KEY": secret, "ORDER": "A-1"})
    assert done.returncode == 0, done.stderr
    replayed, report = replay(tmp_path, source, "--strict", env={"SERVICE_KEY": secret, "ORDER": "B-2"})
    assert replayed.returncode == 1
    first = report["divergences"][0]
    assert (first["code"], first["jsonPath"]) == ("event_payload_mismatch", "$.args.body.order")
    assert secret not in replayed.stdout and secret not in replayed.stderr
    for path in (tmp_path / "replay").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


@given(st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=8),
       st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=8),
       st.sampled_from(["POST", "GET"]), st.sampled_from(["POST", "GET"]), st.booleans(),
       st.sampled_from(["none", "compact", "spaced"]), st.booleans())
@example(12, 1, "POST", "POST", False, "compact", False)  # the bytes sent are the start of the recorded body
@example(-1.5, -1, "POST", "POST", False, "compact", False)
@example({"n": 1}, {"n": 1}, "POST", "GET", False, "compact", True)  # the same body, another method
@settings(max_examples=300, deadline=None)
def test_the_fast_comparison_says_same_only_for_the_same_body(recorded, today, method, today_method, nested, sent,
                                                               same):
    """The common case is decided on the recorded line's bytes (today's body, as the program sent it or as orjson
    writes it, and http found in place after "request":): it must never call two different requests the same (1 and
    12, "ab" and "abc", a request nested in another field before the real one, another method, bytes sent that are
    the start of the recorded body), nor two equal ones different because the bytes were sent another way."""
    today = recorded if same else today
    http = {"method": method, "url": "http://h/v1/chat/completions"}
    today_http = {**http, "method": today_method}
    data = {"provider": "openai", "model": "m", **({"note": {"request": today, "http": today_http}} if nested else {}),
            "request": recorded, "http": http}
    line = orjson.dumps({"type": "llm_request", "data": data})
    body = {"none": None, "compact": orjson.dumps(today), "spaced": json.dumps(today).encode()}[sent]
    found = request_difference(line, lambda: orjson.loads(line)["data"], {"request": today, "http": today_http},
                               sent=body)
    assert (found is None) == (orjson.dumps(recorded) == orjson.dumps(today) and method == today_method)
