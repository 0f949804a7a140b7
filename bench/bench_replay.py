"""Replay speed: a served tool call vs the bare call (small and large captures), and the engine alone.

Targets (issue 5): serving a recorded call costs <= 20 us beyond the bare call, the same for 100k
recorded calls as for 100; the engine replays a 1,000,000-event capture at >= 100k events/s.
Run: python bench/bench_replay.py [ENGINE_EVENTS]
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = '''
import os, sys, time
import openwop_cli as wop

def lookup(order_id):
    return {"id": order_id, "status": "shipped"}

traced = wop.tool(lookup)
calls = int(sys.argv[1])
start = time.perf_counter()
for index in range(calls):
    traced(f"A-{index}")
served = (time.perf_counter() - start) / calls * 1e6
start = time.perf_counter()
for index in range(calls):
    lookup(f"A-{index}")
bare = (time.perf_counter() - start) / calls * 1e6
if os.environ.get("WOP_MODE") == "replay":
    print(f"{calls:>7} recorded calls: bare {bare:.2f} us, served from the capture {served:.2f} us, "
          f"added {served - bare:.2f} us (target <= 20)", file=sys.stderr)
'''


def wop(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "openwop_cli", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=None if args[0] == "replay" else subprocess.DEVNULL)


def served_call_cost(root: Path) -> None:
    program = root / "program.py"
    program.write_text(PROGRAM)
    for calls in (100, 100_000):
        capture = root / f"capture-{calls}"
        wop("capture", "--out", str(capture), "--", sys.executable, str(program), str(calls), cwd=root)
        wop("replay", str(capture), "--out", str(root / f"replay-{calls}"), cwd=root)


def engine_speed(root: Path, events: int) -> None:
    from openwop_cli.format.redact import Redactor
    from openwop_cli.format.sink import CaptureSink
    from openwop_cli.replay.engine import ReplayEngine
    from openwop_cli.replay.keys import KIND_TOOL
    from openwop_cli.replay.source import ReplaySource

    path = root / "engine"
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    origin = {"pid": 1, "thread": "MainThread"}
    calls = []
    for index in range(events // 2):
        call = {"name": "lookup", "args": {"order_id": f"A-{index}"}, "callId": f"t{index}"}
        calls.append(call)
        sink.append("tool_call", call, origin=origin)
        sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": {"id": index}}, origin=origin)
    sink.finalize("ok")
    start = time.perf_counter()
    source = ReplaySource(path)
    engine = ReplayEngine(source)
    for call in calls:
        match = engine.match(KIND_TOOL, call)
        source.event(match.result_seq)
    seconds = time.perf_counter() - start
    print(f"engine alone: {events:,} events in {seconds:.2f} s = {events / seconds:,.0f} events/s (target >= 100,000)")


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        os.environ.setdefault("WOP_HOME", str(root / "home"))
        served_call_cost(root)
        engine_speed(root, events)


if __name__ == "__main__":
    main()
