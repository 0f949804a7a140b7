"""With the default profile no secret reaches any byte under the capture directory."""

import pytest

from openwop_cli.format.redact import REDACTED, Redactor
from tests.conftest import write_capture

ENV_KEY = "test-openai-key-7f3a9c21"
SK_TOKEN = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12"
BEARER = "eyJhbGciOiJIUzI1NiJ9.payload.sig"


def every_byte_under(path):
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


def test_default_profile_keeps_env_keys_bearer_headers_and_sk_tokens_off_disk(tmp_path):
    redactor = Redactor.from_environment("default", {"OPENAI_API_KEY": ENV_KEY, "HOME": "/root"})
    events = [
        ("run_start", {"argv": ["python", "agent.py", "--api-key", ENV_KEY], "env": {"OPENAI_API_KEY": ENV_KEY}}),
        ("tool_call", {"name": "http", "args": {"headers": {"Authorization": f"Bearer {BEARER}"}}, "callId": "1"}),
        ("tool_result", {"callId": "1", "ok": True, "result": f"config says key={SK_TOKEN} ok"}),
        ("tool_result", {"callId": "2", "ok": True, "result": {"blob": f"{SK_TOKEN} " * 20_000}}),
        ("llm_request", {"provider": "openai", "model": "m", "request": {"messages": [
            {"role": "user", "content": f"my key is {ENV_KEY}"}]}, "x-api-key": "short"}),
    ]
    capture = write_capture(tmp_path / "c", events, redactor=redactor, program={"argv": ["--token", SK_TOKEN]})
    data = every_byte_under(capture)
    for secret in (ENV_KEY, SK_TOKEN, BEARER, "short"):
        assert secret.encode() not in data, secret
    assert REDACTED.encode() in data


def test_usage_counters_and_cache_keys_are_not_mistaken_for_secrets():
    redactor = Redactor("default", ())
    data = {"cacheKey": "ab" * 32, "usage": {"prompt_tokens": 3, "max_tokens": 9}, "tokenizer": "x"}
    assert redactor.redact(data) == data


def test_strict_profile_replaces_message_contents_by_their_hash():
    redactor = Redactor("strict", ())
    out = redactor.redact({"messages": [{"role": "user", "content": "hello"}], "model": "m"})
    assert out["model"] == "m" and out["messages"][0]["role"] == "user"
    assert out["messages"][0]["content"].startswith("***sha256:")
    again = redactor.redact({"messages": [{"role": "user", "content": "hello"}]})
    assert again["messages"][0]["content"] == out["messages"][0]["content"]


def test_none_profile_changes_nothing():
    data = {"authorization": "Bearer abcdefghijkl"}
    assert Redactor("none", ()).redact(data) is data


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown redaction profile"):
        Redactor("paranoid")


@pytest.mark.parametrize("key", ["client_secret", "Password", "refresh_token", "Cookie", "X-Api-Key", "Proxy-Authorization"])
def test_secret_keys_at_any_depth_are_redacted_on_disk(tmp_path, key):
    redactor = Redactor("default", ())
    value = "opaque-value-91b2c3"
    events = [("tool_call", {"name": "http", "args": {"req": [{"headers": {key: value}}]}, "callId": "1"})]
    capture = write_capture(tmp_path / "c", events, redactor=redactor)
    assert value.encode() not in every_byte_under(capture)


def test_only_the_events_holding_a_secret_are_rewritten(tmp_path):
    from openwop_cli.format.reader import CaptureReader

    redactor = Redactor("default", ())
    plain = {"name": "lookup", "args": {"order": "A-1", "prompt_tokens": 3}, "callId": "p"}
    events = [("tool_call", plain), ("tool_call", {"name": "x", "args": {"api_key": "abcdef123"}, "callId": "s"}),
              ("tool_call", plain)]
    capture = write_capture(tmp_path / "c", events, redactor=redactor)
    read = [event["data"] for event in CaptureReader(capture)]
    assert read[0] == plain and read[2] == plain
    assert read[1]["args"]["api_key"] == REDACTED



@pytest.mark.parametrize("engine", ["hyperscan", "re2", "re"])
def test_every_prefilter_engine_flags_the_same_things(engine):
    from openwop_cli.format.redact import compile_prefilter

    try:
        prefilter = compile_prefilter([ENV_KEY], engine)
    except ImportError:
        pytest.skip(f"{engine} is not installed here")
    flagged = [b'{"data":{"note":"key=' + SK_TOKEN.encode() + b'"}}', b'{"h":"Bearer ' + BEARER.encode() + b'"}',
               b'{"args":{"X-Api-Key":"short"}}', b'{"msg":"' + ENV_KEY.encode() + b'"}', b'{"refresh_token":"x"}',
               b'{"Cookie":"a=b"}', b'{"auth":"x"}']
    clean = [b'{"cacheKey":"ab","usage":{"prompt_tokens":3},"tokenizer":"x","text":"Bearer"}',
             b'{"messages":[{"role":"user","content":"where is my order?"}]}']
    assert [bool(prefilter.search(line)) for line in flagged] == [True] * len(flagged)
    assert [bool(prefilter.search(line)) for line in clean] == [False] * len(clean)
    assert bool(prefilter.search(b"\n".join(clean + flagged[:1])))
