"""What keeping the program's stdout and stderr costs: `wop capture` of a program printing 100k lines, against
`wop capture --no-output` of the same program (its output passed straight through), and the plain program.

Target (issue 32): recording stdout and stderr adds <= 2% to such a program. Runs are interleaved; each figure is the
median of RUNS with its spread. The program's output goes to /dev/null in every case, through wop's pipe and copier
thread when it records it. Measured twice: with Python's default buffering (writes of 8 KiB), and unbuffered
(PYTHONUNBUFFERED=1, as many Docker images set it: a write per print, 200k writes).
Run: python bench/bench_output.py [RUNS] [LINES]
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import user_environment  # noqa: E402

PROGRAM = """
import sys
for number in range({lines}):
    print(f"line {{number}}: the agent considered the order and wrote a sentence about it")
    if number % 1000 == 0:
        print(f"progress {{number}}", file=sys.stderr)
"""


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    lines = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    for buffering, unbuffered in (("default buffering", False), ("PYTHONUNBUFFERED=1", True)):
        print(f"-- {buffering}")
        measure(runs, lines, unbuffered)


def measure(runs: int, lines: int, unbuffered: bool) -> None:
    with tempfile.TemporaryDirectory() as temp:
        program = Path(temp) / "printer.py"
        program.write_text(PROGRAM.format(lines=lines))
        env = {name: value for name, value in user_environment().items() if name != "PYTHONUNBUFFERED"}
        env = {**env, "WOP_HOME": str(Path(temp) / "home"), **({"PYTHONUNBUFFERED": "1"} if unbuffered else {})}
        wop = [sys.executable, "-m", "openwop_cli", "capture"]
        cases = {
            "plain": [sys.executable, str(program)],
            "wop capture --no-output": [*wop, "--no-output", "--", sys.executable, str(program)],
            "wop capture": [*wop, "--", sys.executable, str(program)],
        }
        timed(cases["wop capture"], env)  # bytecode caches written
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, argv in cases.items():
                times[name].append(timed(argv, env))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:<26} {medians[name]:7.0f} ms  ({min(values):.0f}-{max(values):.0f} over {runs} runs)")
    pairs = [kept / passed for kept, passed in zip(times["wop capture"], times["wop capture --no-output"])]
    ratio = medians["wop capture"] / medians["wop capture --no-output"]
    print(f"recording the output: {ratio:.3f}x the capture without it (median of medians; pair by pair "
          f"{min(pairs):.3f}-{max(pairs):.3f}, median {statistics.median(pairs):.3f}); target <= 1.02")


if __name__ == "__main__":
    main()
