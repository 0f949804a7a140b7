"""Many captures at once: `wop replay -j 2` and `pytest -n 2 --wop-replay` vs their serial runs.

Target (issue 19): replaying 200 small captures with -j 2 takes <= 0.65x the serial wall time on a
2-core machine; pytest-xdist with 2 workers similar. The captures are real (`wop capture` of a small
program with one tool call); serial and parallel runs alternate, and medians and the spread of the
ratios are printed. Run: python bench/bench_batch.py [CAPTURES] [ROUNDS]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = """
import sys
import openwop_cli as wop

@wop.tool
def lookup(order_id):
    return {"id": order_id, "status": "shipped"}

print(lookup(f"A-{sys.argv[1]}"))
"""


def make_captures(root: Path, count: int) -> Path:
    program = root / "program.py"
    program.write_text(PROGRAM)
    runs = root / "runs"
    running: list[subprocess.Popen] = []
    for number in range(count):
        running.append(subprocess.Popen(
            [sys.executable, "-m", "openwop_cli", "capture", "--out", str(runs / f"r{number:03d}"), "--",
             sys.executable, str(program), str(number)], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if len(running) == 2 or number == count - 1:
            for process in running:
                if process.wait() != 0:
                    raise SystemExit("wop capture failed")
            running.clear()
    return runs


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}")
    return seconds


def compare(label: str, serial: list[str], parallel: list[str], cwd: Path, rounds: int) -> None:
    serial_times, parallel_times, ratios = [], [], []
    for _ in range(rounds):
        serial_times.append(timed(serial, cwd))
        parallel_times.append(timed(parallel, cwd))
        ratios.append(parallel_times[-1] / serial_times[-1])
    print(f"{label}: serial median {statistics.median(serial_times):.1f} s, 2 jobs median "
          f"{statistics.median(parallel_times):.1f} s, ratio median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {rounds} rounds; target <= 0.65)")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        os.environ["WOP_HOME"] = str(root / "home")
        os.environ["PYTEST_ADDOPTS"] = "-p no:phoenix -p no:cacheprovider -q"
        runs = make_captures(root, count)
        wop = [sys.executable, "-m", "openwop_cli", "replay", str(runs)]
        compare(f"wop replay of {count} captures", [*wop, "-j", "1"], [*wop, "-j", "2"], root, rounds)
        pytest = [sys.executable, "-m", "pytest", "--wop-replay", str(runs)]
        compare(f"pytest --wop-replay of {count} captures", [*pytest, "-n", "0"], [*pytest, "-n", "2"], root, rounds)


if __name__ == "__main__":
    main()
