"""`wop diff --json` on two 1,000,000-event captures that differ in 10 events, against a bare orjson loop over both files.

Target (issue 8): <= 2x the bare loop, memory that does not grow with the event count (peak RSS of
the diff process is printed for two sizes). Run: python bench/bench_diff.py [EVENTS]
"""

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import realistic_data  # noqa: E402

from openwop_cli.format.redact import Redactor  # noqa: E402
from openwop_cli.format.sink import CaptureSink  # noqa: E402


def write_capture(path: Path, count: int, changed: set[int]) -> None:
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    small = {"name": "lookup", "args": {"order_id": "A-1"}, "callId": "t"}
    for index in range(count):
        data = realistic_data(index) if index % 10 == 0 else {**small, "args": {"order_id": f"A-{index}"}}
        if index in changed:
            data = {**data, "changed": True}
        sink.append("llm_request" if index % 10 == 0 else "tool_call", data)
    sink.finalize("ok")


def run(count: int, root: Path) -> tuple[float, float, float]:
    a, b = root / f"a{count}", root / f"b{count}"
    write_capture(a, count, set())
    write_capture(b, count, {count // 11 * k for k in range(1, 11)})
    start = time.perf_counter()
    for path in (a, b):
        with open(path / "events.jsonl", "rb") as handle:
            for line in handle:
                orjson.loads(line)
    bare = time.perf_counter() - start
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "openwop_cli", "diff", str(a), str(b), "--json"],
                          capture_output=True)
    diffed = time.perf_counter() - start
    result = orjson.loads(done.stdout)
    assert result["counts"]["changed"] == 10, result["counts"]
    rss = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return bare, diffed, rss


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as temp:
        for size in (count // 10, count):
            bare, diffed, rss = run(size, Path(temp))
            print(f"{size:,} events each: bare read of both {bare:.2f} s, wop diff --json {diffed:.2f} s, "
                  f"ratio {diffed / bare:.2f}x (target <= 2), diff process peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
