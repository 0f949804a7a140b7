"""Reading captures on several threads at once, from a process's start: msgspec builds what it knows of a type on the
type's first conversion, and two threads doing that at once for the same types crashed the process (SIGSEGV in
msgspec 0.22; `wop replay DIR -j 2` reads each source capture on a thread of its own). format.shape.shapes_ready
builds it once, on one thread, first."""

import subprocess
import sys

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink

PROGRAM = """
import sys, threading
from openwop_cli.format.verify import verify_capture

sys.setswitchinterval(1e-6)  # threads change hands between any two bytecodes: a race shows at once
start = threading.Barrier(4)
failures = []

def read():
    start.wait()
    report = verify_capture(sys.argv[1])
    if not report.ok:
        failures.append(report.problems)

threads = [threading.Thread(target=read) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
sys.exit(1 if failures else 0)
"""


def test_threads_reading_captures_from_the_start_of_a_process_never_crash_it(tmp_path):
    capture = tmp_path / "capture"
    sink = CaptureSink(capture, redactor=Redactor("none"))
    sink.start({"captureId": "threads"})
    sink.append("llm_request", {"provider": "openai", "model": "m", "request": {"messages": []}, "callId": "l1"})
    sink.append("llm_response", {"provider": "openai", "model": "m", "response": {"text": "hi"}, "callId": "l1"})
    sink.append("nondeterministic", {"source": "clock", "key": "k", "value": 1.5})
    sink.finalize("ok")
    codes = []
    for _ in range(20):  # each a fresh process: the race is on the first conversions only
        done = subprocess.run([sys.executable, "-c", PROGRAM, str(capture)], capture_output=True, text=True,
                              timeout=60)
        codes.append(done.returncode)
        assert done.returncode == 0, f"exit {done.returncode} after {len(codes)} runs:\n{done.stderr[-2000:]}"
