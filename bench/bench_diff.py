"""`wop diff --json` of two captures that differ in 10 events, against a bare read of both files (reading and
orjson-parsing both events.jsonl line by line), at EVENTS/10 and EVENTS events per capture.

Three kinds of pair: plain (llm_request and tool_call events, nothing folded, 10 changes from 9% of the run on),
and two state-heavy pairs (every event a state write — channel appends, counters, merges, variables — so both runs
fold every write): state-late, whose 10 changed writes are in the run's last 10% (the identical prefix is folded
once), and state-early, whose first changed write is at 9% (both runs fold apart from there: the worst case).
Every event carries an origin as a real capture's do (the process id differs between the two runs, the call site
varies). Target (issues 8 and 20): <= 2x the bare read at 100,000 and 1,000,000 events, state-heavy included; memory
that does not grow with the event count (peak RSS of the diff process). Medians of RUNS runs with their spread.
Like for like, the bare read is a Python process too (start-up included, as `wop diff` is timed); the ratio to the
same loop inside this process is printed beside it. `wop diff` reads B in a second process when a CPU is idle
(diff.forked): its CPU-time ratio counts both processes.
Run: python bench/bench_diff.py [EVENTS] [RUNS] [plain|state-late|state-early|all]   (defaults: 1000000 3 all)
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_spread, realistic_data, run_with_usage, user_environment  # noqa: E402

from openwop_cli.format.redact import Redactor  # noqa: E402
from openwop_cli.format.sink import CaptureSink  # noqa: E402

KINDS = ("plain", "state-late", "state-early")


def plain_event(index: int) -> tuple[str, dict]:
    if index % 10 == 0:
        return "llm_request", realistic_data(index)
    return "tool_call", {"name": "lookup", "args": {"order_id": f"A-{index}"}, "callId": "t"}


def state_event(index: int) -> tuple[str, dict]:
    kind = index % 4
    if kind == 0:
        return "state_mutation", {"kind": "channel", "channel": "log", "value": {"step": index}, "reducer": "append"}
    if kind == 1:
        return "state_mutation", {"kind": "channel", "channel": "cost", "value": 1, "reducer": "counter"}
    if kind == 2:
        return "state_mutation", {"kind": "channel", "channel": "profile", "value": {f"k{index % 20}": index},
                                  "reducer": "merge"}
    return "state_mutation", {"kind": "variable", "key": f"v{index % 50}", "value": index}


def origin(pid: int, index: int) -> dict:
    """Where an event was made, as the runtime records it: this run's process, its main thread, one of a few sites."""
    site = {"file": "agent.py", "line": 40 + index % 7, "function": "step"}
    return {"pid": pid, "thread": "MainThread", "site": site}


def write_capture(path: Path, count: int, changed: set[int], make, pid: int) -> None:
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    sink.append("run_start", {"argv": ["agent.py"], "channels": {"log": {"reducer": "append", "maxSize": 100}}})
    for index in range(count - 1):
        event_type, data = make(index)
        if index in changed:
            data = {**data, "value": {"changed": index}} if event_type == "state_mutation" else {**data, "changed": True}
        sink.append(event_type, data, origin=origin(pid, index))
    sink.finalize("ok")


BARE_READ = """
import sys, orjson
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        for line in handle:
            orjson.loads(line)
"""


def bare_read(paths: tuple[Path, Path]) -> tuple[float, float]:
    """Wall and CPU seconds of reading and parsing both files line by line, in this process."""
    start, cpu = time.perf_counter(), time.process_time()
    for path in paths:
        with open(path / "events.jsonl", "rb") as handle:
            for line in handle:
                orjson.loads(line)
    return time.perf_counter() - start, time.process_time() - cpu


def bare_read_process(paths: tuple[Path, Path]) -> float:
    """Wall seconds of a Python process that reads and parses both files line by line: the bare read with the
    interpreter's start-up, which `wop diff` pays too."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE_READ, *(str(path / "events.jsonl") for path in paths)], check=True,
                   env=user_environment())
    return time.perf_counter() - start


def diffed(paths: tuple[Path, Path]) -> tuple[float, float, float]:
    """Wall and CPU seconds of `wop diff --json` (start-up included), and its peak RSS in MiB."""
    output, _, seconds, cpu, rss = run_with_usage([sys.executable, "-m", "openwop_cli", "diff", *map(str, paths),
                                                   "--json"], env=user_environment())
    result = orjson.loads(output)
    assert len(result["eventDiffs"]) == 10, result["eventDiffs"][:3]
    return seconds, cpu, rss


def run(count: int, kind: str, root: Path, runs: int) -> float:
    """Print the figures of one kind of pair at one size; return the median peak RSS (MiB)."""
    make = plain_event if kind == "plain" else state_event
    paths = root / f"{kind}-a{count}", root / f"{kind}-b{count}"
    write_capture(paths[0], count, set(), make, 4242)
    late = kind == "state-late"
    changed = {count - count // 100 * k if late else count // 11 * k for k in range(1, 11)}
    write_capture(paths[1], count, changed, make, 4343)
    bare, bare_process, diff, ratio, process_ratio, cpu_ratio, rss = [], [], [], [], [], [], []
    for _ in range(runs):
        bare_wall, bare_cpu = bare_read(paths)
        bare_process_wall = bare_read_process(paths)
        seconds, cpu, peak = diffed(paths)
        rss.append(peak)
        bare.append(bare_wall)
        bare_process.append(bare_process_wall)
        diff.append(seconds)
        ratio.append(seconds / bare_wall)
        process_ratio.append(seconds / bare_process_wall)
        cpu_ratio.append(cpu / bare_cpu)
    ratio_median, ratio_spread = median_spread(ratio, ".2f")
    process_median, process_spread = median_spread(process_ratio, ".2f")
    cpu_median, cpu_spread = median_spread(cpu_ratio, ".2f")
    rss_median, rss_spread = median_spread(rss, ".0f")
    print(f"{count:>9,} events each, {kind:<11}: wop diff --json {median_spread(diff)[0]:.2f} s; bare read of both "
          f"{median_spread(bare_process)[0]:.2f} s as a process: ratio {process_median:.2f}x ({process_spread}), "
          f"target <= 2; in this process {median_spread(bare)[0]:.2f} s: ratio {ratio_median:.2f}x ({ratio_spread}); "
          f"CPU-time ratio {cpu_median:.2f}x ({cpu_spread}); peak RSS {rss_median:.0f} MiB ({rss_spread}; the diff's "
          f"process or its child, whichever is larger)")
    for path in paths:
        for file in path.iterdir():
            file.unlink()
        path.rmdir()
    return rss_median


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    kinds = KINDS if len(sys.argv) <= 3 or sys.argv[3] == "all" else (sys.argv[3],)
    peaks: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as temp:
        for size in (count // 10, count):
            for kind in kinds:
                peaks[kind, size] = run(size, kind, Path(temp), runs)
    for kind in kinds:
        print(f"peak RSS, {kind}: {count:,} vs {count // 10:,} events {peaks[kind, count] / peaks[kind, count // 10]:.2f}x "
              f"(target: within 10%)")


if __name__ == "__main__":
    main()
