"""An HTTP exchange's events are the same whoever builds them: `wop capture` from the raw pieces the recorded process
sends (the rule), or the process itself (an in-process capture, a forked child that finishes its parent's call)."""

import os
import socket
import subprocess
import sys
import textwrap
from http.server import BaseHTTPRequestHandler

import pytest

from tests.conftest import http_server, requires, run_wop
from tests.fake_provider import FakeProvider
from tests.programs import OFFLINE_SDKS, events

requires("openai")
requires("anthropic")
requires("aiohttp")

EXCHANGES = """
import asyncio, json, os, urllib.request
import aiohttp, anthropic, httpx, openai, requests, urllib3

base, echo = os.environ["BASE"], os.environ["ECHO"]
oa = openai.OpenAI(base_url=base + "/v1", api_key="sk-test-0123456789abcdef0123456789", max_retries=0)
print(oa.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]).id)
print(len(list(oa.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "s"}],
                                          stream=True))))
an = anthropic.Anthropic(base_url=base, api_key="sk-ant-test-0123456789abcdef", max_retries=0)
with an.messages.stream(model="claude-x", max_tokens=9, messages=[{"role": "user", "content": "s"}]) as s:
    print("".join(s.text_stream))
with httpx.Client(headers={"Authorization": "Bearer sk-live-abcdefabcdefabcdef"}) as client:
    client.post(echo + "/orders?key=SECRET-QUERY-KEY&page=2", json={"order": "A-1", "note": "caf\\u00e9"})
    client.post(echo + "/bytes", content=bytes(range(256)), headers={"content-type": "application/octet-stream"})
    client.post(echo + "/text", content="plain \\u00e9 text", headers={"content-type": "text/plain"})
    client.get(echo + "/gzip")
    try:
        client.get("http://127.0.0.1:9/refused")
    except httpx.ConnectError:
        pass
requests.post(base + "/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "r"}]})
requests.post(echo + "/form", data={"a": "1"}, headers={"x-api-key": "secret-key-123"})
urllib3.PoolManager().request("POST", base + "/u3", body=json.dumps({"x": 1}),
                              headers={"content-type": "application/json"})
urllib.request.urlopen(urllib.request.Request(base + "/stdlib", data=b'{"y": 2}',
                                              headers={"Content-Type": "application/json"})).read()

async def aio():
    async with aiohttp.ClientSession() as session:
        async with session.post(base + "/v1/chat/completions",
                                json={"model": "m", "messages": [{"role": "user", "content": "a"}], "t": (1, 2)}) as r:
            await r.read()
        async with session.post(echo + "/aio", data=b"\\xff\\xfe raw") as r:
            await r.read()
        async with session.post(echo + "/aio-json", json="just text") as r:
            await r.read()

asyncio.run(aio())
"""

IN_PROCESS = """
import runpy
import openwop_cli as wop
with wop.capture(out="own"):
    runpy.run_path("agent.py", run_name="__main__")
"""
EXCHANGE_TYPES = ("llm_request", "llm_response", "tool_call", "tool_result")


class _Echo(BaseHTTPRequestHandler):
    """Answers any POST with the size of its body, and GET /gzip with a gzip-encoded text."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send(b'{"got": %d}' % len(body), "application/json")

    def do_GET(self) -> None:  # noqa: N802
        import gzip

        self._send(gzip.compress(b"zipped " * 20, mtime=0), "text/plain", encoding="gzip")

    def _send(self, data: bytes, kind: str, encoding: str | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def _exchanges(capture_dir) -> list[tuple]:
    """The capture's exchange events as (type, data, thread, site): what must not depend on who built them (the
    servers' date headers aside)."""
    found = [event for event in events(capture_dir) if event["type"] in EXCHANGE_TYPES]
    for event in found:
        for headers in (event["data"].get("headers"), (event["data"].get("result") or {}).get("headers")):
            if headers:
                headers.pop("date", None)
    return [(event["type"], event["data"], event["origin"]["thread"], event["origin"].get("site")) for event in found]


def test_every_adapters_exchanges_are_recorded_alike_by_wop_capture_and_by_the_program_itself(tmp_path):
    (tmp_path / "agent.py").write_text(textwrap.dedent(EXCHANGES))
    with http_server(_Echo) as echo, FakeProvider() as provider:
        env = {**OFFLINE_SDKS, "BASE": provider.url, "ECHO": echo}
        built_by_wop = run_wop("capture", "--out", str(tmp_path / "wop"), "--", sys.executable, "agent.py",
                               env=env, cwd=tmp_path)
        assert built_by_wop.returncode == 0, built_by_wop.stderr
        in_process = subprocess.run([sys.executable, "-c", IN_PROCESS], cwd=tmp_path, capture_output=True,
                                    text=True, timeout=120, env={**os.environ, **env})
        assert in_process.returncode == 0, in_process.stderr
    recorded = _exchanges(tmp_path / "wop")
    assert len(recorded) == 2 * 15
    assert recorded == _exchanges(tmp_path / "own")
    on_disk = (tmp_path / "wop" / "events.jsonl").read_bytes()
    assert b"SECRET-QUERY-KEY" not in on_disk and b"sk-live-" not in on_disk and b"secret-key-123" not in on_disk
    bodies = {data["args"]["url"].rsplit("/", 1)[-1]: data["args"]["body"] for kind, data, *_ in recorded
              if kind == "tool_call"}
    assert bodies["bytes"] == bytes(range(256)) and bodies["text"] == "plain \u00e9 text"
    assert bodies["aio"] == b"\xff\xfe raw" and bodies["aio-json"] == "just text" and bodies["orders?key=***REDACTED***&page=2"]["note"] == "caf\u00e9"


FORKED = """
import os, sys
import httpx

with httpx.Client() as client:
    with client.stream("POST", os.environ["BASE"] + "/v1/chat/completions",
                       json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "fork"}]}) as r:
        child = os.fork()
        if child == 0:
            print("child read", len(r.read()), flush=True)
            os._exit(0)
        os.waitpid(child, 0)
        print("parent done", flush=True)
        os._exit(0)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def _captured(tmp_path, source: str):
    """`wop capture` of source as agent.py, against a fake provider at $BASE, into tmp_path/c."""
    (tmp_path / "agent.py").write_text(textwrap.dedent(source))
    with FakeProvider() as provider:
        done = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, "agent.py",
                       env={"BASE": provider.url}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done


def test_an_answer_a_forked_child_reads_for_its_parents_request_is_recorded_whole(tmp_path):
    done = _captured(tmp_path, FORKED)
    assert "child read" in done.stdout and "messages from recorded processes" not in done.stderr
    (request,) = events(tmp_path / "c", "llm_request")
    (response,) = events(tmp_path / "c", "llm_response")
    assert response["data"]["callId"] == request["data"]["callId"]
    assert response["origin"]["pid"] != request["origin"]["pid"]
    assert response["data"]["response"]["text"] == "answer to fork " and response["data"].get("streamComplete", True)


HOSTILE = """
import os, pickle, socket
import httpx

def frame(*entries):
    payload = b"".join(pickle.dumps([entry], 5) for entry in entries)
    return b"\\x00" + len(payload).to_bytes(4, "big") + payload

origin = b'{"pid": 1, "thread": "T"}'
request = ("", 7, "POST", "http://127.0.0.1:9/x", [(b"A", b"a", b"1")], False)
address = os.environ["WOP_SINK"].partition(":")[2]
with socket.socket(socket.AF_UNIX) as sock:
    sock.connect(address)
    sock.sendall(frame(("raw_response", 1, None, ("", 999, 200, {}, False, True), b""),  # no request was sent raw
                       ("raw_request", 1, origin, (1, 2), b""),                         # pieces missing
                       ("raw_nonsense", 1, origin, ("", 1), b""),                       # a kind wop does not know
                       ("raw_request", 1, {"pid": 1}, request, b""),                    # an origin not sent as JSON
                       ("raw_request", 1, b"[1]", request, b""),                        # JSON, not an object
                       ("raw_request", 1, None, request, b""),                          # a request without one
                       ("raw_request", 2, b'{"pid": 1,\\n "thread": "N"}', request, b"{}"),  # a newline: fine
                       ("raw_response", 3, None, ("", 7, 200, [], False, True), b"{}"))       # its answer
                 + frame((os.system, "echo owned > owned"))                             # names a function
                 + b"\\x00\\x00\\x00\\x00\\x03abc"                                      # not a pickle
                 + b"half a line" + frame(("raw_nonsense", 1, origin, ("", 1), b"")))    # a line cut by a frame
httpx.post(os.environ["BASE"] + "/after", json={"still": "recorded"})
print("ok")
"""


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="the channel is a unix socket here")
def test_raw_pieces_wop_cannot_build_an_event_from_are_counted_and_the_capture_goes_on(tmp_path):
    done = _captured(tmp_path, HOSTILE)
    assert "10 messages from recorded processes" in done.stderr and not (tmp_path / "owned").exists()
    calls, results = events(tmp_path / "c", "tool_call"), events(tmp_path / "c", "tool_result")
    assert len(calls) == 2 and calls[0]["data"]["args"]["url"] == "http://127.0.0.1:9/x"
    assert calls[1]["data"]["args"]["body"] == {"still": "recorded"}
    assert [result["data"]["callId"] for result in results] == [call["data"]["callId"] for call in calls]
    # an origin is written anew from what it holds: its newline never reaches events.jsonl's lines
    assert calls[0]["origin"] == {"pid": 1, "thread": "N"} and results[0]["origin"] == {"pid": 1, "thread": "N"}



CRASHING = """
import os, socket
import httpx

# marshal's bytes for a tuple marked for reference whose first item is a dict keyed by a reference to that tuple,
# still empty: marshal's loader hashes the half-read tuple and crashes; frames are pickles, and this is none
crashing = (b"\\xa8" + (2).to_bytes(4, "little") + b"{r" + (0).to_bytes(4, "little") + b"i" + (1).to_bytes(4, "little")
            + b"0N")
address = os.environ["WOP_SINK"].partition(":")[2]
with socket.socket(socket.AF_UNIX) as sock:
    sock.connect(address)
    sock.sendall(b"\\x00" + len(crashing).to_bytes(4, "big") + crashing)
httpx.post(os.environ["BASE"] + "/after", json={"still": "recorded"})
print("ok")
"""


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="the channel is a unix socket here")
def test_a_frame_that_would_crash_marshals_loader_is_one_malformed_message(tmp_path):
    done = _captured(tmp_path, CRASHING)
    assert "ok" in done.stdout and "1 messages from recorded processes" in done.stderr
    (call,) = events(tmp_path / "c", "tool_call")
    (result,) = events(tmp_path / "c", "tool_result")
    assert call["data"]["args"]["body"] == {"still": "recorded"} and result["data"]["callId"] == call["data"]["callId"]


SUBCLASSED = """
import enum, os
import httpx, requests

class Mode(enum.StrEnum):
    FAST = "fast"

class Url(str):
    pass

class Body(bytes):
    pass

base = os.environ["BASE"]
requests.post(Url(base + "/orders"), json={"n": 1}, headers={"X-Mode": Mode.FAST})
requests.post(base + "/orders", data=Body(b'{"n": 2}'), headers={"content-type": "application/json"})
requests.post(base + "/orders", data=b'{"n": 2}', headers={"content-type": "application/json"})
httpx.post(base + "/orders", json={"n": 3}, headers={Body(b"X-Mode"): Body(b"fast")})  # httpx keeps bytes as given
print("ok")
"""


def test_values_of_builtin_subclasses_in_a_request_are_recorded_as_their_values(tmp_path):
    """A StrEnum header, a URL of a str subclass, a body of a bytes subclass: each exchange is recorded (they went to
    wop capture as pickles naming their classes, which it refuses: the whole frame was lost)."""
    done = _captured(tmp_path, SUBCLASSED)
    assert "ok" in done.stdout and "messages from recorded processes" not in done.stderr, done.stderr
    bodies = [call["data"]["args"]["body"] for call in events(tmp_path / "c", "tool_call")]
    assert len(bodies) == 4 and bodies[0] == {"n": 1} and bodies[3] == {"n": 3}
    assert bodies[2] == {"n": 2} and bodies[1] in ({"n": 2}, '{"n": 2}')  # (a bytes subclass's body: as text)
    assert len(events(tmp_path / "c", "tool_result")) == 4


def test_httpx_headers_kept_otherwise_than_in_a_list_are_still_read():
    """The httpx adapter reads httpx's own list of header triples; a release that keeps its headers another way has
    them copied by header_snapshot, and a stream or an encoded body is still told apart."""
    import httpx

    from openwop_cli.runtime.adapters.httpx_transport import _content_headers, _snapshot

    class OtherHeaders:  # headers as a later httpx might hold them: items(), no _list
        def items(self):
            return [("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip")]

    assert _content_headers(_snapshot(OtherHeaders())) == (b"text/event-stream", True)
    assert _content_headers(_snapshot(httpx.Headers({"content-type": "application/json"}))) == (b"application/json",
                                                                                                  False)


ORIGINS = """
import asyncio, os, threading
from concurrent.futures import ThreadPoolExecutor
import httpx

echo = os.environ["ECHO"]

def call(path):
    httpx.post(echo + path, json={"p": path})

def other_site(path):
    httpx.post(echo + path, json={"p": path})

call("/main")
other_site("/main-other")
call("/main")

def worker():
    call("/worker")
    threading.current_thread().name = "renamed"
    call("/renamed")

thread = threading.Thread(target=worker, name="worker-1")
thread.start()
thread.join()
with ThreadPoolExecutor(2) as pool:
    list(pool.map(call, ["/pool-a", "/pool-b"]))

async def tasks():
    async with httpx.AsyncClient() as client:
        async def one(path):
            await client.post(echo + path, json={"p": path})
        await asyncio.gather(asyncio.create_task(one("/task-a"), name="a"),
                             asyncio.create_task(one("/task-b"), name="b"))

asyncio.run(tasks())
"""


def test_each_exchange_sent_raw_has_the_origin_of_its_thread_task_and_site_and_its_answer_the_same_without_site(
        tmp_path):
    """The raw pieces carry their origin as JSON a process remembers by thread, pool task, asyncio task and site: a
    renamed thread, a second site, pool tasks and asyncio tasks are each recorded as the program itself records them,
    and an answer has its request's origin without the site."""
    (tmp_path / "agent.py").write_text(textwrap.dedent(ORIGINS))
    with http_server(_Echo) as echo:
        done = run_wop("capture", "--out", str(tmp_path / "wop"), "--", sys.executable, "agent.py",
                       env={"ECHO": echo}, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        in_process = subprocess.run([sys.executable, "-c", IN_PROCESS], cwd=tmp_path, capture_output=True, text=True,
                                    timeout=120, env={**os.environ, "ECHO": echo})
        assert in_process.returncode == 0, in_process.stderr

    def origins(capture_dir):
        """{(body's path, its n-th call): [request's origin, answer's origin]}, without pids."""
        paths, found = {}, {}
        for event in events(capture_dir):
            if event["type"] == "tool_call":
                path = event["data"]["args"]["body"]["p"]
                paths[event["data"]["callId"]] = (path, sum(key[0] == path for key in found))
            if event["type"] in ("tool_call", "tool_result"):
                origin = {key: value for key, value in event["origin"].items() if key != "pid"}
                found.setdefault(paths[event["data"]["callId"]], []).append(origin)
        return found

    recorded, own = origins(tmp_path / "wop"), origins(tmp_path / "own")
    assert len(recorded) == 9
    for request, answer in recorded.values():
        assert answer == {key: value for key, value in request.items() if key != "site"}
    pooled = [("/pool-a", 0), ("/pool-b", 0)]  # which worker thread runs which task changes from run to run
    assert {key: value for key, value in recorded.items() if key not in pooled} == {
        key: value for key, value in own.items() if key not in pooled}
    assert sorted(recorded[key][0]["poolTask"] for key in pooled) == sorted(own[key][0]["poolTask"] for key in pooled)
    # a thread keeps its stable name (runtime.lineage) when the program renames it
    assert recorded[("/worker", 0)][0]["thread"] == recorded[("/renamed", 0)][0]["thread"] == "MainThread/worker#1"
    assert recorded[("/main", 0)][0]["site"] == recorded[("/main", 1)][0]["site"]
    assert recorded[("/main", 0)][0]["site"] != recorded[("/main-other", 0)][0]["site"]
    assert {recorded[("/task-a", 0)][0]["task"], recorded[("/task-b", 0)][0]["task"]} == {"tasks#1/tasks.one#1",
                                                                                          "tasks#1/tasks.one#2"}
