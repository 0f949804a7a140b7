"""`wop report` of a 1,000,000-event capture (~250 MB: tool calls and results, every tenth event a ~900-byte
llm_request): peak RSS of the wop process and events/s, and whether the page opens in Chromium when it is installed.

Target (issue 20): peak RSS <= 400 MB (RSS of EVENTS/10 printed beside it: memory must not grow with the
capture). Baseline measured in the same run: a bare read of the capture (orjson-parsing events.jsonl line by line).
Medians of RUNS runs with their spread. Run: python bench/bench_report.py [EVENTS] [RUNS]
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_spread, realistic_data  # noqa: E402

from openwop_cli.format.redact import Redactor  # noqa: E402
from openwop_cli.format.sink import CaptureSink  # noqa: E402


def write_capture(path: Path, count: int) -> None:
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    for index in range(count // 2):
        if index % 5 == 0:
            sink.append("llm_request", realistic_data(index))
            sink.append("llm_response", {"callId": f"call-{index}", "ok": True, "text": "It shipped yesterday."})
        else:
            sink.append("tool_call", {"name": "lookup", "args": {"order": f"A-{index}"}, "callId": f"t{index}"})
            sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": {"status": "shipped", "n": index}})
    sink.finalize("ok")


def bare_read(path: Path) -> float:
    start = time.perf_counter()
    with open(path / "events.jsonl", "rb") as handle:
        for line in handle:
            orjson.loads(line)
    return time.perf_counter() - start


def reported(capture: Path, page: Path) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of `wop report`, alone in its own child (the bench's children before it were smaller)."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "openwop_cli", "report", str(capture),
                           "-o", str(page)], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, int(done.stdout) / 1024


def opens_in_chromium(page: Path) -> str:
    browser = next((shutil.which(name) for name in ("chromium", "chromium-browser") if shutil.which(name)), None)
    if browser is None:
        return "not checked (no chromium on PATH)"
    start = time.perf_counter()
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=120000",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=900)
    ready = 'data-ready="true"' in dom.stdout
    return f"{'opens' if ready else 'DID NOT OPEN'} in headless Chromium ({time.perf_counter() - start:.0f} s to dump its DOM)"


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as temp:
        small, capture, page = Path(temp) / "small", Path(temp) / "capture", Path(temp) / "report.html"
        write_capture(small, events // 10)
        write_capture(capture, events)
        size = (capture / "events.jsonl").stat().st_size / 1e6
        small_rss = reported(small, page)[1]
        bare, seconds, rss = [], [], []
        for _ in range(runs):
            bare.append(bare_read(capture))
            took, peak = reported(capture, page)
            seconds.append(took)
            rss.append(peak)
        rss_median, rss_spread = median_spread(rss)
        rate, rate_spread = median_spread([events / took for took in seconds])
        bare_median = median_spread(bare)[0]
        print(f"{events:,} events ({size:.0f} MB): wop report peak RSS {rss_median:.0f} MiB ({rss_spread}), target <= 400 "
              f"({rss_median / 400:.2f}x the target); {small_rss:.0f} MiB for {events // 10:,} events")
        print(f"  {rate:,.0f} events/s ({rate_spread}); {median_spread(seconds, '.1f')[0]:.1f} s against a bare read of "
              f"{bare_median:.1f} s ({median_spread(seconds)[0] / bare_median:.1f}x); page {page.stat().st_size / 1e6:.0f} MB, "
              f"{opens_in_chromium(page)}")


if __name__ == "__main__":
    main()
