"""Cassettes the real vcrpy records of requests and aiohttp programs import as they are: VCR.py's requests and
aiohttp stubs store a gzip/deflate answer's body decoded under its `Content-Encoding` header (and play it back so),
and its aiohttp stub stores a `json=` request body as the value the program passed."""

import gzip
import os
import subprocess
import sys
import textwrap
import zlib
from http.server import BaseHTTPRequestHandler

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import http_server, requires, run_wop

requires("vcr")
requires("requests")
requires("aiohttp")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.answer()

    def do_POST(self):
        self.answer()

    def answer(self):
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/gzip":
            body, headers = gzip.compress(b'{"zipped": true}'), [("Content-Encoding", "gzip")]
        elif self.path == "/deflate":
            body, headers = zlib.compress(b'{"deflated": true}'), [("Content-Encoding", "deflate")]
        elif self.path == "/v1/chat/completions":
            asked = orjson.loads(sent)["messages"][-1]["content"]
            body, headers = orjson.dumps({"id": "c1", "object": "chat.completion", "model": "gpt-4o-mini", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "echo " + asked}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}), []
        else:
            body, headers = orjson.dumps({"got": sent.decode()}), []
        self.send_response(200)
        for name, value in [("Content-Type", "application/json"), *headers, ("Content-Length", str(len(body)))]:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    with http_server(Handler) as url:
        yield url


PROGRAMS = {
    "requests": """
        import os, requests
        base = os.environ["BASE"]
        print(requests.get(base + "/gzip").json(), requests.get(base + "/deflate").json(),
              requests.post(base + "/echo", json={"a": 1}).json()["got"])
        """,
    "aiohttp": """
        import asyncio, os, aiohttp
        async def main():
            base = os.environ["BASE"]
            async with aiohttp.ClientSession() as session:
                async with session.get(base + "/gzip") as r1, session.get(base + "/deflate") as r2:
                    print(await r1.json(), await r2.json(), end=" ")
                async with session.post(base + "/v1/chat/completions", json={
                        "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}) as r3:
                    print((await r3.json())["choices"][0]["message"]["content"])
        asyncio.run(main())
        """,
}
RECORD = """
import runpy, sys, vcr
with vcr.use_cassette(sys.argv[2], record_mode="all", serializer=sys.argv[3]):
    runpy.run_path(sys.argv[1], run_name="__main__")
"""


@pytest.mark.parametrize("serializer", ["yaml", "json"])
@pytest.mark.parametrize("client", ["requests", "aiohttp"])
def test_a_real_vcrpy_cassette_of_compressed_answers_and_json_bodies_imports_and_replays(tmp_path, server, client,
                                                                                          serializer):
    program, recorder = tmp_path / "agent.py", tmp_path / "record.py"
    program.write_text(textwrap.dedent(PROGRAMS[client]))
    recorder.write_text(RECORD)
    cassette = tmp_path / f"cassette.{serializer}"
    env = {**os.environ, "BASE": server}
    recorded = subprocess.run([sys.executable, str(recorder), str(program), str(cassette), serializer], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert recorded.returncode == 0, recorded.stderr
    expected = recorded.stdout.strip()
    out = tmp_path / "imported"
    done = run_wop("import", "vcr", str(cassette), "--out", str(out), "--json", "--", sys.executable, str(program),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["llmCalls"] == (client == "aiohttp")
    results = [event["data"] for event in CaptureReader(out) if event["type"] in ("tool_result", "llm_response")]
    assert results[0]["result"]["body"] == {"zipped": True} and results[1]["result"]["body"] == {"deflated": True}

    replayed = run_wop("replay", "--strict", str(out), "--out", str(tmp_path / "replay"), env={"BASE": server},
                       cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert expected in replayed.stderr + replayed.stdout


@pytest.mark.parametrize("body", [gzip.compress(b'{"zipped": true, "and": "more text"}', mtime=0)[:-12],
                                  zlib.compress(b'{"deflated": true, "and": "more text"}')[:-6]],
                         ids=["gzip", "deflate"])
def test_a_cut_short_compressed_body_is_refused(tmp_path, body):
    import base64

    encoding = "gzip" if body[:2] == b"\x1f\x8b" else "deflate"
    (tmp_path / "cut.json").write_bytes(orjson.dumps({"interactions": [{
        "request": {"method": "GET", "uri": "http://h/x", "body": None, "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {"Content-Encoding": [encoding]},
                     "body": {"base64_string": base64.b64encode(body).decode()}}}]}))
    done = run_wop("import", "vcr", str(tmp_path / "cut.json"), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2 and f"not valid {encoding} data" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()
