"""Many captures at once: `wop replay -j 2` and `pytest -n 2 --wop-replay` vs their serial runs.

Target (issue 19): replaying 200 small captures with -j 2 takes <= 0.65x the serial wall time on a
2-core machine; pytest-xdist with 2 workers similar. The captures are real (`wop capture` of a small
program with one tool call); serial and parallel runs alternate, and medians and the spread of the
ratios are printed, with the CPU time each side used and, as the ceiling this machine offers right
now, the same ratio for plain work (as many bare `python -c pass` processes, one at a time vs two at
a time). Run: python bench/bench_batch.py [CAPTURES] [ROUNDS]
"""

import os
import resource
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


def timed(commands: list[list[str]], cwd: Path, at_once: int) -> tuple[float, float]:
    """Wall and CPU seconds (children's user + system) to run commands, at_once of them at a time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    for offset in range(0, len(commands), at_once):
        running = [subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for command in commands[offset:offset + at_once]]
        for process in running:
            if process.wait() != 0:
                raise SystemExit(f"{' '.join(process.args)} exited {process.returncode}")
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def compare(label: str, serial: list[str], parallel: list[str], cwd: Path, rounds: int, count: int) -> None:
    plain = [[sys.executable, "-c", "pass"]] * count
    serial_runs, parallel_runs, ratios, ceilings = [], [], [], []
    for _ in range(rounds):
        serial_runs.append(timed([serial], cwd, 1))
        parallel_runs.append(timed([parallel], cwd, 1))
        ratios.append(parallel_runs[-1][0] / serial_runs[-1][0])
        ceilings.append(timed(plain, cwd, 2)[0] / timed(plain, cwd, 1)[0])
    print(f"{label}: serial median {statistics.median(run[0] for run in serial_runs):.1f} s "
          f"({statistics.median(run[1] for run in serial_runs):.1f} s CPU), 2 jobs median "
          f"{statistics.median(run[0] for run in parallel_runs):.1f} s "
          f"({statistics.median(run[1] for run in parallel_runs):.1f} s CPU); ratio median "
          f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}, {rounds} rounds; "
          f"target <= 0.65); plain work two at a time on this machine meanwhile: {statistics.median(ceilings):.2f}")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        os.environ["WOP_HOME"] = str(root / "home")
        os.environ["PYTEST_ADDOPTS"] = "-p no:phoenix -p no:cacheprovider -q"
        runs = make_captures(root, count)
        wop = [sys.executable, "-m", "openwop_cli", "replay", str(runs)]
        compare(f"wop replay of {count} captures", [*wop, "-j", "1"], [*wop, "-j", "2"], root, rounds, count)
        pytest = [sys.executable, "-m", "pytest", "--wop-replay", str(runs)]
        compare(f"pytest --wop-replay of {count} captures", [*pytest, "-n", "0"], [*pytest, "-n", "2"], root, rounds,
                count)


if __name__ == "__main__":
    main()
