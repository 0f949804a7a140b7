"""What recording a websocket frame costs, on the Sans-I/O protocol every websockets client runs.

Target (issue 34): <= 10 us added per frame. Measured inside a real `wop capture` child (the session and the
adapter installed as in any recorded program, events sent to `wop capture`): a client protocol in the open state
sends a realtime-sized JSON message (send_text + data_to_send) and takes in the server's answer frame
(receive_data + events_received) — two frames — once with the connection recorded and once through the same
methods of websockets' own Protocol on an unrecorded one, interleaved, ROUNDS of FRAMES each. No network: a round
trip's network time would drown the difference (a loopback echo takes 200-600 us here, and moves by more than that).

CPU time, not wall time (the machine is shared): `thread` is the program thread's CPU (what the program's own
calls pay), `process` the whole process's, taken around the loop and the send of everything it queued (the flusher
thread's work too: what recording costs the program in all). A round stays below the sender's backlog (8 MiB), past
which the program's thread sends the queue itself. Each figure is the added cost per frame: min / median / max over
the rounds, with the load average as the run starts. Run: python bench/bench_websocket.py [FRAMES] [ROUNDS]
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import user_environment  # noqa: E402

CHILD = r'''
import statistics, sys, time
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
session = current()

def protocol(recorded):
    made = ClientProtocol(parse_uri("ws://127.0.0.1:9/realtime"))
    request = made.connect()
    made.send_request(request)
    made.data_to_send()
    made.receive_data(ServerProtocol().accept(request).serialize())
    made.events_received()
    if recorded:
        made._wop = websockets_adapter._Recording(session, "ws://127.0.0.1:9/realtime")
    return made

def timed(loop, made):
    """(thread CPU, process CPU) per frame, in us, of loop(made) and of sending what it queued."""
    session.flush()
    thread, process = time.thread_time(), time.process_time()
    loop(made)
    thread = time.thread_time() - thread
    session.flush()
    process = time.process_time() - process
    return thread / count / 2 * 1e6, process / count / 2 * 1e6

def plain(made):
    for _ in range(count):
        Protocol.send_text(made, message)
        made.data_to_send()
        Protocol.receive_data(made, answer)
        Protocol.events_received(made)

def recorded(made):
    for _ in range(count):
        made.send_text(message)
        made.data_to_send()
        made.receive_data(answer)
        made.events_received()

added = {"thread": [], "process": []}
bare = []
for _ in range(rounds):
    base, with_wop = timed(plain, protocol(False)), timed(recorded, protocol(True))
    bare.append(base[0])
    added["thread"].append(with_wop[0] - base[0])
    added["process"].append(with_wop[1] - base[1])
print("plain %.2f us/frame; added per frame (min / median / max us): " % min(bare) + ", ".join(
    "%s %.2f / %.2f / %.2f" % (name, min(values), statistics.median(values), max(values))
    for name, values in added.items()) + " (target <= 10)")
'''


def main() -> None:
    frames = sys.argv[1] if len(sys.argv) > 1 else "2000"
    rounds = sys.argv[2] if len(sys.argv) > 2 else "15"
    with tempfile.TemporaryDirectory() as directory:
        child = Path(directory) / "child.py"
        child.write_text(CHILD)
        for run in range(3):
            load = os.getloadavg()[0]
            done = subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--out", f"{directory}/c{run}", "--",
                                   sys.executable, str(child), frames, rounds],
                                  capture_output=True, text=True, env=user_environment(), timeout=600)
            print(f"run {run + 1} (load {load:.2f}): " + (done.stdout.strip() or done.stderr.strip()[-500:]))


if __name__ == "__main__":
    main()
