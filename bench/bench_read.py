"""Reading + verifying a capture against a bare `orjson.loads + sha256` loop over the same file.

Target (issue 16: every event's envelope and data fields checked, and its nesting bounded, whatever the
hash says): ratio <= 1.3 on 1,000,000 events, and memory that does not grow with the file (peak traced
memory of verifying N events vs N/10 events).
Run: python bench/bench_read.py [EVENTS]
"""

import hashlib
import sys
import tempfile
import tracemalloc
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CAPTURE_ID, per_item_us, realistic_data  # noqa: E402

from openwop_cli.format.redact import Redactor  # noqa: E402
from openwop_cli.format.sink import CaptureSink  # noqa: E402
from openwop_cli.format.verify import verify_capture  # noqa: E402


def make_capture(path: Path, count: int) -> None:
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({"captureId": CAPTURE_ID})
    for index in range(count):
        sink.append("llm_request", realistic_data(index))
    sink.finalize("ok")


def bare_read(path: Path) -> int:
    digest = hashlib.sha256()
    count = 0
    with open(path / "events.jsonl", "rb") as handle:
        for line in handle:
            digest.update(line)
            orjson.loads(line)
            count += 1
    return count


def verified_read(path: Path) -> int:
    report = verify_capture(path)
    assert report.ok, report.problems
    return report.events


def peak_kib(path: Path) -> float:
    tracemalloc.start()
    verified_read(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1024


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as temp:
        big, small = Path(temp) / "big", Path(temp) / "small"
        make_capture(big, count)
        make_capture(small, count // 10)
        bare_runs, verified_runs = [], []
        for _ in range(3):  # interleaved, best of three: this machine's timings are noisy
            bare_runs.append(per_item_us(lambda: bare_read(big)))
            verified_runs.append(per_item_us(lambda: verified_read(big)))
        bare, verified = min(bare_runs), min(verified_runs)
        size_mb = (big / "events.jsonl").stat().st_size / 1e6
        peak_small, peak_big = peak_kib(small), peak_kib(big)
    print(f"events: {count} ({size_mb:.0f} MB)")
    print(f"bare loads+sha256 loop: {bare:.2f} us/event")
    print(f"wop verify (read + checks): {verified:.2f} us/event")
    print(f"ratio verify/bare: {verified / bare:.2f} (target <= 1.3)")
    print(f"peak traced memory: {peak_small:.0f} KiB at {count // 10} events, {peak_big:.0f} KiB at {count} events")


if __name__ == "__main__":
    main()
