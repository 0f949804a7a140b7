"""With the default profile no secret reaches any byte under the capture directory."""

import os
import subprocess
import sys

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


def test_strict_profile_replaces_message_contents_by_a_marker_that_keeps_no_hash():
    """A hash of a short content (`yes`, a PIN) is undone by trying every candidate: strict keeps none."""
    redactor = Redactor("strict", ())
    out = redactor.redact({"messages": [{"role": "user", "content": "1234"}], "model": "m"})
    assert out == {"messages": [{"role": "user", "content": REDACTED}], "model": "m"}
    again = redactor.redact({"messages": [{"role": "user", "content": "5678"}]})
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


JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM_BODY = "MIIEowIBAAKCAQEAx7PrivateKeyBodyQWERTY"
SSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUSshBody"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_SECRET_2 = "Zk9pQm/XyT2+ab8CdEfGhIjKlMnOpQrStUvWxYz1"
AWS_SESSION = "FwoGZXIvYXdzEJr//////////wEaDHVzZWFzdDEtc2Vzc2lvbgSessionX"
GCP_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCGcpServiceAccount"
DSN_PASSWORD = "S3cr3t-DSN-pass"
ARGV_TOKEN = "argv-token-1234"
NESTED_SECRET = "9f8e7d6c5b4a3210ffee"
EXCEPTION_PASSWORD = "exc-url-pass-987"
LEAKY_PROGRAM = f'''
import json, sys
import openwop_cli as wop

@wop.tool
def fetch(what, dsn=None):
    return {{
        "jwt": "session {JWT} ok",
        "pem": "key:\\n-----BEGIN RSA PRIVATE KEY-----\\n{PEM_BODY}\\n-----END RSA PRIVATE KEY-----\\n",
        "ssh": "-----BEGIN OPENSSH PRIVATE KEY-----\\n{SSH_BODY}\\n-----END OPENSSH PRIVATE KEY-----",
        "aws": "aws_secret_access_key = {AWS_SECRET}",
        "aws_free_text": "use AKIAIOSFODNN7EXAMPLE / {AWS_SECRET_2} for the bucket",
        "session": "export AWS_SESSION_TOKEN={AWS_SESSION}",
        "gcp": json.dumps({{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n{GCP_BODY}\\n-----END PRIVATE KEY-----\\n"}}),
        "nested": json.dumps({{"client_secret": "{NESTED_SECRET}", "region": "eu"}}),
        "echo": dsn,
    }}

fetch("everything", dsn="postgresql://app:{DSN_PASSWORD}@db.internal:5432/orders")
raise RuntimeError("cannot reach redis://:{EXCEPTION_PASSWORD}@cache:6379/0")
'''
LEAKED = (JWT, PEM_BODY, SSH_BODY, AWS_SECRET, AWS_SECRET_2, AWS_SESSION, GCP_BODY, DSN_PASSWORD, ARGV_TOKEN,
          NESTED_SECRET, EXCEPTION_PASSWORD)


def test_no_secret_format_reaches_the_capture_or_the_report(tmp_path):
    import base64
    import gzip
    import re
    import sys

    from tests.conftest import run_wop

    program = tmp_path / "leaky.py"
    program.write_text(LEAKY_PROGRAM)
    out = tmp_path / "capture"
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(program), "--token", ARGV_TOKEN,
                   cwd=tmp_path)
    assert done.returncode == 1 and "RuntimeError" in done.stderr
    page = tmp_path / "report.html"
    assert run_wop("report", str(out), "-o", str(page)).returncode == 0
    html = page.read_text()
    data = base64.b64decode(re.search(r'<script id="wop-data" type="application/octet-stream">([^<]*)</script>',
                                      html).group(1))
    for where, content in (("capture", every_byte_under(out)), ("report", html.encode()),
                           ("report data", gzip.decompress(data)), ("summary", done.stderr.splitlines()[-1].encode())):
        for secret in LEAKED:
            assert secret.encode() not in content, (where, secret)
    manifest = (out / "manifest.json").read_text()
    assert "redis://:***REDACTED***@cache" in manifest and '"--token","***REDACTED***"' in manifest.replace(" ", "").replace("\n", "")


@pytest.mark.parametrize("engine", ["hyperscan", "re2", "re"])
def test_every_prefilter_engine_flags_every_secret_format(engine):
    import orjson

    from openwop_cli.format.redact import compile_prefilter

    try:
        prefilter = compile_prefilter([], engine)
    except ImportError:
        pytest.skip(f"{engine} is not installed here")
    samples = [f"session {JWT} ok", f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}", f"aws_secret_access_key = {AWS_SECRET}",
               f"AKIAIOSFODNN7EXAMPLE {AWS_SECRET_2}", AWS_SESSION, f"postgresql://app:{DSN_PASSWORD}@db/x",
               f"deploy --token {ARGV_TOKEN}", '{"client_secret": "' + NESTED_SECRET + '"}', "password=hunter22",
               "GET /blob?sv=2024&sig=Zk3q8vN0pLx7Yw"]
    for sample in samples:
        assert prefilter.search(orjson.dumps({"text": sample})), sample
    assert prefilter.search(orjson.dumps({"argv": ["agent.py", "--api-key", "x"]}))


@pytest.mark.parametrize(("text", "kept"), [
    ("max_tokens=4096 and prompt_tokens: 12", "max_tokens=4096 and prompt_tokens: 12"),
    ("token_count: 5, author: Jane", "token_count: 5, author: Jane"),
    ('password = input("Password: ")', 'password = input("Password: ")'),
    ("token = os.environ['TOKEN']", "token = os.environ['TOKEN']"),
    ("the cacheKey is " + "ab" * 32, "the cacheKey is " + "ab" * 32),
    ("https://user@example.com/path:8080@x", "https://user@example.com/path:8080@x"),
])
def test_plain_text_that_only_mentions_secrets_is_left_alone(text, kept):
    assert Redactor("default", ()).scrub_text(text) == kept



@pytest.mark.parametrize("before", ["", "x" * 200, "1", "a1" * 5000, "see:"])
def test_a_url_password_is_redacted_whatever_runs_up_to_its_scheme(before):
    """The scheme is looked for within 32 characters of it (unbounded, a long run of letters, such as a base64 blob a
    program prints, was scanned again from each letter: a 200 KB stderr line took 27 s to scrub)."""
    text = f"{before}postgresql://app:s3cr3t-pass@db:5432/x and more"
    assert Redactor("default", ()).scrub_text(text) == text.replace("s3cr3t-pass", REDACTED)


def test_an_argv_flag_value_is_redacted_as_a_list_item_and_in_a_command_string():
    redactor = Redactor("default", ())
    assert redactor.redact({"argv": ["a.py", "--api-key", "k1", "--password=p2", "--name", "n"]}) == {
        "argv": ["a.py", "--api-key", REDACTED, "--password=" + REDACTED, "--name", "n"]}
    assert redactor.scrub_text("deploy --secret-key abc --verbose") == f"deploy --secret-key {REDACTED} --verbose"


def test_the_hyperscan_database_is_cached_without_the_secret_values_and_a_damaged_cache_is_rebuilt(tmp_path,
                                                                                                   monkeypatch):
    pytest.importorskip("hyperscan")
    import re

    from openwop_cli.format.scan import HyperscanMatcher

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    secret = "cache-test-s3cr3t-value"
    matcher = HyperscanMatcher([r"static-[a-z]{4}"], secret_parts=[re.escape(secret)])
    assert matcher.search(b"x static-abcd y") and matcher.search(f'"{secret}"'.encode())
    assert not matcher.search(b"static-AB nothing else")
    cached = list((tmp_path / "wop").glob("hyperscan-*.db"))
    assert len(cached) == 1 and b"s3cr3t" not in cached[0].read_bytes()
    cached[0].write_bytes(cached[0].read_bytes()[:100])  # cut short, as a full disk would leave it
    rebuilt = HyperscanMatcher([r"static-[a-z]{4}"])
    assert rebuilt.search(b"static-wxyz") and not rebuilt.search(b"static-")
    assert len(cached[0].read_bytes()) > 100


ECHOED_URL_SECRETS = ("Q9x7LmPz2Kd81", "Zk3%2Bq8vN0pLx7Yw%3D", "4/0AfJohXn8qLr2tY")


def test_credential_parameters_of_a_url_a_server_echoes_do_not_reach_the_capture(tmp_path):
    """A recorded request's URL has them masked (url_without_secrets); a server that echoes the URL in its body
    (an error message, a redirect list) used to put `key=` and a SAS `sig=` on disk as they were."""
    body = {"error": "denied: GET https://maps.example.com/api?key=Q9x7LmPz2Kd81&q=paris",
            "tried": ["https://acct.blob.core.windows.net/c/b?sv=2024&sig=Zk3%2Bq8vN0pLx7Yw%3D&se=1",
                      "https://app.example.com/callback?code=4/0AfJohXn8qLr2tY&state=abc"],
            "kept": "?key=value&code=200"}
    capture = write_capture(tmp_path / "c", [("tool_result", {"callId": "h1", "ok": False, "result": body})])
    written = (capture / "events.jsonl").read_bytes()
    assert not [secret for secret in ECHOED_URL_SECRETS if secret.encode() in written]
    assert written.count(REDACTED.encode()) == 3 and b"?key=value&code=200" in written


def test_the_patterns_cached_across_runs_read_alike_in_every_process():
    """The prefilter's and the selector's patterns name the databases and translations cached across runs: built
    from a set in its iteration order (which changes with the hash seed), nearly every run compiled and cached a
    database of its own (386 of them in one day's cache)."""
    code = ("import sys, orjson\nfrom openwop_cli.format.redact import prefilter_patterns, _patterns\n"
            "sys.stdout.buffer.write(orjson.dumps([prefilter_patterns(), [s for s, _, _ in _patterns()._sources]]))")
    seen = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(seed)},
                           capture_output=True, check=True).stdout for seed in range(1, 7)}
    assert len(seen) == 1
