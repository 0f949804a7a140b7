"""`wop show` of a 200,000-event capture: the whole timeline streamed to a pipe (rows/s, peak memory), `--jsonl`
(events/s), and the first screen on a terminal.

Targets (issue 20): >= 50,000 rows/s to a pipe with memory flat (peak RSS printed for EVENTS and EVENTS/10);
first screen on a terminal under a second (issue 10). Baselines measured in the same run: the styled (rich)
renderer writing the same timeline to the same pipe — what `wop show | …` printed before issue 20 — and the
interpreter's own start-up. Each figure is the median of RUNS runs, with the spread.
Run: python bench/bench_show.py [EVENTS] [RUNS]
"""

import os
import pty
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_spread, waited  # noqa: E402

from openwop_cli.format.redact import Redactor  # noqa: E402
from openwop_cli.format.sink import CaptureSink  # noqa: E402

ENV = {"NO_COLOR": "1", "COLUMNS": "160", "PATH": "/usr/bin:/bin"}
STYLED = ("import sys; from openwop_cli.format.reader import CaptureReader; "
          "from openwop_cli.report.console import make_console; from openwop_cli.report.timeline import render_rows; "
          "render_rows(make_console(), CaptureReader(sys.argv[1]))")


def write_capture(path: Path, events: int) -> None:
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    for index in range(events // 2):
        sink.append("tool_call", {"name": "lookup", "args": {"order": f"A-{index}"}, "callId": f"t{index}"})
        sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": {"status": "shipped", "n": index}})
    sink.finalize("ok")


def piped(command: list[str]) -> tuple[float, int, float]:
    """Seconds, lines and peak RSS (MiB) of a command whose output is read through a pipe to the end."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=ENV)
    lines = sum(1 for _ in process.stdout)
    usage = waited(process)
    seconds = time.perf_counter() - start
    return seconds, lines, usage.ru_maxrss / 1024


def first_screen(capture: Path) -> float:
    """Seconds until `wop show` on a terminal (a pty, no pager) has printed 42 lines."""
    controller, terminal = pty.openpty()
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "openwop_cli", "show", str(capture), "--no-pager"],
                               stdout=terminal, stderr=subprocess.DEVNULL, env={**ENV, "TERM": "xterm"})
    os.close(terminal)
    seen = b""
    while seen.count(b"\n") < 42:
        seen += os.read(controller, 65536)
    elapsed = time.perf_counter() - start
    process.kill()
    process.wait()
    os.close(controller)
    return elapsed


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    wop = [sys.executable, "-m", "openwop_cli", "show"]
    with tempfile.TemporaryDirectory() as temp:
        small, capture = Path(temp) / "small", Path(temp) / "capture"
        write_capture(small, events // 10)
        write_capture(capture, events)
        rss_small = piped([*wop, str(small)])[2]
        rows, rss = piped([*wop, str(capture)])[1:]
        rows -= 2
        python = median_spread([piped([sys.executable, "-c", "pass"])[0] * 1000 for _ in range(runs)])
        plain = median_spread([rows / piped([*wop, str(capture)])[0] for _ in range(runs)])
        styled = median_spread([rows / piped([sys.executable, "-c", STYLED, str(capture)])[0] for _ in range(runs)])
        lines = median_spread([events / piped([*wop, str(capture), "--jsonl"])[0] for _ in range(runs)])
        screen = median_spread([first_screen(capture) * 1000 for _ in range(runs)])
    print(f"{events:,} events, {rows:,} timeline rows; medians of {runs} runs (spread)")
    print(f"  wop show | pipe: {plain[0]:,.0f} rows/s ({plain[1]}), target >= 50,000: {plain[0] / 50_000:.2f}x the target; "
          f"baseline styled renderer to the same pipe {styled[0]:,.0f} rows/s ({styled[1]}): {plain[0] / styled[0]:.1f}x faster")
    print(f"  peak RSS of wop show: {rss_small:.0f} MiB for {events // 10:,} events, {rss:.0f} MiB for {events:,}")
    print(f"  wop show --jsonl | pipe: {lines[0]:,.0f} events/s ({lines[1]})")
    print(f"  first screen on a terminal: {screen[0]:.0f} ms ({screen[1]}), target < 1000; "
          f"python start-up {python[0]:.0f} ms ({python[1]})")


if __name__ == "__main__":
    main()
