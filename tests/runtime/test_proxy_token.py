"""`--proxy` serves only the program wop started: its base URLs carry a token made for the run, and a request from
any other local process (no token, a wrong one) gets 403 and is neither forwarded nor recorded."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import orjson

from openwop_cli.format.reader import CaptureReader
from tests.fake_provider import FakeProvider

PROGRAM = """
import http.client, json, os, pathlib, sys, time, urllib.parse
base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
pathlib.Path(sys.argv[1]).write_text(os.environ["WOP_PROXY"])
go = pathlib.Path(sys.argv[2])
while not go.exists():
    time.sleep(0.02)
connection = http.client.HTTPConnection(base.netloc)
body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "from the program"}]})
connection.request("POST", base.path + "/chat/completions", body, {"content-type": "application/json"})
print(json.loads(connection.getresponse().read())["choices"][0]["message"]["content"])
"""


def post(url: str) -> int:
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "from elsewhere"}]}).encode()
    request = urllib.request.Request(url, body, {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_only_requests_carrying_the_runs_token_reach_the_proxy(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(PROGRAM)
    address, go, out = tmp_path / "address", tmp_path / "go", tmp_path / "capture"
    with FakeProvider() as provider:
        env = {**os.environ, "OPENAI_BASE_URL": provider.url + "/v1", "NO_COLOR": "1"}
        wop = subprocess.Popen([sys.executable, "-m", "openwop_cli", "capture", "--proxy", "--out", str(out), "--",
                                sys.executable, str(program), str(address), str(go)], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not address.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            proxy = f"http://{address.read_text()}"
            refused = [post(f"{proxy}/openai/v1/chat/completions"),
                       post(f"{proxy}/not-the-token/openai/v1/chat/completions"),
                       post(f"{proxy}//openai/v1/chat/completions")]
            go.touch()
            stdout, stderr = wop.communicate(timeout=60)
        finally:
            if wop.poll() is None:
                os.killpg(wop.pid, signal.SIGKILL)
        assert refused == [403, 403, 403]
        assert wop.returncode == 0, stderr
        assert stdout.strip() == "answer to from the program"
        assert [request["messages"][0]["content"] for request in provider.requests] == ["from the program"]
    requests = [event for event in CaptureReader(out) if event["type"] == "llm_request"]
    assert len(requests) == 1 and b"from elsewhere" not in (out / "events.jsonl").read_bytes()
    token_free = orjson.loads((out / "events.jsonl").read_bytes().splitlines()[1])
    assert token_free["data"]["http"]["url"].startswith(provider.url + "/v1/chat/completions")
