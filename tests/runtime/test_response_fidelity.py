"""A replayed response reads as the live one did. Each test captures a program against a server on 127.0.0.1 that
answers with exactly the header lines it is given, replays it strictly with the server gone, and compares what the
program printed both times (for a client that does not decode, what was recorded)."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.programs import capture, events, replay

pytest.importorskip("aiohttp")

ROUTES: dict[str, tuple[list[tuple[str, str]], bytes]] = {
    "/repeated": ([("Link", "</a>; rel=first"), ("Vary", "Accept"), ("Set-Cookie", "session=s3cr3t-one"),
                   ("Link", "</b>; rel=next"), ("Vary", "Origin"), ("Set-Cookie", "theme=dark")], b"ok"),
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


def _replays_as_captured(tmp_path, script: str, server: ThreadingHTTPServer):
    """Capture script against server, replay it strictly with the server gone; assert the program printed the same
    lines (those starting with '> ') both times. Returns the capture's directory."""
    captured, source = capture(tmp_path, script, {"BASE": server.url})
    assert captured.returncode == 0, captured.stderr
    server.shutdown()
    replayed, report = replay(tmp_path, source, "--strict", env={"BASE": server.url})
    assert replayed.returncode == 0, replayed.stderr
    assert report["score"]["score"] == 1.0
    printed = [line for line in replayed.stderr.splitlines() if line.startswith("> ")]
    assert printed == [line for line in captured.stdout.splitlines() if line.startswith("> ")]
    return source


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
    source = _replays_as_captured(tmp_path, REPEATED, answers)
    for event in events(source, "tool_result"):
        headers = event["data"]["result"]["headers"]
        assert headers["link"] == "</a>; rel=first, </b>; rel=next" and headers["vary"] == "Accept, Origin"
        assert "set-cookie" not in headers
    assert b"s3cr3t" not in (source / "events.jsonl").read_bytes()
