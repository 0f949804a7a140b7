"""What keeping the program's stdout and stderr costs: `wop capture` of a program printing 100k lines, against
`wop capture --no-output` of the same program (its output passed straight through), and the plain program.

Target (issue 32): recording stdout and stderr adds <= 2% to such a program. Runs are interleaved; each figure is the
median of RUNS with its spread. The output goes to the same place in every case, through wop's pipe and copier thread
when wop records it: /dev/null (the worst case for recording: a write there costs next to nothing, a write into
wop's pipe does not), and a pipe another process drains (as a CI runner or `| tee` reads a program's output).
Measured with Python's default buffering (writes of 8 KiB), and unbuffered (PYTHONUNBUFFERED=1, as many Docker
images set it: a write per print, 200k writes).
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


def timed(argv: list[str], env: dict[str, str], to_pipe: bool = False) -> float:
    """Milliseconds of one run, its output to /dev/null, or to a pipe `cat` drains in a process of its own."""
    drain = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) if to_pipe else None
    target = drain.stdin if drain is not None else subprocess.DEVNULL
    start = time.perf_counter()
    subprocess.run(argv, stdout=target, stderr=target, check=True, env=env)
    elapsed = (time.perf_counter() - start) * 1000
    if drain is not None:
        drain.stdin.close()
        drain.wait()
    return elapsed


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    lines = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    for buffering, unbuffered in (("default buffering", False), ("PYTHONUNBUFFERED=1", True)):
        for place, to_pipe in (("/dev/null", False), ("a pipe", True)):
            print(f"-- {buffering}, output to {place}")
            measure(runs, lines, unbuffered, to_pipe)


def measure(runs: int, lines: int, unbuffered: bool, to_pipe: bool) -> None:
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
        timed(cases["wop capture"], env, to_pipe)  # bytecode caches written
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, argv in cases.items():
                times[name].append(timed(argv, env, to_pipe))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:<26} {medians[name]:7.0f} ms  ({min(values):.0f}-{max(values):.0f} over {runs} runs)")
    pairs = [kept / passed for kept, passed in zip(times["wop capture"], times["wop capture --no-output"])]
    ratio = medians["wop capture"] / medians["wop capture --no-output"]
    print(f"recording the output: {ratio:.3f}x the capture without it (median of medians; pair by pair "
          f"{min(pairs):.3f}-{max(pairs):.3f}, median {statistics.median(pairs):.3f}); target <= 1.02")


if __name__ == "__main__":
    main()
