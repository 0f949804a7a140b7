"""Start-up: `wop --version`, `wop --help`, and `wop capture` / `wop replay --strict` of `python -c "print(1)"`,
against the bare program in the same run.

Targets: --version and --help under 150 ms (issue 3); capture and replay of a trivial program <= 2x the
program's own start-up + 40 ms (issue 20): each line gives its ratio to python's start-up and to that target
(<= 1.00x: met). Runs are interleaved and each figure is the median of RUNS with its spread, as wall time and as
CPU time (wop and its child together; steadier on a shared machine), and the machine's load average before and
after. Python writes its bytecode caches here as it would on a user's machine (PYTHONDONTWRITEBYTECODE is dropped).
Run: python bench/bench_startup.py [RUNS]
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import user_environment  # noqa: E402

PROGRAM = [sys.executable, "-c", "print(1)"]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one run of argv (CPU: the process and everything it started)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as temp:
        env = user_environment()
        env["WOP_HOME"] = str(Path(temp) / "home")
        wop = [sys.executable, "-m", "openwop_cli"]
        subprocess.run([*wop, "capture", "--out", str(Path(temp) / "trivial"), "--", *PROGRAM], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # also writes the bytecode caches
        cases = {
            "python -c print(1)": PROGRAM,
            "wop --version": [*wop, "--version"],
            "wop --help": [*wop, "--help"],
            "wop capture": [*wop, "capture", "--", *PROGRAM],
            "wop replay --strict": [*wop, "replay", "--strict", str(Path(temp) / "trivial")],
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, argv in cases.items():
                times[name].append(timed(argv, env))
    medians = {name: (statistics.median(t[0] for t in got), statistics.median(t[1] for t in got))
               for name, got in times.items()}
    bare_wall, bare_cpu = medians["python -c print(1)"]
    for name, got in times.items():
        walls, cpus = [t[0] for t in got], [t[1] for t in got]
        wall, cpu = medians[name]
        line = (f"{name:<20} wall {wall:5.0f} ms ({min(walls):.0f}-{max(walls):.0f}), "
                f"CPU {cpu:5.0f} ms ({min(cpus):.0f}-{max(cpus):.0f})")
        if name.startswith("wop --"):
            line += f"  target < 150 ms wall: {'met' if wall < 150 else 'missed'}"
        elif name.startswith("wop"):
            target_wall, target_cpu = 2 * bare_wall + 40, 2 * bare_cpu + 40
            line += (f"  ratio {wall / bare_wall:.1f}x; target 2x+40 = {target_wall:.0f} ms wall: "
                     f"{wall / target_wall:.2f}x ({'met' if wall <= target_wall else 'missed'}), {target_cpu:.0f} ms "
                     f"CPU: {cpu / target_cpu:.2f}x ({'met' if cpu <= target_cpu else 'missed'})")
        print(line)
    load = " ".join(f"{value:.2f}" for value in load_before), " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{runs} interleaved runs of each, medians (min-max); load average before {load[0]}, after {load[1]}")


if __name__ == "__main__":
    main()
