"""HTTP over raw sockets, the last line: an HTTP/1.1 client on the `socket` module is recorded with no code and served
offline, plain or TLS, one request per connection or several; dspy 3.x's default client is one."""

import shutil
import ssl
import subprocess

import pytest

from tests.conftest import requires
from tests.fake_provider import FakeProvider
from tests.programs import capture, events, replay, round_trip, unrecorded_connections
from tests.runtime.test_unrecorded_connections import RAW_SOCKET_AGENT

KEEP_ALIVE_AGENT = """
import json, os, socket, ssl
from urllib.parse import urlsplit

def read_answer(stream):
    status = stream.readline().split()[1]
    headers = {}
    while (line := stream.readline().strip()):
        name, _, value = line.decode().partition(":")
        headers[name.lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while (size := int(stream.readline().split(b";")[0], 16)):
            body += stream.read(size)
            stream.readline()
        stream.readline()
    else:
        body = stream.read(int(headers["content-length"]))
    return int(status), body

def post(sock, url, payload):
    body = json.dumps(payload).encode()
    sock.sendall(b"POST %s HTTP/1.1\\r\\nHost: %s\\r\\nContent-Type: application/json\\r\\n" % (url.path.encode(), url.netloc.encode()))
    sock.sendall(b"Content-Length: %d\\r\\n\\r\\n%s" % (len(body), body))

url = urlsplit(os.environ["BASE"] + "/v1/chat/completions")
sock = socket.create_connection((url.hostname, url.port))
if url.scheme == "https":
    context = ssl.create_default_context(cafile=os.environ["CERT"])
    sock = context.wrap_socket(sock, server_hostname=url.hostname)
stream = sock.makefile("rb")
question = os.environ.get("QUESTION", "where is order A-1?")
post(sock, url, {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]})
status, body = read_answer(stream)
print(status, json.loads(body)["choices"][0]["message"]["content"])
post(sock, url, {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "and A-2?"}]})
status, body = read_answer(stream)
words = [json.loads(line[6:])["choices"][0]["delta"].get("content") or "" for line in body.decode().splitlines()
         if line.startswith("data: {")]
print(status, "".join(words).strip())
sock.close()
"""

DSPY_AGENT = """
import os
import dspy

lm = dspy.LM("openai/gpt-4o-mini", api_base=os.environ["BASE"] + "/v1", api_key="sk-test-0123456789", cache=False)
print(lm(os.environ.get("PROMPT", "where is order A-1?")))
"""

TOOL_AGENT = """
import json, os, socket
from urllib.parse import urlsplit
import openwop_cli as wop

@wop.tool
def ask(question):
    url = urlsplit(os.environ["BASE"] + "/v1/chat/completions")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": question}]}).encode()
    with socket.create_connection((url.hostname, url.port)) as sock:
        sock.sendall(b"POST %s HTTP/1.1\\r\\nHost: %s\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n%s"
                     % (url.path.encode(), url.netloc.encode(), len(body), body))
        return sock.makefile("rb").read().split(b"\\r\\n\\r\\n", 1)[1].decode()

print(json.loads(ask("where is order A-1?"))["choices"][0]["message"]["content"])
"""


def test_a_raw_socket_http_client_is_recorded_with_no_code_and_replays_offline(tmp_path):
    requests = round_trip(tmp_path, RAW_SOCKET_AGENT, calls=2, changed={"QUESTION": "where is order B-2?"},
                          json_path="$.messages[0].content")
    assert [request["http"] for request in requests] == [{"method": "POST", "url": requests[0]["http"]["url"]}] * 2
    assert requests[0]["http"]["url"].endswith("/v1/chat/completions") and requests[0]["provider"] == "openai"


def test_dspy_default_client_is_recorded_with_no_code_and_replays_offline(tmp_path):
    requires("dspy")
    (request,) = round_trip(tmp_path, DSPY_AGENT, calls=1, changed={"PROMPT": "where is order B-2?"},
                            json_path="$.messages[0].content")
    assert request["model"] == "gpt-4o-mini" and request["request"]["messages"][0]["content"] == "where is order A-1?"


def test_several_requests_on_one_connection_a_streamed_answer_and_its_replay(tmp_path):
    with FakeProvider() as provider:
        done, source = capture(tmp_path, KEEP_ALIVE_AGENT, {"BASE": provider.url})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "200 answer to where is order A-1?\n200 answer to and A-2?\n"
    answers = [event["data"] for event in events(source, "llm_response")]
    assert [answer.get("streamFormat") for answer in answers] == [None, "sse"]
    assert answers[1]["response"]["text"].strip() == "answer to and A-2?" and not unrecorded_connections(source)
    for attempt in range(2):
        replayed, report = replay(tmp_path, source, env={"BASE": provider.url}, name=f"replay{attempt}")
        assert replayed.returncode == 0 and not report["divergences"], replayed.stderr
        assert done.stdout in replayed.stderr
    changed, report = replay(tmp_path, source, env={"BASE": provider.url, "QUESTION": "B-2?"}, name="changed")
    assert changed.returncode == 1 and report["divergences"][0]["jsonPath"] == "$.messages[0].content"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_https_on_a_raw_socket_is_read_above_the_encryption_and_replays_with_no_server(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    provider = FakeProvider()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    provider.server.socket = context.wrap_socket(provider.server.socket, server_side=True)
    base = provider.url.replace("http://127.0.0.1", "https://localhost")
    with provider:
        done, source = capture(tmp_path, KEEP_ALIVE_AGENT, {"BASE": base, "CERT": str(cert)})
    assert done.returncode == 0, done.stderr
    requests = [event["data"] for event in events(source, "llm_request")]
    assert [request["http"]["url"] for request in requests] == [base + "/v1/chat/completions"] * 2
    assert not unrecorded_connections(source)
    replayed, report = replay(tmp_path, source, env={"BASE": base, "CERT": str(cert)})
    assert replayed.returncode == 0 and not report["divergences"], replayed.stderr
    assert done.stdout in replayed.stderr


def test_a_raw_socket_inside_a_tool_is_the_tools_call_only(tmp_path):
    with FakeProvider() as provider:
        done, source = capture(tmp_path, TOOL_AGENT, {"BASE": provider.url})
    assert done.returncode == 0, done.stderr
    assert [event["data"]["name"] for event in events(source, "tool_call")] == ["ask"]
    assert not events(source, "llm_request") and not unrecorded_connections(source)
    replayed, report = replay(tmp_path, source, env={"BASE": provider.url})
    assert replayed.returncode == 0 and not report["divergences"], replayed.stderr
