"""`wop show` on a 100,000-event capture: time to the first screen (40 rows) against the time of the whole timeline,
and the size of `wop report` for the same capture.

Targets (issue 10): first screen under a second; the HTML report under 20 MB. The baseline is the
interpreter's own start-up (`python -c pass`) measured in the same run.
Run: python bench/bench_show.py [EVENTS]
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink


def write_capture(path: Path, events: int) -> None:
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    for index in range(events // 2):
        sink.append("tool_call", {"name": "lookup", "args": {"order": f"A-{index}"}, "callId": f"t{index}"})
        sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": {"status": "shipped", "n": index}})
    sink.finalize("ok")


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as temp:
        capture = Path(temp) / "capture"
        write_capture(capture, events)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        python = time.perf_counter() - start
        start = time.perf_counter()
        show = subprocess.Popen([sys.executable, "-m", "openwop_cli", "show", str(capture)], stdout=subprocess.PIPE,
                                text=True, env={"NO_COLOR": "1", "COLUMNS": "160", "PATH": "/usr/bin:/bin"})
        for _ in range(42):
            show.stdout.readline()
        first_screen = time.perf_counter() - start
        for _ in show.stdout:
            pass
        show.wait()
        total = time.perf_counter() - start
        report = Path(temp) / "report.html"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "openwop_cli", "report", str(capture), "-o", str(report)], check=True,
                       capture_output=True)
        report_seconds = time.perf_counter() - start
        size = report.stat().st_size / 1_000_000
    print(f"{events:,} events: python start-up {python * 1000:.0f} ms; wop show first screen {first_screen * 1000:.0f} ms "
          f"(target < 1000), whole timeline {total:.1f} s; wop report {size:.1f} MB (target < 20) in {report_seconds:.1f} s")


if __name__ == "__main__":
    main()
