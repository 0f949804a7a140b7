"""An OTLP/HTTP receiver on 127.0.0.1 that writes what it receives as the OpenTelemetry Collector's file exporter
does: OTLP JSON lines (`format: json`, traces and logs in files of their own) and length-prefixed protobuf messages
(`format: proto`). Its JSON mapping is written here from the OTLP spec, apart from wop's exporter.
"""

import base64
import json
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def collector_json(message) -> dict:
    """A protobuf export request as OTLP JSON: camelCase names, integer enums, hex trace and span ids."""
    document = MessageToDict(message, use_integers_for_enums=True)
    for resource in document.get("resourceSpans", []) + document.get("resourceLogs", []):
        for scope in resource.get("scopeSpans", []) + resource.get("scopeLogs", []):
            for item in scope.get("spans", []) + scope.get("logRecords", []):
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in item:
                        item[name] = base64.b64decode(item[name]).hex()
    return document


class OtlpFileReceiver:
    """`with OtlpFileReceiver(directory) as receiver:` receiver.url is the OTLP/HTTP base URL; traces go to
    directory/traces.jsonl (and traces.pb), logs to directory/logs.jsonl."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.traces = self.directory / "traces.jsonl"
        self.proto = self.directory / "traces.pb"
        self.logs = self.directory / "logs.jsonl"
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    if self.path.endswith("/v1/traces"):
                        message = ExportTraceServiceRequest.FromString(body)
                        receiver._append(receiver.traces, json.dumps(collector_json(message)).encode() + b"\n")
                        receiver._append(receiver.proto, struct.pack(">I", len(body)) + body)
                    elif self.path.endswith("/v1/logs"):
                        message = ExportLogsServiceRequest.FromString(body)
                        receiver._append(receiver.logs, json.dumps(collector_json(message)).encode() + b"\n")
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @staticmethod
    def _append(path: Path, data: bytes) -> None:
        with open(path, "ab") as file:
            file.write(data)

    def __enter__(self) -> "OtlpFileReceiver":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
