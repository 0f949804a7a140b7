"""Start-up time of `wop --version` and `wop --help` against a bare `python -c pass` in the same run.

Target (issue 3): both under 150 ms. Run: python bench/bench_startup.py
"""

import statistics
import subprocess
import sys
import time

RUNS = 15


def median_ms(argv: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    bare = median_ms([sys.executable, "-c", "pass"])
    print(f"python -c pass: {bare:.0f} ms")
    for flag in ("--version", "--help"):
        wop = median_ms([sys.executable, "-m", "openwop_cli", flag])
        print(f"wop {flag}: {wop:.0f} ms (ratio to bare python {wop / bare:.1f}x, target < 150 ms)")


if __name__ == "__main__":
    main()
