"""Every command's everyday line as `wop` runs it (cli.entry's fast path: no Typer, no Pydantic) against the same line
read by the Typer app (WOP_DEBUG=0 sends it there), in the same run, on a capture of `python -c "print(1)"`.

Runs are interleaved (fast, Typer, fast, Typer, ...); each line gives the medians of RUNS with their spread, as wall
time and as CPU time (steadier on a shared machine), the ratio fast / Typer of each, and the load average before and
after. Python writes its bytecode caches as on a user's machine (PYTHONDONTWRITEBYTECODE is dropped).
Run: python bench/bench_commands.py [RUNS]
"""

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_startup import timed  # noqa: E402
from common import user_environment  # noqa: E402


def cases(temp: Path) -> dict[str, list[str]]:
    """The command lines timed, on the capture at temp/capture and a request at temp/request.json."""
    capture = str(temp / "capture")
    return {
        "wop show CAPTURE": ["show", capture],
        "wop show --json": ["show", capture, "--json"],
        "wop ls": ["ls"],
        "wop verify CAPTURE": ["verify", capture],
        "wop state CAPTURE": ["state", capture],
        "wop diff A A": ["diff", capture, capture],
        "wop report -o FILE": ["report", capture, "-o", str(temp / "report.html")],
        "wop cache-key FILE": ["cache-key", str(temp / "request.json")],
        "wop gc --dry-run": ["gc", "--older-than", "30", "--dry-run"],
    }


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    load_before = os.getloadavg()
    wop = [sys.executable, "-m", "openwop_cli"]
    with tempfile.TemporaryDirectory() as name:
        temp = Path(name)
        fast = {**user_environment(), "WOP_HOME": str(temp / "home")}
        fast.pop("WOP_DEBUG", None)
        typer = {**fast, "WOP_DEBUG": "0"}
        for out in ("--out", str(temp / "capture")), ():  # one for the commands, one in the store for `wop ls`
            subprocess.run([*wop, "capture", *out, "--", sys.executable, "-c", "print(1)"], env=fast, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (temp / "request.json").write_text('{"provider": "openai", "model": "gpt-4o", "messages": []}')
        lines = cases(temp)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(runs + 1):  # the first round writes the bytecode caches and is not counted
            for label, args in lines.items():
                for path, env in (("fast", fast), ("typer", typer)):
                    times.setdefault((label, path), []).append(timed([*wop, *args], env))
    for label in lines:
        fast_runs, typer_runs = times[(label, "fast")][1:], times[(label, "typer")][1:]
        figures = []
        for kind, index in (("wall", 0), ("CPU", 1)):
            mine, theirs = [run[index] for run in fast_runs], [run[index] for run in typer_runs]
            figures.append(f"{kind} {statistics.median(mine):4.0f} ms ({min(mine):.0f}-{max(mine):.0f}) vs "
                           f"{statistics.median(theirs):4.0f} ms ({min(theirs):.0f}-{max(theirs):.0f}), "
                           f"{statistics.median(mine) / statistics.median(theirs):.2f}x")
        print(f"{label:<20} " + "; ".join(figures))
    load = " ".join(f"{value:.2f}" for value in load_before), " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"fast path vs Typer app, {runs} interleaved runs of each, medians (min-max); load average before {load[0]},"
          f" after {load[1]}")


if __name__ == "__main__":
    main()
