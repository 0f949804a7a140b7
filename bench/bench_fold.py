"""Folding a capture of 1,000,000 channel writes to its last seq, against a bare orjson read loop.

Target (issue 7): >= 200k events/s, memory bounded by the state size (maxSize-capped append,
counter, merge channels), not by the event count. Run: python bench/bench_fold.py [EVENTS]
"""

import resource
import sys
import tempfile
import time
from pathlib import Path

import orjson

from openwop_cli.channels.fold import fold_events
from openwop_cli.format.reader import CaptureReader
from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink


def write_capture(path: Path, count: int) -> None:
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    sink.append("run_start", {"channels": {"log": {"reducer": "append", "maxSize": 100}}})
    for index in range(count - 1):
        kind = index % 3
        if kind == 0:
            data = {"kind": "channel", "channel": "log", "value": {"step": index}, "reducer": "append"}
        elif kind == 1:
            data = {"kind": "channel", "channel": "cost", "value": 1, "reducer": "counter"}
        else:
            data = {"kind": "channel", "channel": f"ticket{index % 50}", "value": {"at": index}, "reducer": "merge"}
        sink.append("state_mutation", data)
    sink.finalize("ok")


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as temp:
        path = Path(temp) / "capture"
        write_capture(path, count)
        start = time.perf_counter()
        with open(path / "events.jsonl", "rb") as handle:
            for line in handle:
                orjson.loads(line)
        bare = time.perf_counter() - start
        before = max_rss_mib()
        start = time.perf_counter()
        fold = fold_events(CaptureReader(path))
        folded = time.perf_counter() - start
        grown = max_rss_mib() - before
        assert fold.snapshot()["channels"]["cost"] == (count - 1 + 1) // 3
    print(f"{count:,} events: bare read loop {count / bare:,.0f} events/s; fold {count / folded:,.0f} events/s "
          f"(target >= 200,000), ratio {folded / bare:.2f}x bare; peak memory grew {grown:.1f} MiB")


if __name__ == "__main__":
    main()
