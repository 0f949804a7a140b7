"""What recording a websocket frame costs, on the Sans-I/O protocol every websockets client runs.

Target (issue 34): <= 10 us added per frame. Measured inside a real `wop capture` child (the session and the
adapter installed as in any recorded program, events sent to `wop capture`): a client protocol in the open state
sends a realtime-sized JSON message (send_text + data_to_send) and takes in the server's answer frame
(receive_data + events_received) — two frames — once with the connection recorded and once through the same
methods of websockets' own Protocol on an unrecorded one, interleaved, best of ROUNDS. No network: a round trip's
network time would drown the difference (a loopback echo takes 200-600 us here, and moves by more than that).
Run: python bench/bench_websocket.py [FRAMES] [ROUNDS]
"""

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import user_environment  # noqa: E402

CHILD = r'''
import sys, time
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import Protocol
from websockets.server import ServerProtocol
from websockets.uri import parse_uri
from openwop_cli.runtime.adapters import websockets_adapter
from openwop_cli.runtime.session import current

count, rounds = int(sys.argv[1]), int(sys.argv[2])
message = b'{"type": "input_audio_buffer.append", "audio": "' + b"A" * 400 + b'"}'
answer = Frame(Opcode.TEXT, b'{"type": "response.output_text.delta", "delta": "hello "}').serialize(mask=False)

def protocol(recorded):
    made = ClientProtocol(parse_uri("ws://127.0.0.1:9/realtime"))
    request = made.connect()
    made.send_request(request)
    made.data_to_send()
    made.receive_data(ServerProtocol().accept(request).serialize())
    made.events_received()
    if recorded:
        made._wop = websockets_adapter._Recording(current(), "ws://127.0.0.1:9/realtime")
    return made

def plain(made):
    start = time.perf_counter()
    for _ in range(count):
        Protocol.send_text(made, message)
        made.data_to_send()
        Protocol.receive_data(made, answer)
        Protocol.events_received(made)
    return (time.perf_counter() - start) / count / 2 * 1e6

def recorded(made):
    start = time.perf_counter()
    for _ in range(count):
        made.send_text(message)
        made.data_to_send()
        made.receive_data(answer)
        made.events_received()
    return (time.perf_counter() - start) / count / 2 * 1e6

best = {"plain": float("inf"), "recorded": float("inf")}
for _ in range(rounds):
    best["plain"] = min(best["plain"], plain(protocol(False)))
    best["recorded"] = min(best["recorded"], recorded(protocol(True)))
print(f"per frame: plain {best['plain']:.2f} us, recorded {best['recorded']:.2f} us, "
      f"added {best['recorded'] - best['plain']:.2f} us (target <= 10), ratio {best['recorded'] / best['plain']:.2f}")
'''


def main() -> None:
    frames = sys.argv[1] if len(sys.argv) > 1 else "5000"
    rounds = sys.argv[2] if len(sys.argv) > 2 else "7"
    with tempfile.TemporaryDirectory() as directory:
        child = Path(directory) / "child.py"
        child.write_text(CHILD)
        for run in range(3):
            done = subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--out", f"{directory}/c{run}", "--",
                                   sys.executable, str(child), frames, rounds],
                                  capture_output=True, text=True, env=user_environment(), timeout=600)
            print(f"run {run + 1}: " + (done.stdout.strip() or done.stderr.strip()[-500:]))


if __name__ == "__main__":
    main()
