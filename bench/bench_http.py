"""HTTP calls to a loopback server: plain, captured by wop, replayed by wop, and the same with VCR.py.

Targets (issue 6): capture adds <= 10% to a loopback call; a replayed call is faster than the plain
call and stays flat as the capture grows (VCR.py scans its cassette linearly). All numbers come from
this run; the captured/plain ratio is measured inside one `wop capture` child (the session switched
off for the plain half). Run: python bench/bench_http.py [REQUESTS ...]   (needs httpx; vcrpy for VCR)
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHILD = r'''
import json, os, sys, time
import httpx
from openwop_cli.runtime import session as wop_session

url, count = sys.argv[1], int(sys.argv[2])
client = httpx.Client()
body = {"order": "A-1", "items": [1, 2, 3]}

def run(offset):
    start = time.perf_counter()
    for index in range(count):
        client.post(url, json={**body, "n": offset + index}).json()
    return (time.perf_counter() - start) / count * 1000

mode = os.environ.get("WOP_MODE")
if mode == "capture":
    # alternate captured and plain rounds (after a warm-up) and keep each side's best round,
    # so neither side pays for connection set-up or a noisy moment alone
    active = wop_session._state["session"]
    rounds, recorded, plain = 5, [], []
    count //= rounds
    for index in range(rounds):
        recorded.append(run(2 * index * count))
        wop_session._state["session"] = None
        plain.append(run((2 * index + 1) * count))
        wop_session._state["session"] = active
    print(json.dumps({"captured": min(recorded), "plain": min(plain)}), file=sys.stderr)
else:  # the replay asks for the captured bodies, in the captured blocks
    rounds = 5
    count //= rounds
    print(json.dumps({"replayed": min(run(2 * index * count) for index in range(rounds))}), file=sys.stderr)
'''


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        reply = json.dumps({"ok": True, "echo": json.loads(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


def wop_numbers(root: Path, url: str, count: int) -> dict:
    program = root / "client.py"
    program.write_text(CHILD)
    capture = root / f"capture-{count}"
    env = {**os.environ, "WOP_HOME": str(root / "home")}
    captured = subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--out", str(capture), "--",
                               sys.executable, str(program), url, str(count)], env=env, capture_output=True, text=True)
    numbers = json.loads(captured.stderr.splitlines()[0])
    # the replayed program asks for the same bodies: served from the capture, network blocked
    replayed = subprocess.run([sys.executable, "-m", "openwop_cli", "replay", str(capture), "--out",
                               str(root / f"replay-{count}"), "--", sys.executable, str(program), url, str(count)],
                              env=env, capture_output=True, text=True)
    numbers.update(json.loads(next(line for line in replayed.stderr.splitlines() if line.startswith("{"))))
    return numbers


def vcr_numbers(root: Path, url: str, count: int) -> dict | None:
    try:
        import httpx
        import vcr
    except ImportError:
        return None
    cassette = str(root / f"cassette-{count}.yaml")
    body = {"order": "A-1", "items": [1, 2, 3]}

    def run(record_mode: str) -> float:
        with vcr.use_cassette(cassette, record_mode=record_mode, match_on=["method", "uri", "body"]):
            client = httpx.Client()
            start = time.perf_counter()
            for index in range(count):
                client.post(url, json={**body, "n": index}).json()
            return (time.perf_counter() - start) / count * 1000

    return {"recording": run("all"), "playing": run("none")}


def main() -> None:
    counts = [int(arg) for arg in sys.argv[1:]] or [300, 1000]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/orders"
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        for count in counts:
            wop = wop_numbers(root, url, count)
            print(f"{count} requests: plain {wop['plain']:.2f} ms/request")
            print(f"  wop capture {wop['captured']:.2f} ms ({(wop['captured'] / wop['plain'] - 1) * 100:+.0f}%, "
                  f"target <= +10%), wop replay {wop['replayed']:.2f} ms ({wop['replayed'] / wop['plain']:.2f}x plain)")
            vcr = vcr_numbers(root, url, count)
            if vcr is None:
                print("  VCR.py: not installed (pip install -e '.[bench]')")
            else:
                print(f"  VCR.py recording {vcr['recording']:.2f} ms, playing back {vcr['playing']:.2f} ms")
    server.shutdown()


if __name__ == "__main__":
    main()
