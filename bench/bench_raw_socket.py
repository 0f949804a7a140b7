"""The socket-level recorder adds nothing to connections an adapter already records; what it costs the ones it reads.

Target (issue 34): adapter-recorded calls cost the same whether or not the raw-socket recorder is at work in the
process. Inside real `wop capture` children, against a loopback HTTP server in its own process: CALLS httpx requests
(recorded by the httpx adapter) timed by the child, in runs where the process first made one raw-socket HTTP call
(the recorder loaded, the ssl hook in place) and runs where it made none, alternated ROUNDS times; the ratio of the
medians is what the recorder adds (1.00: nothing). Each child also checks that httpx's socket kept the C socket's
send and recv. For scale, the same raw-socket client is timed plain and recorded.
Run: python bench/bench_raw_socket.py [CALLS] [ROUNDS]
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_spread, user_environment  # noqa: E402

SERVER = r'''
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
'''

CHILD = r'''
import json, socket, sys, time
import httpx

port, calls, raw_first, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]

def raw_call():
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b'POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}')
        while sock.recv(65536):
            pass

if mode == "raw":
    for _ in range(20):
        raw_call()
    start = time.perf_counter()
    for _ in range(calls):
        raw_call()
    print(json.dumps({"us": (time.perf_counter() - start) / calls * 1e6}), file=sys.stderr)
    sys.exit()
if raw_first:
    raw_call()
with httpx.Client() as client:
    for _ in range(50):
        client.post(f"http://127.0.0.1:{port}/orders", json={"order": "A-1"})
    start = time.perf_counter()
    for _ in range(calls):
        client.post(f"http://127.0.0.1:{port}/orders", json={"order": "A-1"})
    elapsed = (time.perf_counter() - start) / calls * 1e6
    pool = client._transport._pool
    sock = pool.connections[0]._connection._network_stream._sock
    untouched = type(sock).send is socket.socket.send and type(sock).recv is socket.socket.recv
print(json.dumps({"us": elapsed, "untouched": untouched}), file=sys.stderr)
'''


def run(child: Path, port: str, calls: int, raw_first: bool, mode: str, out: Path, captured: bool = True) -> dict:
    command = [sys.executable, str(child), port, str(calls), "1" if raw_first else "0", mode]
    if captured:
        command = [sys.executable, "-m", "openwop_cli", "capture", "--out", str(out), "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, env=user_environment(), timeout=600)
    return json.loads(next(line for line in done.stderr.splitlines() if line.startswith('{"us"')))


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as directory:
            child = Path(directory) / "child.py"
            child.write_text(CHILD)
            without, with_raw, plain_raw, recorded_raw, untouched = [], [], [], [], True
            for index in range(rounds):
                first = run(child, port, calls, False, "httpx", Path(directory) / f"a{index}")
                second = run(child, port, calls, True, "httpx", Path(directory) / f"b{index}")
                without.append(first["us"])
                with_raw.append(second["us"])
                untouched = untouched and first["untouched"] and second["untouched"]
                plain_raw.append(run(child, port, calls, False, "raw", Path(directory), captured=False)["us"])
                recorded_raw.append(run(child, port, calls, False, "raw", Path(directory) / f"r{index}")["us"])
        a, a_spread = median_spread(without, ".0f")
        b, b_spread = median_spread(with_raw, ".0f")
        p, p_spread = median_spread(plain_raw, ".0f")
        r, r_spread = median_spread(recorded_raw, ".0f")
        print(f"httpx call (adapter-recorded): recorder idle {a:.0f} us ({a_spread}), recorder at work {b:.0f} us "
              f"({b_spread}): ratio {b / a:.2f} (target 1.00); httpx's socket keeps the C send/recv: {untouched}")
        print(f"raw-socket HTTP call: plain {p:.0f} us ({p_spread}), recorded {r:.0f} us ({r_spread}): ratio {r / p:.2f}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
