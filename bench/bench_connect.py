"""What the connection watcher costs a socket connect, and that it costs nothing on send/recv.

Target (issue 14): <= 2 us added to a connect; send/recv untouched. Measured inside a real
`wop capture` child (the session and the watcher installed as in any recorded program): loopback
connects to a listening socket through the watched `socket.socket.connect` (a destination already
reported: the common repeat) and inside an open boundary (an adapter's own connection), against
the unwatched C connect on the same sockets, interleaved, best of ROUNDS. send/recv are checked
to be the C methods themselves. Run: python bench/bench_connect.py [CONNECTS] [ROUNDS]
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import json, socket, sys, time
from openwop_cli.runtime.session import enter_boundary, exit_boundary

count, rounds = int(sys.argv[1]), int(sys.argv[2])
server = socket.create_server(("127.0.0.1", 0), backlog=4096)
address = server.getsockname()
unwatched = socket.socket.__mro__[1].connect  # the C method the watcher wraps
watched = socket.socket.connect

def connects(connect):
    sockets = [socket.socket() for _ in range(count)]
    start = time.perf_counter()
    for sock in sockets:
        connect(sock, address)
    elapsed = time.perf_counter() - start
    for sock in sockets:
        sock.close()
    while True:  # empty the backlog
        server.setblocking(False)
        try:
            server.accept()[0].close()
        except BlockingIOError:
            break
    return elapsed / count * 1e6

connects(watched)  # the first connection to the destination is reported (once)
best = {"plain": float("inf"), "watched": float("inf"), "boundary": float("inf")}
for _ in range(rounds):
    best["plain"] = min(best["plain"], connects(unwatched))
    best["watched"] = min(best["watched"], connects(watched))
    token = enter_boundary()
    best["boundary"] = min(best["boundary"], connects(watched))
    exit_boundary(token)
best["untouched"] = [name for name in ("send", "sendall", "recv", "recv_into")
                     if getattr(socket.socket, name) is getattr(socket.socket.__mro__[1], name)]
best["wrapped"] = watched is not unwatched
print(json.dumps(best), file=sys.stderr)
'''


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    with tempfile.TemporaryDirectory() as temp:
        program = Path(temp) / "connects.py"
        program.write_text(CHILD)
        env = {**os.environ, "WOP_HOME": str(Path(temp) / "home")}
        done = subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--out", str(Path(temp) / "c"), "--",
                               sys.executable, str(program), str(count), str(rounds)],
                              env=env, capture_output=True, text=True, check=True)
    result = json.loads(next(line for line in done.stderr.splitlines() if line.startswith("{")))
    assert result["wrapped"], "the watcher is not installed"
    plain = result["plain"]
    print(f"loopback connect, best of {rounds} x {count}: unwatched {plain:.2f} us")
    for kind, label in (("watched", "watched (outside any boundary)"), ("boundary", "watched, inside a boundary")):
        print(f"  {label:<32} {result[kind]:.2f} us  +{result[kind] - plain:.2f} us (target <= 2 us)")
    print(f"  send/sendall/recv/recv_into untouched: {', '.join(result['untouched'])}")


if __name__ == "__main__":
    main()
