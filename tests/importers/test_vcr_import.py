"""`wop import vcr`: cassettes the real vcrpy records of a real openai-SDK program become captures that
`wop replay --strict` replays; hand-made and hostile cassettes are decoded or refused in one line."""

import base64
import gzip
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_cli.errors import BadCassette
from openwop_cli.format.reader import CaptureReader
from openwop_cli.importers.vcr import read_cassette
from tests.conftest import requires, run_wop
from tests.fake_provider import FakeProvider

requires("vcr")
requires("openai")

AGENT = """
import os
import httpx
import openai


def run():
    client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-vcr-0123456789abcdef", max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "system", "content": os.environ.get("PROMPT", "Be brief.")},
        {"role": "user", "content": "where is A-1?"}])
    stream = client.chat.completions.create(model="gpt-4o-mini", stream=True,
                                            messages=[{"role": "user", "content": "stream it"}])
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    order = httpx.get(os.environ["BASE"] + "/orders/A-1").json()
    print(reply.choices[0].message.content, "|", streamed.strip(), "|", order["path"])


cassette = os.environ.get("CASSETTE")
if cassette:
    import vcr

    with vcr.use_cassette(cassette, record_mode="all", serializer="json" if cassette.endswith(".json") else "yaml"):
        run()
else:
    run()
"""


def record_cassette(tmp_path: Path, cassette: Path, base: str) -> Path:
    """The agent run once under the real vcrpy against the fake provider."""
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(AGENT))
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BASE": base, "CASSETTE": str(cassette)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answer to where is A-1? | answer to stream it | /orders/A-1"
    return program


@pytest.mark.parametrize("serializer", ["yaml", "json"])
def test_a_vcrpy_cassette_imports_and_its_program_replays_strictly(tmp_path, serializer):
    cassette = tmp_path / f"cassette.{serializer}"
    with FakeProvider() as provider:
        program = record_cassette(tmp_path, cassette, provider.url)
        base = provider.url
    assert len(provider.requests) == 3
    out = tmp_path / "imported"
    done = run_wop("import", "vcr", str(cassette), "--out", str(out), "--json", "--", sys.executable, str(program),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(done.stdout)
    assert summary["llmCalls"] == 2 and summary["httpCalls"] == 1 and summary["path"] == str(out)

    events = list(CaptureReader(out))
    assert [event["type"] for event in events] == ["run_start", "llm_request", "llm_response", "llm_request",
                                                   "llm_response", "tool_call", "tool_result", "run_end"]
    assert events[1]["data"]["provider"] == "openai" and len(events[1]["data"]["cacheKey"]) == 64
    streamed = events[4]["data"]
    assert streamed["streamFormat"] == "sse" and streamed["response"]["text"].strip() == "answer to stream it"
    assert streamed["stream"][-1]["data"] == "[DONE]"
    assert events[5]["data"]["name"] == "http" and events[5]["data"]["args"]["method"] == "GET"
    assert events[6]["data"]["result"]["body"]["path"] == "/orders/A-1"
    on_disk = b"".join(path.read_bytes() for path in out.rglob("*") if path.is_file())
    assert b"sk-test-vcr-0123456789abcdef" not in on_disk

    replayed = run_wop("replay", "--strict", str(out), "--json", "--out", str(tmp_path / "replay"),
                       env={"BASE": base}, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert orjson.loads(replayed.stdout)["score"]["score"] == 1.0
    assert "answer to where is A-1? | answer to stream it | /orders/A-1" in replayed.stderr

    changed = run_wop("replay", "--strict", str(out), "--json", "--out", str(tmp_path / "changed"),
                      env={"BASE": base, "PROMPT": "Be warm."}, cwd=tmp_path)
    assert changed.returncode == 1
    divergence = orjson.loads(changed.stdout)["divergences"][0]
    assert divergence["code"] == "event_payload_mismatch" and divergence["jsonPath"] == "$.messages[0].content"
    assert (divergence["expectedValue"], divergence["observedValue"]) == ("Be brief.", "Be warm.")


def cassette_with(response_body, headers=None, request=None) -> dict:
    return {"version": 1, "interactions": [{
        "request": request or {"method": "POST", "uri": "https://api.example.com/v1/chat/completions",
                               "body": '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
                               "headers": {"Content-Type": ["application/json"]}},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": headers or {"Content-Type": ["application/json"]}, "body": response_body}}]}


ANSWER = {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"},
                                   "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


def test_gzip_binary_and_base64_bodies_are_decoded(tmp_path):
    packed = gzip.compress(orjson.dumps(ANSWER))
    yaml_text = textwrap.dedent(f"""\
        interactions:
        - request:
            body: !!binary |
              {base64.b64encode(b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}').decode()}
            headers: {{Content-Type: [application/json]}}
            method: POST
            uri: https://api.example.com/v1/chat/completions
          response:
            body: {{string: !!binary "{base64.b64encode(packed).decode()}"}}
            headers: {{Content-Encoding: [gzip], Content-Type: [application/json]}}
            status: {{code: 200, message: OK}}
        version: 1
        """)
    (tmp_path / "gz.yaml").write_text(yaml_text)
    (tmp_path / "b64.json").write_bytes(orjson.dumps(cassette_with({"base64_string": base64.b64encode(
        orjson.dumps(ANSWER)).decode()})))
    for name in ("gz.yaml", "b64.json"):
        [interaction] = read_cassette(tmp_path / name)
        assert orjson.loads(interaction.response_body) == ANSWER
        assert all(header.lower() != "content-encoding" for header, _ in interaction.response_headers)
        done = run_wop("import", "vcr", str(tmp_path / name), "--out", str(tmp_path / f"out-{name}"), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        response = [e for e in CaptureReader(tmp_path / f"out-{name}") if e["type"] == "llm_response"][0]["data"]
        assert response["response"] == ANSWER and response["usage"] == ANSWER["usage"]


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(8)) + "interactions: [*i]\n"


@pytest.mark.parametrize("name, text, message", [
    ("none.yaml", "just: text\n", "no `interactions` list"),
    ("list.json", "[1, 2]", "no `interactions` list"),
    ("broken.json", "{\"interactions\": [", "is not JSON"),
    ("broken.yaml", "interactions: [ {", "not a readable YAML cassette"),
    ("evil.yaml", "interactions: !!python/object/apply:os.system ['true']\n", "not a readable YAML cassette"),
    ("deep.json", "{\"interactions\": " + "[" * 5000 + "]" * 5000 + "}", "is not JSON"),
    ("bomb.yaml", ALIAS_BOMB, "expands to more than"),
    ("status.json", orjson.dumps({"interactions": [{"request": {"method": "GET", "uri": "http://x/"},
                                                    "response": {"status": {"code": "200"}}}]}).decode(),
     "interaction 0: response status '200'"),
    ("uri.json", orjson.dumps(cassette_with("{}", request={"method": "GET", "uri": "file:///etc/passwd"})).decode(),
     "interaction 0: request uri"),
    ("body.json", orjson.dumps(cassette_with({"string": 12})).decode(), "interaction 0: a body of type int"),
    ("brotli.json", orjson.dumps(cassette_with("x", headers={"Content-Encoding": ["br"]})).decode(), "br-encoded"),
    ("badgzip.json", orjson.dumps(cassette_with({"base64_string": base64.b64encode(b"\x1f\x8bnot gzip").decode()},
                                                headers={"Content-Encoding": ["gzip"]})).decode(), "not valid gzip"),
])
def test_a_bad_cassette_is_one_line_exit_2_and_writes_nothing(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    out = tmp_path / "out"
    done = run_wop("import", "vcr", str(tmp_path / name), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_gzip_bomb_is_refused(tmp_path):
    bomb = gzip.compress(b"\0" * (80 << 20), compresslevel=1)
    (tmp_path / "bomb.json").write_bytes(orjson.dumps(cassette_with(
        {"base64_string": base64.b64encode(bomb).decode()}, headers={"Content-Encoding": ["gzip"]})))
    with pytest.raises(BadCassette, match="decompresses to more than"):
        read_cassette(tmp_path / "bomb.json")


def test_a_missing_cassette_is_exit_2(tmp_path):
    done = run_wop("import", "vcr", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert done.returncode == 2 and "no cassette at" in done.stderr


json_values = st.recursive(st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=4), max_leaves=12)
interaction_like = st.fixed_dictionaries({
    "request": st.fixed_dictionaries({"method": st.sampled_from(["GET", "POST", 3, None]),
                                      "uri": st.sampled_from(["http://h/p", "ftp://h", None]),
                                      "body": json_values, "headers": json_values}),
    "response": st.fixed_dictionaries({"status": st.one_of(st.fixed_dictionaries({"code": json_values}), json_values),
                                       "headers": json_values, "body": json_values})})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=st.one_of(json_values, st.fixed_dictionaries({"interactions": st.lists(interaction_like, max_size=3)})))
def test_any_json_document_reads_or_is_a_bad_cassette(tmp_path, document):
    path = tmp_path / "cassette.json"
    path.write_bytes(orjson.dumps({"interactions": document} if not isinstance(document, dict) else document))
    try:
        interactions = read_cassette(path)
    except BadCassette as exc:
        assert str(path) in exc.message
        return
    for interaction in interactions:
        assert isinstance(interaction.request_body, bytes) and isinstance(interaction.status, int)


def hostile_alias_cassette(aliases: int) -> str:
    """The held-out case: one interaction whose response is a gzip body of 60 MB of zeros (61 KB compressed),
    repeated `aliases` more times by YAML alias (582 KB at 100k)."""
    body = base64.b64encode(gzip.compress(b"\0" * (60 << 20), compresslevel=9)).decode()
    first = ("- &i\n  request: {method: GET, uri: 'http://h/p', body: null, headers: {}}\n"
             "  response:\n    status: {code: 200, message: OK}\n    headers: {Content-Encoding: [gzip]}\n"
             f"    body: !!binary |\n      {body}\n")
    return "interactions:\n" + first + "- *i\n" * aliases


BILLION_LAUGHS = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)) + \
    "interactions: [*i]\n"


def import_limited(tmp_path, cassette, megabytes: int = 1536):
    """`wop import vcr` under an address-space limit: a cassette read once per alias could not stay under it."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return subprocess.run([sys.executable, "-m", "openwop_cli", "import", "vcr", str(cassette), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, preexec_fn=limit, timeout=300,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.parametrize("name, make, message", [
    ("laughs.yaml", lambda: BILLION_LAUGHS, "expands to more than 20000000 values or"),
    ("aliases.yaml", lambda: hostile_alias_cassette(99_999), "uses YAML aliases more than 10000 times"),
    ("fewer-aliases.yaml", lambda: hostile_alias_cassette(5_000), "add up to more than"),
    ("cycle.yaml", lambda: "interactions: &a [*a]\n", "a value that contains it"),
], ids=["billion-laughs", "100k-aliases-of-a-60MB-gzip-body", "5k-aliases", "alias-cycle"])
def test_hostile_yaml_is_refused_before_it_expands_with_bounded_memory(tmp_path, name, make, message):
    text = make()
    (tmp_path / name).write_text(text)
    if name == "aliases.yaml":
        assert 550_000 < len(text) < 600_000 and len(BILLION_LAUGHS) < 400
    done = import_limited(tmp_path, tmp_path / name)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_an_interaction_repeated_by_alias_imports_once_read_and_decoded_once(tmp_path):
    body = base64.b64encode(gzip.compress(orjson.dumps({"ok": True}))).decode()
    text = ("interactions:\n- &i\n  request: {method: GET, uri: 'http://h/p', body: null, headers: {}}\n"
            "  response:\n    status: {code: 200, message: OK}\n    headers: {Content-Encoding: [gzip]}\n"
            f"    body: !!binary |\n      {body}\n" + "- *i\n" * 3)
    (tmp_path / "few.yaml").write_text(text)
    interactions = read_cassette(tmp_path / "few.yaml")
    assert len(interactions) == 4 and len({id(interaction) for interaction in interactions}) == 1
    assert orjson.loads(interactions[0].response_body) == {"ok": True}
