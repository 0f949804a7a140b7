"""Nothing is missed silently: a connection no adapter recorded that is not HTTP is named when the capture ends, is
the first divergence of its replay, and a raw-socket HTTP client is recorded after all through --proxy too."""

import socket
import socketserver
import threading
from contextlib import contextmanager

import orjson

from openwop_cli.report.summary import summarize
from openwop_cli.runtime.connections import describe
from tests.fake_provider import FakeProvider
from tests.programs import capture, events, replay, unrecorded_connections

RAW_SOCKET_AGENT = """
import json, os, socket
from urllib.parse import urlsplit

def ask(base, question):
    url = urlsplit(base + "/chat/completions")
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]}).encode()
    with socket.create_connection((url.hostname, url.port)) as sock:
        sock.sendall(b"POST %s HTTP/1.1\\r\\nHost: %s\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n"
                     b"Connection: close\\r\\n\\r\\n%s" % (url.path.encode(), url.netloc.encode(), len(body), body))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return json.loads(answer.split(b"\\r\\n\\r\\n", 1)[1])["choices"][0]["message"]["content"]

base = os.environ.get("OPENAI_BASE_URL") or os.environ["BASE"] + "/v1"
print(ask(base, os.environ.get("QUESTION", "where is order A-1?")))
print(ask(base, "and order A-2?"))
"""


LINE_PROTOCOL_AGENT = """
import os, socket

def ask(port, order):
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"LOOKUP %s\\r\\n" % order.encode())
        return sock.makefile("rb").readline().decode().strip()

port = int(os.environ["PORT"])
print(ask(port, os.environ.get("ORDER", "A-1")))
print(ask(port, "A-2"))
"""


@contextmanager
def line_server():
    """A TCP server on 127.0.0.1 answering `LOOKUP <order>` lines (not HTTP): its host:port."""

    class Lookup(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.wfile.write(b"shipped " + self.rfile.readline().split()[-1] + b"\r\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Lookup)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_raw_socket_client_is_named_on_the_last_line_and_is_the_first_divergence_of_its_replay(tmp_path):
    with line_server() as destination:
        done, source = capture(tmp_path, LINE_PROTOCOL_AGENT, {"PORT": destination.rsplit(":", 1)[1]})
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("captured ")
    assert f"2 connections to {destination} (opened by agent.py:5) were not recorded" in last and "--proxy" in last
    recorded = [event["data"] for event in unrecorded_connections(source)]
    assert len(recorded) == 1 and recorded[0]["unrecorded"] is True and recorded[0]["key"] == destination
    assert recorded[0]["value"]["site"].items() >= {"file": "agent.py", "line": 5, "function": "ask"}.items()
    assert summarize(unrecorded_connections(source)[0]) == (f"connection to {destination} not recorded "
                                                                "(opened by agent.py:5)")
    assert done.stdout == "shipped A-1\nshipped A-2\n"

    replayed, report = replay(tmp_path, source, env={"PORT": destination.rsplit(":", 1)[1]})
    assert replayed.returncode == 1
    assert "in the capture, connections to" in replayed.stderr.splitlines()[0]  # warned up front
    assert len(report["divergences"]) == 1
    blocked = report["divergences"][0]
    assert (blocked["code"], blocked["eventSeq"]) == ("replay_network_blocked", 1)
    observed = blocked["observedValue"]
    assert (observed["host"], observed["port"]) == ("127.0.0.1", int(destination.rsplit(":", 1)[1]))
    assert observed["site"].items() >= {"file": "agent.py", "line": 5, "function": "ask"}.items()
    assert blocked["expectedValue"] == recorded[0]["value"] and "--proxy" in blocked["detail"]
    assert blocked["expected"]["seq"] == 1 and blocked["observed"]["type"] == "nondeterministic"


def test_the_same_raw_socket_client_records_and_replays_through_the_proxy(tmp_path):
    with FakeProvider() as provider:
        env = {"OPENAI_BASE_URL": provider.url + "/v1", "BASE": provider.url}
        done, source = capture(tmp_path, RAW_SOCKET_AGENT, env, "--proxy", "--strict-transports")
        assert done.returncode == 0, done.stderr
        assert len(provider.requests) == 2
    assert "not recorded" not in done.stderr
    assert [event["type"] for event in events(source)] == [
        "run_start", "llm_request", "llm_response", "llm_request", "llm_response", "run_end"]
    replayed, report = replay(tmp_path, source, env=env)
    assert replayed.returncode == 0 and not report["divergences"], replayed.stderr
    assert done.stdout in replayed.stderr
    changed, report = replay(tmp_path, source, env={**env, "QUESTION": "where is order B-2?"}, name="changed")
    assert changed.returncode == 1
    assert report["divergences"][0]["jsonPath"] == "$.messages[0].content"


def test_strict_transports_turns_an_unrecorded_connection_into_exit_1(tmp_path):
    with line_server() as destination:
        env = {"PORT": destination.rsplit(":", 1)[1]}
        done, source = capture(tmp_path, LINE_PROTOCOL_AGENT, env, "--strict-transports")
        as_json, _ = capture(tmp_path, LINE_PROTOCOL_AGENT, env, "--strict-transports", "--json", name="json")
    assert done.returncode == 1
    assert "--strict-transports" in done.stderr and "were not recorded" in done.stderr
    assert (source / "manifest.json").is_file()
    assert as_json.returncode == 1
    summary = orjson.loads(as_json.stderr.strip().splitlines()[-1])
    assert [(c["host"], c["count"], c["site"]["file"]) for c in summary["unrecordedConnections"]] == [
        ("127.0.0.1", 2, "agent.py")]


def test_local_ipc_and_calls_inside_boundaries_are_not_reported(tmp_path):
    script = """
        import os, socket, tempfile, threading
        import requests

        path = os.path.join(tempfile.mkdtemp(), "ipc.sock")
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen()
        threading.Thread(target=lambda: server.accept(), daemon=True).start()
        socket.socket(socket.AF_UNIX).connect(path)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.connect(("127.0.0.1", 9))
        print(requests.get(os.environ["BASE"] + "/status").json()["ok"])
    """
    with FakeProvider() as provider:
        done, source = capture(tmp_path, script, {"BASE": provider.url}, "--strict-transports")
    assert done.returncode == 0, done.stderr
    assert not unrecorded_connections(source) and len(events(source, "tool_call")) == 1


def test_a_connection_from_a_thread_and_a_library_names_the_first_frame_outside_the_stdlib(tmp_path):
    script = """
        import os, socketserver, threading
        import http.client

        def probe():
            connection = http.client.HTTPConnection("127.0.0.1", int(os.environ["PORT"]))
            connection.connect()  # below request(): no adapter sees this
            connection.close()

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
    """
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=lambda: server.accept(), daemon=True).start()
    try:
        done, source = capture(tmp_path, script, {"PORT": str(server.getsockname()[1])})
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    (event,) = unrecorded_connections(source)
    assert event["data"]["value"]["site"].items() >= {"file": "agent.py", "line": 7, "function": "probe"}.items()
    assert event["origin"]["thread"] != "MainThread"


def test_describe_says_how_many_where_and_who_opened_them():
    one = {"host": "127.0.0.1", "port": 8000, "count": 1, "site": {"file": "a.py", "line": 3}}
    assert describe([one]) == ("1 connection to 127.0.0.1:8000 (opened by a.py:3) was not recorded: "
                               "replay cannot serve it; use --proxy")
    assert describe([{**one, "count": 2}, {"host": "example.com", "port": 443}]).startswith(
        "2 connections to 127.0.0.1:8000 (opened by a.py:3), connections to example.com:443 were not recorded")


def test_each_capture_in_a_process_reports_its_own_unrecorded_connections(tmp_path):
    import openwop_cli as wop

    server = socket.create_server(("127.0.0.1", 0), backlog=16)
    address = server.getsockname()
    try:
        for name in ("first", "second"):
            with wop.capture(out=tmp_path / name):
                socket.create_connection(address).close()
                socket.create_connection(address).close()
        socket.create_connection(address).close()  # no capture: nothing to record into
    finally:
        server.close()
    for name in ("first", "second"):
        (event,) = unrecorded_connections(tmp_path / name)
        assert event["data"]["key"] == f"127.0.0.1:{address[1]}"
        assert event["data"]["value"]["site"]["file"].endswith("test_unrecorded_connections.py")
