"""Start-up cost the child bootstrap adds to a Python program run under `wop capture`.

Target (issue 4): <= 30 ms. Starts `python -c pass` plainly and with the bootstrap's environment
(connected to a real collector), interleaved, and compares the medians.
Run: python bench/bench_bootstrap.py [RUNS]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from openwop_cli.host.collector import Collector
from openwop_cli.host.launcher import child_environment


def start_ms(env: dict) -> float:
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return (time.perf_counter() - begin) * 1000


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as temp:
        sink = CaptureSink(Path(temp) / "c", redactor=Redactor("default", ()))
        sink.start({})
        collector = Collector(sink.append, lambda pid, message: None)
        collector.start()
        plain_env = dict(os.environ)
        wop_env = child_environment(collector.address, Path(temp) / "c")
        plain, booted = [], []
        for _ in range(runs):
            plain.append(start_ms(plain_env))
            booted.append(start_ms(wop_env))
        collector.stop(1.0)
        sink.finalize("ok")
    p, b = statistics.median(plain), statistics.median(booted)
    print(f"python -c pass: plain {p:.1f} ms, with the wop bootstrap {b:.1f} ms, added {b - p:.1f} ms (target <= 30)")


if __name__ == "__main__":
    main()
