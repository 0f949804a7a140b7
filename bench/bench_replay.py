"""Replay speed: a served tool call vs the bare call at 100, 10k and 100k recorded calls, and the engine alone.

Targets (issues 5 and 20): serving a recorded call costs <= 20 us beyond the bare call, and the cost per
served call with 100k recorded calls is within 10% of the cost with 100 (flat). Each replay times its
calls after the first ten (one-time costs such as first imports are not per-call costs); each size is
replayed RUNS times and the median is reported with its spread, as wall time and as the calling thread's
CPU time (the wall figure also holds what the parent's collector and the child's flusher take from the cores
once a run is long enough to send events while it runs). The engine replays a 1,000,000-event
capture at >= 100k events/s.
Run: python bench/bench_replay.py [ENGINE_EVENTS] [RUNS]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (100, 10_000, 100_000)
WARM_UP = 10

PROGRAM = f'''
import os, sys, time
import openwop_cli as wop

def lookup(order_id):
    return {{"id": order_id, "status": "shipped"}}

traced = wop.tool(lookup)
calls = int(sys.argv[1])
for index in range({WARM_UP}):
    traced(f"A-{{index}}")
start, cpu = time.perf_counter(), time.thread_time()
for index in range({WARM_UP}, calls):
    traced(f"A-{{index}}")
served = (time.perf_counter() - start) / (calls - {WARM_UP}) * 1e6
served_cpu = (time.thread_time() - cpu) / (calls - {WARM_UP}) * 1e6
start = time.perf_counter()
for index in range({WARM_UP}, calls):
    lookup(f"A-{{index}}")
bare = (time.perf_counter() - start) / (calls - {WARM_UP}) * 1e6
if os.environ.get("WOP_MODE") == "replay":
    print(f"{{served - bare:.3f}} {{served_cpu - bare:.3f}}", file=sys.stderr)
'''


def wop(*args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "openwop_cli", *args], cwd=cwd, check=True, text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return done.stderr


def served_call_cost(root: Path, runs: int) -> None:
    program = root / "program.py"
    program.write_text(PROGRAM)
    medians = {}
    for calls in SIZES:
        capture = root / f"capture-{calls}"
        wop("capture", "--out", str(capture), "--", sys.executable, str(program), str(calls), cwd=root)
        added, added_cpu = [], []
        for run in range(runs):
            stderr = wop("replay", str(capture), "--no-output", "--out", str(root / f"replay-{calls}-{run}"), cwd=root)
            wall, cpu = stderr.split()[:2]
            added.append(float(wall))
            added_cpu.append(float(cpu))
        medians[calls] = statistics.median(added), statistics.median(added_cpu)
        print(f"{calls:>7} recorded calls: served call adds {medians[calls][0]:.2f} us over the bare call "
              f"(median of {runs}, spread {min(added):.2f}-{max(added):.2f}; target <= 20); "
              f"the calling thread's CPU {medians[calls][1]:.2f} us (spread {min(added_cpu):.2f}-{max(added_cpu):.2f})")
    for label, which in (("wall", 0), ("calling thread's CPU", 1)):
        ratio = medians[SIZES[-1]][which] / medians[SIZES[0]][which]
        print(f"flat ({label}): {SIZES[-1]:,} vs {SIZES[0]} recorded calls = {ratio:.2f}x (target <= 1.10)")


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
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        os.environ.setdefault("WOP_HOME", str(root / "home"))
        served_call_cost(root, runs)
        engine_speed(root, events)


if __name__ == "__main__":
    main()
