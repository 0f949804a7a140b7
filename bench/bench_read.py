"""`wop verify` against a bare `orjson.loads + sha256` loop over the same file, at 100k and 1M events.

Target (issue 37: every event's envelope and data checked by the msgspec shapes, its nesting bounded, whatever the
hash says): ratio <= 1.3 at 1,000,000 events, and peak memory flat (the same at 100k and 1M events within 10%).
Each measurement runs in a process of its own (so its peak RSS, from resource.getrusage, is its own), with bytecode
caches written and reused as a user's Python does, bare and verify interleaved, round after round; the median ratio
and the spread are printed. Verify's CPU includes importing wop's reader and msgspec (shown apart).
Run: python bench/bench_read.py [ROUNDS] [SIZES…]   (defaults: 5 rounds, 100000 1000000 events)
"""

import hashlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]  # this tree's wop, not the installed one
from common import CAPTURE_ID, median_spread, realistic_data, user_environment  # noqa: E402


def make_capture(path: Path, count: int) -> None:
    from openwop_cli.format.redact import Redactor
    from openwop_cli.format.sink import CaptureSink

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
    from openwop_cli.format.verify import verify_capture

    report = verify_capture(path)
    assert report.ok, report.problems
    return report.events


def child(kind: str, path: Path) -> None:
    """One measurement in this process: CPU microseconds per event (all its threads: the machine is shared, so wall
    time would measure the others' load), then the process's peak RSS in KiB."""
    import resource

    start = time.process_time()
    if kind == "verify":  # what verify imports (the reader, the shapes, msgspec), timed apart and counted in
        import openwop_cli.format.shape
        import openwop_cli.format.verify  # noqa: F401
    imported = time.process_time()
    count = (bare_read if kind == "bare" else verified_read)(path)
    elapsed = time.process_time() - start
    print(orjson.dumps({"us": elapsed / count * 1e6, "import_us": (imported - start) / count * 1e6,
                        "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}).decode())


def measure(kind: str, path: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", kind, str(path)], capture_output=True, text=True,
                          check=True, cwd=ROOT, env=user_environment())  # bytecode written and reused, as users have
    return orjson.loads(done.stdout.splitlines()[-1])


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    sizes = [int(size) for size in sys.argv[2:]] or [100_000, 1_000_000]
    with tempfile.TemporaryDirectory() as temp:
        paths = {size: Path(temp) / f"c{size}" for size in sizes}
        for size, path in paths.items():
            make_capture(path, size)
        runs: dict[int, dict[str, list[dict]]] = {size: {"bare": [], "verify": []} for size in sizes}
        load = []
        for _ in range(rounds):  # interleaved: bare, verify, size after size, round after round
            load.append(_load())
            for size, path in paths.items():
                for kind in ("bare", "verify"):
                    runs[size][kind].append(measure(kind, path))
        size_mb = {size: (path / "events.jsonl").stat().st_size / 1e6 for size, path in paths.items()}
    print(f"{rounds} rounds, interleaved; machine load (1-min average) during them: "
          f"{min(load):.1f}–{max(load):.1f}")
    for size in sizes:
        bare = [run["us"] for run in runs[size]["bare"]]
        verify = [run["us"] for run in runs[size]["verify"]]
        ratios = [checked / plain for checked, plain in zip(verify, bare)]
        ratio, spread = median_spread(ratios, ".2f")
        rss, rss_spread = median_spread([run["rss"] / 1024 for run in runs[size]["verify"]], ".0f")
        imports = statistics.median(run["import_us"] for run in runs[size]["verify"])
        print(f"{size:>9,} events ({size_mb[size]:.0f} MB): bare loads+sha256 {statistics.median(bare):.2f} us/event, "
              f"verify {statistics.median(verify):.2f} us/event (its imports {imports:.2f}); ratio {ratio:.2f} "
              f"({spread}; target <= 1.3); verify peak RSS {rss:.0f} MiB ({rss_spread})")
    if len(sizes) > 1:
        small, big = (statistics.median(run["rss"] for run in runs[size]["verify"]) for size in (sizes[0], sizes[-1]))
        print(f"peak RSS {sizes[-1]:,} vs {sizes[0]:,} events: {big / small:.2f}x (target: within 10%)")


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], Path(sys.argv[3]))
    else:
        main()
