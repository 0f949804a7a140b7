"""No hash in a capture lets a dictionary recover what was redacted: the pinned source's sha256, a value's valueHash and
an LLM request's cacheKey are computed over the data as kept, and a replay still matches and finds its files unchanged."""

import hashlib
import sys
import textwrap

import orjson

from openwop_cli.format.blobs import BlobStore
from openwop_cli.format.cachekey import request_keys
from openwop_cli.format.canonical import content_hash
from openwop_cli.format.redact import REDACTED, Redactor
from tests.conftest import run_wop
from tests.fake_provider import FakeProvider
from tests.programs import OFFLINE_SDKS, events

PASSWORD, PIN = "Summer2024!", "4821"
PROGRAM = f'''
import os
import openai
import openwop_cli as wop

DB_PASSWORD = "{PASSWORD}"
client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-00000000000000000000")
reply = client.chat.completions.create(model="gpt-4o-mini",
                                       messages=[{{"role": "user", "content": "log in with password=" + DB_PASSWORD}}])
pin = wop.nondeterministic("user", "pin", lambda: {{"pin_code": "{PIN}", "password": DB_PASSWORD}})
print(reply.choices[0].message.content, pin["pin_code"])
'''


def test_a_dictionary_finds_no_hash_of_a_redacted_value_and_the_replay_still_matches(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(PROGRAM))
    out = tmp_path / "capture"
    with FakeProvider() as provider:
        done = run_wop("capture", "--out", str(out), "--", sys.executable, str(program), cwd=tmp_path,
                       env={**OFFLINE_SDKS, "BASE": provider.url})
    assert done.returncode == 0, done.stderr
    written = b"".join(path.read_bytes() for path in out.rglob("*") if path.is_file())
    assert PASSWORD.encode() not in written

    # what a dictionary would rebuild from the capture and each candidate: none of its hashes is in the capture
    request = events(out, "llm_request")[0]["data"]
    value = next(event["data"] for event in events(out, "nondeterministic") if event["data"]["key"] == "pin")
    pin = orjson.loads((out / "manifest.json").read_bytes())["program"]["script"][0]
    as_sent = orjson.loads(orjson.dumps(request["request"]).replace(REDACTED.encode(), PASSWORD.encode()))
    guesses = [hashlib.sha256(program.read_bytes()).hexdigest(),
               request_keys("openai", "gpt-4o-mini", as_sent)["cacheKey"],
               content_hash({"pin_code": PIN, "password": PASSWORD})]
    assert not [guess for guess in guesses if guess.encode() in written]
    # each hash is of what the capture keeps
    kept_source = BlobStore(out).resolve(pin["blob"])
    assert REDACTED in kept_source and pin["sha256"] == hashlib.sha256(kept_source.encode()).hexdigest()
    assert request["cacheKey"] == request_keys("openai", "gpt-4o-mini", request["request"])["cacheKey"]
    assert value["value"]["password"] == REDACTED and value["valueHash"] == content_hash(value["value"])

    replayed = run_wop("replay", str(out), "--json", "--out", str(tmp_path / "replay"), cwd=tmp_path,
                       env={**OFFLINE_SDKS, "BASE": "http://127.0.0.1:9"})
    report = orjson.loads(replayed.stdout)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert report["changedFiles"] == []


def test_a_value_hash_is_of_the_value_as_kept():
    data = {"source": "user", "key": "k", "value": {"token": "t0k3n-value"}, "valueHash": content_hash({"token": "x"})}
    kept = Redactor("default", ()).redact_event("nondeterministic", data)
    assert kept["value"] == {"token": REDACTED} and kept["valueHash"] == content_hash({"token": REDACTED})


def test_strict_keeps_no_entropy_the_program_read_and_no_hash_of_it():
    data = {"source": "entropy", "key": "os.urandom", "value": "9f" * 16, "ambient": True}
    assert Redactor("strict", ()).redact_event("nondeterministic", data)["value"] == REDACTED
    assert Redactor("default", ()).redact_event("nondeterministic", data)["value"] == "9f" * 16


ENTROPY_PROGRAM = '''
import os, secrets
token, raw = secrets.token_urlsafe(16), os.urandom(8)
print("drawn", len(token), len(raw))
print("token", token, "raw", raw.hex(), file=open("drawn.txt", "w"))
'''


def test_under_strict_the_entropy_a_program_read_is_not_on_disk_and_a_replay_reads_it_live(tmp_path):
    """A reset token made with secrets.token_urlsafe() was recorded in clear: one could be made again byte for byte."""
    (tmp_path / "agent.py").write_text(ENTROPY_PROGRAM)
    out = tmp_path / "capture"
    done = run_wop("capture", "--redact", "strict", "--out", str(out), "--", sys.executable, "agent.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    drawn = (tmp_path / "drawn.txt").read_text().split()
    written = b"".join(path.read_bytes() for path in out.rglob("*") if path.is_file())
    assert drawn[1].encode() not in written and drawn[3].encode() not in written
    reads = [event["data"] for event in events(out, "nondeterministic") if event["data"]["source"] == "entropy"]
    assert [read["value"] for read in reads] == [REDACTED, REDACTED]
    replayed = run_wop("replay", str(out), "--json", "--out", str(tmp_path / "replay"), cwd=tmp_path)
    assert replayed.returncode in (0, 1), replayed.stderr  # whether a read served live diverges is the engine's say
    assert "secrets.token_urlsafe" in replayed.stdout and "os.urandom" in replayed.stdout  # read live, and said
    assert (tmp_path / "drawn.txt").read_text().split()[1] != drawn[1]
    replayed_bytes = b"".join(path.read_bytes() for path in (tmp_path / "replay").rglob("*") if path.is_file())
    assert (tmp_path / "drawn.txt").read_text().split()[1].encode() not in replayed_bytes
