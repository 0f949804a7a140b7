"""A replayed response reads as the live one did. Each test captures a program against a server on 127.0.0.1 that
answers with exactly the header lines it is given, replays it strictly with the server gone, and compares what the
program printed both times (for a client that does not decode, what was recorded)."""

import gzip
import json
import sys
import textwrap
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import requires, run_wop
from tests.fake_provider import FakeProvider
from tests.programs import capture, events, replay

requires("aiohttp")

TEXT = b"order A-1 shipped " * 8
ROUTES: dict[str, tuple[list[tuple[str, str]], bytes]] = {
    "/gzip-then-empty": ([("Content-Encoding", "gzip"), ("Content-Encoding", "")], gzip.compress(TEXT, mtime=0)),
    "/empty-then-gzip": ([("Content-Encoding", ""), ("Content-Encoding", "gzip")], gzip.compress(TEXT, mtime=0)),
    "/gzip-then-identity": ([("Content-Encoding", "gzip"), ("Content-Encoding", "identity")],
                            gzip.compress(TEXT, mtime=0)),
    "/gzip-deflate": ([("Content-Encoding", "gzip, deflate")], zlib.compress(gzip.compress(TEXT, mtime=0))),
    "/gzip-then-deflate": ([("Content-Encoding", "gzip"), ("Content-Encoding", "deflate")],
                           zlib.compress(gzip.compress(TEXT, mtime=0))),
    "/repeated": ([("Link", "</a>; rel=first"), ("Vary", "Accept"), ("Set-Cookie", "session=s3cr3t-one"),
                   ("Link", "</b>; rel=next"), ("Vary", "Origin"), ("Set-Cookie", "theme=dark")], b"ok"),
    "/null": ([("Content-Type", "application/json")], b"null"),
    "/string": ([("Content-Type", "application/json")], b'"just text"'),
    "/exponent": ([("Content-Type", "application/json")], b"1E2"),
    "/big-integer": ([("Content-Type", "application/json")], b'{"id": 123456789012345678901234567890, "ok": true}'),
    "/float-exact-integer": ([("Content-Type", "application/json")], b'{"id": 1180591620717411303424}'),  # 2**70
    "/digits-in-a-string": ([("Content-Type", "application/json")], b'{"hash":"a1234567890123456789012b"}'),
}


class _Answers(BaseHTTPRequestHandler):
    """Answers GET path with ROUTES[path]: its header lines exactly as listed (repeats included), then its body."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path.split("?")[0].removeprefix("/sse")
        headers, body = ROUTES[path]
        self.send_response(200)
        if not any(name == "Content-Type" for name, _ in headers):
            self.send_header("Content-Type", "text/event-stream" if self.path.startswith("/sse") else "text/plain")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        """A chat completion streamed in three chunks, then the connection drops (no last chunk): a model server that
        crashed, a proxy that timed out. /hang answers only after 3 s (a model too slow for the program's timeout)."""
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if "/hang" in self.path:
            time.sleep(3)
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        slow = self.path.startswith("/slow")  # ten chunks 0.1 s apart, then the stream ends as it should
        for word in [f"w{n} " for n in range(10)] if slow else ("order ", "A-1 ", "shipped "):
            chunk = {"id": "chatcmpl-cut", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
                     "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
            data = b"data: " + json.dumps(chunk).encode() + b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            if slow:
                self.wfile.flush()
                time.sleep(0.1)
        if slow:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answers():
    """A running _Answers server (ThreadingHTTPServer), its base URL as .url; closed after the test."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _replays_as_captured(tmp_path, script: str, server: ThreadingHTTPServer) -> tuple:
    """Capture script against server, replay it strictly with the server gone; assert the program printed the same
    lines (those starting with '> ') both times. Returns the capture's directory and those lines."""
    captured, source = capture(tmp_path, script, {"BASE": server.url})
    assert captured.returncode == 0, captured.stderr
    printed = [line for line in captured.stdout.splitlines() if line.startswith("> ")]
    server.shutdown()
    replayed, report = replay(tmp_path, source, "--strict", env={"BASE": server.url})
    assert replayed.returncode == 0, replayed.stderr
    assert report["score"]["score"] == 1.0
    assert [line for line in replayed.stderr.splitlines() if line.startswith("> ")] == printed
    return source, printed


DECODED = """
import asyncio, os
import aiohttp, httpx, urllib3

base = os.environ["BASE"]
decoding_everywhere = ["/gzip-deflate", "/gzip-then-deflate"]  # urllib3 refuses an empty or identity coding in a list
for path in ["/gzip-then-empty", "/empty-then-gzip", "/gzip-then-identity", *decoding_everywhere]:
    print(">", "httpx", path, httpx.get(base + path).content)
    with httpx.stream("GET", base + "/sse" + path) as response:
        print(">", "httpx stream", path, b"".join(response.iter_bytes()))
for path in decoding_everywhere:
    response = urllib3.request("GET", base + path, preload_content=False)
    print(">", "urllib3 read", path, response.read())
    response = urllib3.request("GET", base + "/sse" + path, preload_content=False)
    print(">", "urllib3 stream", path, b"".join(response.stream(7)))

async def main():
    async with aiohttp.ClientSession() as session:
        for path in ["/gzip-then-empty", "/empty-then-gzip", "/gzip-then-deflate"]:
            async with session.get(base + path) as response:
                print(">", "aiohttp", path, await response.read())

asyncio.run(main())
"""


def test_a_body_under_repeated_content_encodings_replays_as_the_client_decoded_it(tmp_path, answers):
    """httpx decodes every coding of every Content-Encoding line (an empty or identity one is none); urllib3 a chain
    of them; aiohttp one line's: the replay reads the same bytes (httpx's was recorded still gzipped when the last line
    was empty, urllib3's read and stream undecoded or half decoded)."""
    source, _ = _replays_as_captured(tmp_path, DECODED, answers)
    bodies = [event["data"]["result"]["body"] for event in events(source, "tool_result")]
    assert bodies[:14] == [TEXT.decode()] * 14


UNDECODED = """
import asyncio, os, urllib.request
import aiohttp

base = os.environ["BASE"]
paths = ["/gzip-then-empty", "/empty-then-gzip", "/gzip-then-identity", "/gzip-deflate", "/gzip-then-deflate"]
for path in paths:
    urllib.request.urlopen(base + path).read()

async def main():
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        for path in paths:
            async with session.get(base + path) as response:
                await response.read()

asyncio.run(main())
"""


def test_a_client_that_does_not_decode_has_every_coding_of_every_line_undone_in_the_record(tmp_path, answers):
    """http.client and aiohttp(auto_decompress=False) hand the program the body as it came; wop records it with its
    codings undone, as it does for one Content-Encoding line (a replay serves it without one): all of them, in every
    line (the last line's alone was undone)."""
    captured, source = capture(tmp_path, UNDECODED, {"BASE": answers.url})
    assert captured.returncode == 0, captured.stderr
    bodies = [event["data"]["result"]["body"] for event in events(source, "tool_result")]
    assert bodies == [TEXT.decode()] * 10


REPEATED = """
import asyncio, os, urllib.request
import aiohttp, httpx, requests, urllib3

url = os.environ["BASE"] + "/repeated"
response = httpx.get(url)
print(">", "httpx", response.headers["link"], "|", response.headers["vary"], "|", response.links["next"])
response = requests.get(url)
print(">", "requests", response.headers["link"], "|", response.headers["vary"], "|", response.links["next"])
response = urllib3.request("GET", url)
print(">", "urllib3", response.headers["link"], "|", response.headers["vary"])
with urllib.request.urlopen(url) as response:
    print(">", "urllib", ", ".join(response.headers.get_all("link")), "|", ", ".join(response.headers.get_all("vary")))

async def main():
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        print(">", "aiohttp", ", ".join(response.headers.getall("link")), "|", ", ".join(response.headers.getall("vary")))

asyncio.run(main())
"""


def test_repeated_response_headers_are_recorded_and_replayed_joined_as_the_client_joins_them(tmp_path, answers):
    """Two Link and two Vary lines are recorded as one value each, joined by ', ' in order (RFC 9110 5.3, what
    httpx's, requests' and urllib3's headers[name] give), and replayed so: the last line alone was kept. Set-Cookie is
    a credential, never recorded."""
    source, _ = _replays_as_captured(tmp_path, REPEATED, answers)
    for event in events(source, "tool_result"):
        headers = event["data"]["result"]["headers"]
        assert headers["link"] == "</a>; rel=first, </b>; rel=next" and headers["vary"] == "Accept, Origin"
        assert "set-cookie" not in headers
    assert b"s3cr3t" not in (source / "events.jsonl").read_bytes()


JSON_BODIES = """
import os
import httpx, requests

base = os.environ["BASE"]
for path in ["/null", "/string", "/exponent", "/big-integer", "/float-exact-integer", "/digits-in-a-string"]:
    for client in (httpx, requests):
        response = client.get(base + path)
        try:
            value = response.json()
        except ValueError as exc:
            value = type(exc).__name__
        print(">", client.__name__, path, response.content, response.text, repr(value))
"""


def test_a_json_body_whose_value_would_replay_as_other_bytes_is_recorded_as_its_text(tmp_path, answers):
    """A JSON null, string or number, and an object with an integer beyond 64 bits (one a float holds exactly, 2**70,
    too), replay as the bytes the server sent (they came back as no body, a string without its quotes, 100.0, and a
    float); an object that orjson reads exactly is still recorded as its value."""
    source, _ = _replays_as_captured(tmp_path, JSON_BODIES, answers)
    bodies = [event["data"]["result"]["body"] for event in events(source, "tool_result")][::2]
    assert bodies == ["null", '"just text"', "1E2", '{"id": 123456789012345678901234567890, "ok": true}',
                      '{"id": 1180591620717411303424}', {"hash": "a1234567890123456789012b"}]


CUT_STREAMS = """
import asyncio, os
import httpx, openai

base = os.environ["BASE"]
messages = [{"role": "user", "content": "Where is order A-1?"}]
client = openai.OpenAI(base_url=base + "/v1", api_key="sk-test-0123456789abcdef", max_retries=0)
words = []
try:
    for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True):
        words.append(chunk.choices[0].delta.content)
    print(">", "openai ended", words)
except openai.APIConnectionError as exc:
    print(">", "openai", type(exc).__name__, type(exc.__cause__).__name__, words)

async def main():
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="sk-test-0123456789abcdef", max_retries=0)
    words = []
    try:
        async for chunk in await client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True):
            words.append(chunk.choices[0].delta.content)
        print(">", "async openai ended", words)
    except openai.APIConnectionError as exc:
        print(">", "async openai", type(exc).__name__, type(exc.__cause__).__name__, words)

asyncio.run(main())
try:
    with httpx.stream("POST", base + "/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": messages,
                                                                   "stream": True}) as response:
        for line in response.iter_lines():
            print(">", "httpx", line[:40])
    print(">", "httpx ended")
except httpx.RemoteProtocolError as exc:
    print(">", "httpx", type(exc).__name__, exc)
"""


def test_a_stream_whose_connection_broke_replays_its_chunks_then_the_same_error(tmp_path, answers):
    """The server sends three chunks of a streamed chat completion and drops the connection. The program (the openai
    SDK, sync and async, and httpx itself) got the chunks, then httpx's RemoteProtocolError (the SDK's
    APIConnectionError). Before, the replay served the chunks and a clean end of the stream: the SDK returned the three
    words as the whole answer, and the strict replay said it replayed exactly."""
    source, printed = _replays_as_captured(tmp_path, CUT_STREAMS, answers)
    assert printed[0] == "> openai APIConnectionError RemoteProtocolError ['order ', 'A-1 ', 'shipped ']", printed
    assert printed[1] == "> async " + printed[0][2:] and printed[-1].startswith("> httpx RemoteProtocolError")
    answers_recorded = events(source, "llm_response")
    assert len(answers_recorded) == 3
    for event in answers_recorded:
        assert event["data"]["streamComplete"] is False and len(event["data"]["stream"]) == 3
        assert event["data"]["streamError"]["type"] == "RemoteProtocolError"


CRASH_MID_STREAM = """
import asyncio, os, sys
import openai

messages = [{"role": "user", "content": "Where is order A-1 now?"}]
if sys.argv[1:] == ["async"]:
    async def main():
        client = openai.AsyncOpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-0123456789abcdef")
        async for chunk in await client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True):
            print(">", chunk.choices[0].delta.content, flush=True)
            if chunk.choices[0].delta.content == "A-1 ":
                raise RuntimeError("the agent's handler failed on a chunk")
    asyncio.run(main())
client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-0123456789abcdef")
for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True):
    print(">", chunk.choices[0].delta.content, flush=True)
    if chunk.choices[0].delta.content == "A-1 ":
        raise RuntimeError("the agent's handler failed on a chunk")
"""


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_program_that_dies_while_reading_a_stream_has_what_it_read_recorded_and_replayed(tmp_path, mode):
    """The program raises on the fourth chunk of a streamed answer and dies of it, the stream still open (held by the
    traceback). Before, the answer was never recorded (the stream was neither read to its end nor closed before the
    recording was): the replay answered the call with wop's HTTP 400, the program died of BadRequestError before
    printing a chunk, and the strict replay said it replayed exactly."""
    with FakeProvider() as provider:
        program = CRASH_MID_STREAM if mode == "sync" else CRASH_MID_STREAM.replace('sys.argv[1:] == ["async"]', "True")
        captured, source = capture(tmp_path, program, {"BASE": provider.url})
    assert captured.returncode == 1 and "RuntimeError: the agent's handler failed" in captured.stderr
    printed = [line for line in captured.stdout.splitlines() if line.startswith("> ")]
    assert printed[-2:] == ["> order ", "> A-1 "], printed
    (answer,) = events(source, "llm_response")
    assert answer["data"]["streamComplete"] is False and answer["data"]["stream"]
    replayed, report = replay(tmp_path, source, "--strict", env={"BASE": provider.url})
    assert report["diverged"] is False and report["score"]["score"] == 1.0, (report, replayed.stderr)
    assert [line for line in replayed.stderr.splitlines() if line.startswith("> ")] == printed
    assert "RuntimeError: the agent's handler failed" in replayed.stderr and "BadRequestError" not in replayed.stderr


CUT_STREAMS_OTHER_CLIENTS = """
import asyncio, json, os, urllib.request
import aiohttp, requests

url = os.environ["BASE"] + "/v1/chat/completions"
body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Where is order A-1?"}],
                   "stream": True}).encode()
for how in ("read", "readline"):
    lines = []
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, data=body,
                                                                 headers={"Content-Type": "application/json"}))
        if how == "read":
            lines.append(response.read())
        else:
            for line in response:
                lines.append(line[:12])
        print(">", "urllib", how, "ended", lines)
    except Exception as exc:
        print(">", "urllib", how, type(exc).__name__, repr(exc), lines)

async def main():
    async with aiohttp.ClientSession() as session:
        lines = []
        try:
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as response:
                async for line in response.content:
                    lines.append(line[:12])
            print(">", "aiohttp ended", lines)
        except aiohttp.ClientError as exc:
            print(">", "aiohttp", type(exc).__name__, exc, lines)

asyncio.run(main())
try:
    print(">", "requests ended", requests.post(url, data=body, headers={"Content-Type": "application/json"}).text)
except requests.RequestException as exc:
    print(">", "requests", type(exc).__name__)
"""


def test_a_stream_whose_connection_broke_replays_the_same_error_in_aiohttp_urllib_and_requests(tmp_path, answers):
    """The server sends three chunks of a streamed chat completion and drops the connection: aiohttp raised
    ClientPayloadError after the three lines, urllib's read() (http.client) IncompleteRead holding them (its line
    iterator takes the early close as the end), requests ChunkedEncodingError. Before, aiohttp's replay ended the
    stream cleanly, and urllib's capture recorded no answer
    (the replay answered wop's HTTP 400, an HTTPError): both strict replays said they replayed exactly."""
    source, printed = _replays_as_captured(tmp_path, CUT_STREAMS_OTHER_CLIENTS, answers)
    assert printed[0].startswith("> urllib read IncompleteRead IncompleteRead(") and printed[0].endswith("[]"), printed
    assert printed[1].startswith("> urllib readline ended") and printed[1].count("b'data: {") == 3, printed  # its way
    assert printed[2].startswith("> aiohttp ClientPayloadError") and printed[2].count("b'data: {") == 3, printed
    assert printed[3] == "> requests ChunkedEncodingError", printed
    recorded = events(source, "llm_response")
    assert [event["data"].get("streamError", event["data"].get("error", {})).get("type") for event in recorded] == [
        "IncompleteRead", None, "ClientPayloadError", "ChunkedEncodingError"]
    assert all(len(event["data"]["stream"]) == 3 for event in recorded[:3])


CUT_HTTP_STREAMS = """
import asyncio, os
import httpx, urllib3

url = os.environ["BASE"] + "/events"  # no LLM: an http tool's stream
lines = []
try:
    with httpx.stream("POST", url, json={"follow": "A-1"}) as response:
        for line in response.iter_lines():
            lines.append(line[:12])
    print(">", "httpx ended", lines)
except httpx.HTTPError as exc:
    print(">", "httpx", type(exc).__name__, lines)

async def main():
    lines = []
    try:
        async with httpx.AsyncClient() as client:
            async with client.stream("POST", url, json={"follow": "A-2"}) as response:
                async for line in response.aiter_lines():
                    lines.append(line[:12])
        print(">", "httpx async ended", lines)
    except httpx.HTTPError as exc:
        print(">", "httpx async", type(exc).__name__, lines)

asyncio.run(main())
chunks = []
try:
    response = urllib3.PoolManager().request("POST", url, body=b'{"follow": "A-3"}', preload_content=False,
                                             headers={"Content-Type": "application/json"})
    for chunk in response.stream(1024):  # each chunk as it arrives (a replay serves what was read as one)
        chunks.append(chunk)
    print(">", "urllib3 ended", b"".join(chunks).count(b"data: "))
except urllib3.exceptions.HTTPError as exc:
    print(">", "urllib3", type(exc).__name__, b"".join(chunks).count(b"data: "))
"""


def test_an_http_tools_stream_whose_connection_broke_replays_the_same_error(tmp_path, answers):
    """Not an LLM call: an http tool's stream (httpx sync and async, urllib3 unpreloaded) that the server drops after
    three chunks. Before, httpx's replay ended it cleanly (its tool_result had no streamError) and urllib3's capture
    recorded no answer at all (the strict replay stopped there), and under wop urllib3 handed the program none of
    the three chunks (it read through http.client, which waits for as many bytes as asked): now urllib3 yields each
    chunk as it arrives, as without wop, and each client replays the chunks, then the error."""
    source, printed = _replays_as_captured(tmp_path, CUT_HTTP_STREAMS, answers)
    assert [line.split(" [")[0] for line in printed] == [
        "> httpx RemoteProtocolError", "> httpx async RemoteProtocolError", "> urllib3 ProtocolError 3"]
    results = events(source, "tool_result")
    assert [result["data"].get("streamError", {}).get("type") for result in results] == [
        "RemoteProtocolError", "RemoteProtocolError", "ProtocolError"]


DIES_READING_STDLIB_STREAMS = """
import os, sys, urllib.request
import urllib3

url = os.environ["BASE"] + "/slow/events"  # ten chunks 0.1 s apart
if sys.argv[1] == "urllib":
    response = urllib.request.urlopen(urllib.request.Request(url, data=b"{}"))
else:
    response = urllib3.PoolManager().request("POST", url, body=b"{}", preload_content=False)
print(">", [response.readline() for _ in range(2)], flush=True)
raise SystemExit(3)  # the program ends holding the stream
"""


@pytest.mark.parametrize("client", ["urllib", "urllib3"])
def test_a_program_that_ends_holding_a_urllib_or_urllib3_stream_has_what_it_read_recorded(tmp_path, answers, client):
    """Before, the stream's answer was never recorded (only httpx's and aiohttp's open streams were finished as the
    process ended): the strict replay stopped at a call that 'never returned'."""
    (tmp_path / "agent.py").write_text(textwrap.dedent(DIES_READING_STDLIB_STREAMS))
    source = tmp_path / "source"
    captured = run_wop("capture", "--out", str(source), "--", sys.executable, "agent.py", client,
                       env={"BASE": answers.url}, cwd=tmp_path)
    assert captured.returncode == 3, captured.stderr
    (result,) = events(source, "tool_result")
    assert result["data"]["streamComplete"] is False and result["data"]["result"]["body"].count("data: ") >= 1
    answers.shutdown()
    replayed, report = replay(tmp_path, source, "--strict", env={"BASE": answers.url})
    assert report["score"]["score"] == 1.0, replayed.stderr
    assert [line for line in replayed.stderr.splitlines() if line.startswith("> ")] == [
        line for line in captured.stdout.splitlines() if line.startswith("> ")]


CANCELLED_CALLS = """
import asyncio, os
import aiohttp, httpx, openai

base = os.environ["BASE"] + "/hang"

async def main():
    client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="sk-test-0123456789abcdef", max_retries=0)
    try:
        await asyncio.wait_for(client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]), 0.3)
        print(">", "openai answered")
    except asyncio.TimeoutError:
        print(">", "openai too slow: fallback")
    async with httpx.AsyncClient() as http:
        try:
            await asyncio.wait_for(http.post(base + "/orders", json={"id": "A-1"}), 0.3)
            print(">", "httpx answered")
        except asyncio.TimeoutError:
            print(">", "httpx too slow")
    async with aiohttp.ClientSession() as session:
        task = asyncio.create_task(session.post(base + "/orders", json={"id": "A-2"}))
        await asyncio.sleep(0.2)
        print(">", "aiohttp done before the cancel:", task.done())
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            print(">", "aiohttp cancelled")

asyncio.run(main())
"""


def test_an_async_call_the_program_cancelled_replays_to_the_same_cancellation(tmp_path, answers):
    """A call the program cancels (asyncio.wait_for's timeout, task.cancel) before its answer comes is recorded with
    CancelledError. Before, the replay raised that CancelledError at once, out of the call: openai's wait_for let it
    through and the program died (exit 1), a task was done before the program cancelled it. Now the replayed call
    waits about as long as the recorded one lasted, so the program's own timeout or cancel ends it again."""
    source, printed = _replays_as_captured(tmp_path, CANCELLED_CALLS, answers)
    assert printed == ["> openai too slow: fallback", "> httpx too slow", "> aiohttp done before the cancel: False",
                       "> aiohttp cancelled"]
    answers_ = events(source, "llm_response") + events(source, "tool_result")
    assert [answer["data"]["error"]["type"] for answer in answers_] == ["CancelledError"] * 3


TIMED_OUT_STREAMS = """
import asyncio, json, os
import aiohttp, openai

base = os.environ["BASE"] + "/slow"
messages = [{"role": "user", "content": "Where is order A-1?"}]
client = openai.AsyncOpenAI(base_url=base + "/v1", api_key="sk-test-0123456789abcdef", max_retries=0)

async def read_words(stream, words):
    async for chunk in stream:
        words.append(chunk.choices[0].delta.content)

async def read_lines(response, lines):
    async for line in response.content:
        if line.strip():
            lines.append(line[50:60])

async def main():
    got = []
    stream = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
    try:
        await asyncio.wait_for(read_words(stream, got), timeout=0.35)
        print("> openai read it all", len(got))
    except asyncio.TimeoutError:
        print("> openai timed out")
    await stream.close()
    body = json.dumps({"model": "gpt-4o-mini", "messages": messages, "stream": True})
    async with aiohttp.ClientSession() as session:
        async with session.post(base + "/v1/chat/completions", data=body,
                                headers={"Content-Type": "application/json"}) as response:
            try:
                await asyncio.wait_for(read_lines(response, got), timeout=0.35)
                print("> aiohttp read it all", len(got))
            except asyncio.TimeoutError:
                print("> aiohttp timed out")
    got = []
    stream = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
    task = asyncio.ensure_future(read_words(stream, got))
    while not got:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    task.cancel()
    try:
        await task
        print("> openai task ended", len(got))
    except asyncio.CancelledError:
        print("> openai task cancelled")
    await stream.close()

asyncio.run(main())
"""


def test_an_async_stream_the_program_stopped_reading_at_its_timeout_replays_to_the_same_timeout(tmp_path, answers):
    """The server sends ten chunks 0.1 s apart; the program reads the stream (openai AsyncOpenAI over httpx, aiohttp)
    under asyncio.wait_for(..., 0.35), and cancels a third read after 0.25 s: each time it stopped reading (the stream
    recorded incomplete, without an error). Before, the replay served the recorded chunks at once and ended the
    stream: the program read it all and printed "read it all" where it had timed out, and the cancelled task ended."""
    source, printed = _replays_as_captured(tmp_path, TIMED_OUT_STREAMS, answers)
    assert printed == ["> openai timed out", "> aiohttp timed out", "> openai task cancelled"], printed
    recorded = events(source, "llm_response")
    assert len(recorded) == 3 and all(event["data"]["streamComplete"] is False for event in recorded)
    assert not any("streamError" in event["data"] for event in recorded)
