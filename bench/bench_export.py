"""`wop export otel` of a 10,000-event capture to a real Arize Phoenix server, beside Phoenix's ingest time.

Target (issue 19): the export (the whole `wop export otel` command: read, build the spans, send them)
takes <= 3 s; the baseline is the time Phoenix then needs until every span can be read back. The
capture holds 2,500 LLM calls (each with a nested tool call) as the sink writes them. Phoenix is
started on its own ports in a temporary directory and stopped at the end.
Run: python bench/bench_export.py [EVENTS] [ROUNDS]   (needs the otel and test extras)
"""

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import realistic_data  # noqa: E402


def write_capture(path: Path, events: int) -> None:
    from openwop_cli.format.redact import Redactor
    from openwop_cli.format.sink import CaptureSink

    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({"name": "bench-export", "program": {"argv": ["python", "agent.py"]}})
    sink.append("run_start", {"argv": ["python", "agent.py"]})
    origin = {"pid": 1, "thread": "MainThread"}
    for index in range((events - 2) // 4):
        request = realistic_data(index)
        sink.append("llm_request", request, origin=origin)
        sink.append("tool_call", {"name": "lookup", "args": {"id": index}, "callId": f"t{index}"}, origin=origin)
        sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": {"status": "shipped"}}, origin=origin)
        sink.append("llm_response", {"provider": "openai", "model": "gpt-4o-mini", "callId": request["callId"],
                                     "ok": True, "stopReason": "stop", "usage": request["usage"],
                                     "response": {"choices": [{"message": {"content": f"A-{index} has shipped"}}]}},
                    origin=origin)
    sink.append("run_end", {"exitCode": 0, "status": "ok"})
    sink.finalize("ok")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_phoenix(work: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false"}
    server = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.5)
    raise SystemExit("Phoenix did not start")


def spans_in(url: str, project: str) -> int:
    """How many spans of the project Phoenix can return now (its REST API, paged)."""
    count, cursor = 0, None
    while True:
        query = f"limit=1000{'&cursor=' + cursor if cursor else ''}"
        try:
            with urllib.request.urlopen(f"{url}/v1/projects/{project}/spans?{query}", timeout=30) as response:
                page = orjson.loads(response.read())
        except OSError:
            return count
        count += len(page["data"])
        cursor = page.get("next_cursor")
        if not cursor or not page["data"]:
            return count


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        capture = root / "capture"
        write_capture(capture, events)
        spans = 1 + 2 * ((events - 2) // 4)
        server, url = start_phoenix(root / "phoenix")
        exports, ingests = [], []
        try:
            for _ in range(rounds):
                project = f"bench-{uuid.uuid4().hex[:8]}"
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "openwop_cli", "export", "otel", str(capture), "--endpoint", url,
                                "--project", project], check=True, stdout=subprocess.DEVNULL)
                exported = time.perf_counter()
                while spans_in(url, project) < spans:
                    time.sleep(0.2)
                exports.append(exported - start)
                ingests.append(time.perf_counter() - exported)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    print(f"export of a {events:,}-event capture ({spans:,} spans): median {statistics.median(exports):.2f} s "
          f"(min {min(exports):.2f}, max {max(exports):.2f}); Phoenix ingest after it: median "
          f"{statistics.median(ingests):.2f} s (min {min(ingests):.2f}, max {max(ingests):.2f}); "
          f"ratio {statistics.median(exports) / statistics.median(ingests):.2f}; {rounds} rounds; target export <= 3 s")


if __name__ == "__main__":
    main()
