"""A capture as an OpenTelemetry trace, sent over OTLP/HTTP with the official SDK and exporter.

One trace per capture: a root span for the run, a child span for every LLM call, tool call and
HTTP request with its recorded timestamps, nested under the call that was pending in the same
thread/task when it was made (the `wop show` timeline's nesting). Spans carry the GenAI semantic
conventions (gen_ai.*) and the OpenInference attributes Arize Phoenix reads (openinference.span.kind,
llm.*, input.value/output.value); state writes, recorded values and replay divergences are span
events. Values are exported as the capture holds them, through the capture's redaction profile again (a capture
made before a secret format was known exports none of it): whatever was redacted stays redacted.

The SDK (`pip install 'openwop-cli[otel]'`) is imported only here, when an export runs. Every capture
is read and turned into spans before the first byte is sent, and the endpoint is checked to be
reachable first, so a bad capture or a dead endpoint exports nothing.
"""

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from openwop_cli.errors import ExportError, IncompleteCapture, UsageError, WopError

DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces"
TRACES_PATH = "/v1/traces"
MASK = "***"
MAX_VALUE_CHARS = 32_768
MAX_STATUS_BODY_CHARS = 200  # of a failed HTTP answer's body, in its span's status text
SPANS_PER_REQUEST = 1_000
CONNECT_TIMEOUT_SECONDS = 3.0
EXTRA_HINT = "wop export otel needs the OpenTelemetry SDK and OTLP exporter: pip install 'openwop-cli[otel]'"
# gen_ai.provider.name values of the semantic conventions where they differ from wop's provider names
GENAI_PROVIDERS = {"google": "gcp.gemini", "mistral": "mistral_ai", "xai": "x_ai", "azure": "azure.ai.openai"}
_CALLS = {"llm_request", "tool_call"}
_EVENT_NAMES = {"state_mutation": "wop.state_mutation", "nondeterministic": "wop.nondeterministic",
                "replay_note": "wop.replay.note", "replay_diverged": "wop.replay.divergence"}


@dataclass(frozen=True, slots=True)
class ExportedTrace:
    """What one capture became: its trace id and how many spans it has."""

    capture: Path
    capture_id: str
    trace_id: str
    spans: int


def endpoint_url(given: str | None, environ: dict[str, str]) -> str:
    """The OTLP/HTTP traces URL: --endpoint (a base URL, with no path, gets /v1/traces), else the OTEL_EXPORTER_OTLP_*
    variables (the base endpoint's path gets /v1/traces, as the OTLP exporter specification says), else the OTLP
    default on localhost. Its query and credentials stay where they are."""
    if given:
        parts = urlsplit(given)
        try:
            parts.port  # noqa: B018 (reading the port raises ValueError when it is not a number)
        except ValueError:
            parts = parts._replace(scheme="")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--endpoint {shown_url(given)}: expected an http(s) URL, e.g. http://127.0.0.1:6006")
        return _traces_url(given) if parts.path in ("", "/") else given
    if environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    if environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return _traces_url(environ["OTEL_EXPORTER_OTLP_ENDPOINT"])
    return DEFAULT_ENDPOINT


def _traces_url(base: str) -> str:
    """base with /v1/traces added to its path (before its query, not after it)."""
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + TRACES_PATH))


def shown_url(url: str) -> str:
    """An endpoint URL as wop prints it (errors, --json): its credentials masked — the userinfo's password (or a
    lone user name, often a key) and every query value (`?api_key=…`); the rest as given."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, has_password, _password = userinfo.partition(":")
        netloc = f"{user}:***@{host}" if has_password else f"***@{host}"
    query = "&".join(f"{name}={MASK}" if sep else name
                     for name, sep, _value in (pair.partition("=") for pair in parts.query.split("&")) if name or sep)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def check_reachable(url: str) -> None:
    """Open (and close) a TCP connection to the endpoint; an ExportError naming it when nothing answers."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_SECONDS).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ExportError(f"cannot reach the OTLP endpoint {shown_url(url)} ({reason}); nothing was exported") from None


def export_captures(captures: list[Path], url: str | None, project: str | None = None,
                    file: Path | None = None) -> list[ExportedTrace]:
    """Send each capture as one trace to url, or write them to file as OTLP JSON lines (the Collector's file exporter
    format; see the module docstring); returns what was sent."""
    sdk = _sdk()
    collected: list[Any] = []
    provider = sdk.tracer_provider(collected, project)
    tracer = provider.get_tracer("openwop_cli.export.otel")
    traces = []
    for capture in captures:
        before = len(collected)
        capture_id, trace_id = _trace(tracer, sdk, capture)
        traces.append(ExportedTrace(capture, capture_id, trace_id, len(collected) - before))
    if file is not None:
        _write_file(collected, file)
        provider.shutdown()
        return traces
    assert url is not None
    check_reachable(url)
    exporter = sdk.exporter(url)
    try:
        for start in range(0, len(collected), SPANS_PER_REQUEST):
            if exporter.export(collected[start:start + SPANS_PER_REQUEST]) != sdk.SUCCESS:
                sent = f"; {start} of {len(collected)} spans had been sent" if start else "; nothing was exported"
                raise ExportError(f"the OTLP endpoint {shown_url(url)} did not accept the spans{sent}")
    finally:
        exporter.shutdown()
        provider.shutdown()
    return traces


def _write_file(spans: list[Any], file: Path) -> None:
    """The spans as OTLP JSON, one ExportTraceServiceRequest of up to SPANS_PER_REQUEST spans a line."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from openwop_cli.export.otlp_json import otlp_json

    lines = [orjson.dumps(otlp_json(encode_spans(spans[start:start + SPANS_PER_REQUEST]))) + b"\n"
             for start in range(0, len(spans), SPANS_PER_REQUEST)]
    try:
        with open(file, "wb") as written:
            written.writelines(lines)
    except OSError as exc:
        raise ExportError(f"cannot write {file}: {exc.strerror or exc}; nothing was exported") from None


def _trace(tracer: Any, sdk: Any, capture: Path) -> tuple[str, str]:
    """Build the spans of one capture (ended, so the SDK hands them to the collector); returns its captureId
    and the trace id."""
    from openwop_cli.format.reader import CaptureReader
    from openwop_cli.format.redact import Redactor
    from openwop_cli.report.timeline import paired_rows

    reader = CaptureReader(capture, resolve_blobs=True)
    redactor = Redactor.of_capture(reader.manifest)
    rows = list(paired_rows(redactor.shown(reader)))
    try:
        reader.raise_for_problems()
    except IncompleteCapture:
        pass
    manifest = redactor.redact_flagged(reader.manifest)
    times = [event["ts"] for row in rows for event in row.events]
    if not times:
        times = [manifest["createdAt"] if type(manifest.get("createdAt")) is int else 0]
    first, last = min(times), max(times)
    root = tracer.start_span(f"wop {manifest.get('name') or 'run'}", start_time=_ns(first),
                             attributes={**_root_attributes(manifest, rows), **_whole_run(manifest, rows, reader.blobs)})
    spans: dict[int, Any] = {}
    by_seq: dict[int, Any] = {}
    endings: list[tuple[Any, int]] = []
    for row in rows:
        parent = spans.get(id(row.parent), root) if row.parent is not None else root
        event = row.event
        if event["type"] in _CALLS:
            span = _call_span(tracer, sdk, row, parent)
            spans[id(row)] = span
            for recorded in row.events:
                by_seq[recorded["seq"]] = span
            endings.append((span, _ns(row.result["ts"]) if row.result is not None else _ns(last)))
        elif event["type"] in _EVENT_NAMES:
            target = _divergence_target(event, by_seq, root) if event["type"] == "replay_diverged" else parent
            target.add_event(_EVENT_NAMES[event["type"]], {**_event_attributes(event), "wop.event": _whole(event)},
                             timestamp=_ns(event["ts"]))
            if event["type"] == "replay_diverged":
                target.set_status(sdk.error(str(event["data"].get("code", "diverged"))))
                root.set_status(sdk.error("the replay diverged"))
    for span, end in endings:
        span.end(end_time=max(end, span.start_time))
    if manifest.get("status") == "error":
        root.set_status(sdk.error(str(manifest.get("error") or "the run ended with an error")))
    root.end(end_time=_ns(last))
    return str(manifest.get("captureId", "")), format(root.get_span_context().trace_id, "032x")


def _call_span(tracer: Any, sdk: Any, row: Any, parent: Any) -> Any:
    data = row.event["data"]
    result = (row.result or {}).get("data") or {}
    if row.event["type"] == "llm_request":
        name, kind, attributes = _llm(data, result)
    elif data.get("name") == "http":
        name, kind, attributes = _http(data, result)
    else:
        name, kind, attributes = _tool(data, result)
    attributes.update(_where(row))
    attributes["wop.request_event"] = _whole(row.event)
    if row.result is None:
        attributes["wop.result_missing"] = True
    else:
        attributes["wop.result_event"] = _whole(row.result)
    span = tracer.start_span(name, context=sdk.context_of(parent), kind=sdk.kind(kind), attributes=attributes,
                             start_time=_ns(row.event["ts"]))
    if result.get("ok") is False:
        span.set_status(sdk.error(_failure_text(result)))
    return span


def _llm(data: dict[str, Any], result: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    from openwop_cli.format.cachekey import recipe_input
    from openwop_cli.report.summary import response_text

    provider, model = str(data.get("provider") or "unknown"), str(data.get("model") or "")
    request = data.get("request") if isinstance(data.get("request"), dict) else {}
    response = result.get("response")
    operation = "generate_content" if provider == "google" else "chat"
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": operation, "gen_ai.system": provider,
        "gen_ai.provider.name": GENAI_PROVIDERS.get(provider, provider), "gen_ai.request.model": model,
        "openinference.span.kind": "LLM", "llm.model_name": model, "llm.provider": provider, "llm.system": provider,
        "input.value": _text(request), "input.mime_type": "application/json",
    }
    for key, name in (("temperature", "temperature"), ("top_p", "top_p"), ("max_tokens", "max_tokens"),
                      ("max_completion_tokens", "max_tokens"), ("max_output_tokens", "max_tokens")):
        if isinstance(request.get(key), (int, float)) and not isinstance(request.get(key), bool):
            attributes[f"gen_ai.request.{name}"] = request[key]
    parameters = {key: value for key, value in request.items() if key not in ("messages", "tools", "contents", "input")}
    attributes["llm.invocation_parameters"] = _text(parameters)
    messages = (recipe_input(provider, model, request).get("messages") or []) if request else []
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        if isinstance(message, dict):
            attributes[f"llm.input_messages.{index}.message.role"] = str(message.get("role"))
            content = message.get("content")
            attributes[f"llm.input_messages.{index}.message.content"] = _text("" if content is None else content)
    if isinstance(response, dict):
        for key, name in (("model", "gen_ai.response.model"), ("id", "gen_ai.response.id")):
            if isinstance(response.get(key), str):
                attributes[name] = response[key]
        attributes["output.value"] = _text(response)
        attributes["output.mime_type"] = "application/json"
        answer = response_text(response)
        attributes["llm.output_messages.0.message.role"] = "assistant"
        attributes["llm.output_messages.0.message.content"] = _text(answer if answer is not None else "")
    if isinstance(result.get("stopReason"), str):
        attributes["gen_ai.response.finish_reasons"] = [result["stopReason"]]
    attributes.update(_tokens(result.get("usage")))
    if isinstance(data.get("http"), dict) and isinstance(data["http"].get("url"), str):
        attributes.update(_server(data["http"]["url"]))
    return f"{operation} {model}".strip(), "client", attributes


def _tokens(usage: Any) -> dict[str, Any]:
    """Token counts under both conventions, from any provider's usage shape."""
    if not isinstance(usage, dict):
        return {}
    found = {}
    for name, keys in (("input", ("input_tokens", "prompt_tokens", "promptTokenCount", "prompt_eval_count", "inputTokens")),
                       ("output", ("output_tokens", "completion_tokens", "candidatesTokenCount", "eval_count",
                                   "outputTokens")),
                       ("total", ("total_tokens", "totalTokenCount", "totalTokens"))):
        value = next((usage[key] for key in keys if type(usage.get(key)) is int), None)
        if value is not None:
            found[name] = value
    if "total" not in found and {"input", "output"} <= found.keys():
        found["total"] = found["input"] + found["output"]
    attributes = {}
    for name, openinference in (("input", "prompt"), ("output", "completion"), ("total", "total")):
        if name in found:
            attributes[f"llm.token_count.{openinference}"] = found[name]
            if name != "total":
                attributes[f"gen_ai.usage.{name}_tokens"] = found[name]
    return attributes


def _tool(data: dict[str, Any], result: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    name = str(data.get("name") or "tool")
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                  "openinference.span.kind": "TOOL", "tool.name": name,
                                  "input.value": _text(data.get("args")), "input.mime_type": "application/json"}
    if "result" in result:
        attributes.update({"output.value": _text(result["result"]), "output.mime_type": "application/json"})
    return f"execute_tool {name}", "internal", attributes


def _http(data: dict[str, Any], result: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    args = data.get("args") if isinstance(data.get("args"), dict) else {}
    method, url = str(args.get("method") or "GET"), str(args.get("url") or "")
    answer = result.get("result") if isinstance(result.get("result"), dict) else {}
    attributes: dict[str, Any] = {"http.request.method": method, "url.full": url, "openinference.span.kind": "TOOL",
                                  "tool.name": "http", "input.value": _text(args), "input.mime_type": "application/json",
                                  **_server(url)}
    if type(answer.get("status")) is int:
        attributes["http.response.status_code"] = answer["status"]
    if "body" in answer:
        attributes.update({"output.value": _text(answer["body"]), "output.mime_type": "application/json"})
    return f"{method} {urlsplit(url).path or '/'}", "client", attributes


def _server(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    attributes: dict[str, Any] = {"server.address": parts.hostname} if parts.hostname else {}
    try:
        if parts.port is not None:
            attributes["server.port"] = parts.port
    except ValueError:
        pass
    return attributes


def _where(row: Any) -> dict[str, Any]:
    """Where in the capture the call is: its seqs, call id, and the process/thread/task that made it."""
    event = row.event
    attributes: dict[str, Any] = {"wop.seq": event["seq"]}
    if row.result is not None:
        attributes["wop.result_seq"] = row.result["seq"]
    if isinstance(event["data"].get("callId"), str):
        attributes["wop.call_id"] = event["data"]["callId"]
    origin = event.get("origin") or {}
    for key, name in (("pid", "process.pid"), ("thread", "thread.name"), ("task", "wop.origin.task")):
        if isinstance(origin.get(key), (int, str)):
            attributes[name] = origin[key]
    return attributes


def _root_attributes(manifest: dict[str, Any], rows: list[Any]) -> dict[str, Any]:
    program = manifest.get("program") or {}
    argv = [str(part) for part in program.get("argv") or []]
    end: dict[str, Any] = next((row.event["data"] for row in reversed(rows) if row.event["type"] == "run_end"), {})
    attributes: dict[str, Any] = {
        "openinference.span.kind": "CHAIN", "wop.capture_id": str(manifest.get("captureId", "")),
        "wop.run_id": str(manifest.get("runId", "")), "wop.status": str(manifest.get("status", "")),
        "wop.mode": str(manifest.get("mode", "capture")),
        "input.value": " ".join(argv), "output.value": _text({key: end.get(key) for key in ("status", "exitCode")}),
        "output.mime_type": "application/json",
    }
    if argv:
        attributes["process.command_args"] = argv
    if type(manifest.get("eventCount")) is int:
        attributes["wop.event_count"] = manifest["eventCount"]
    if type(end.get("exitCode")) is int:
        attributes["process.exit.code"] = end["exitCode"]
    if manifest.get("name"):
        attributes["wop.name"] = str(manifest["name"])
    source = manifest.get("source")
    if isinstance(source, dict) and source.get("captureId"):
        attributes["wop.source.capture_id"] = str(source["captureId"])
    score = manifest.get("score")
    if isinstance(score, dict) and isinstance(score.get("score"), (int, float)):
        attributes["wop.replay.score"] = float(score["score"])
    return attributes


def _whole_run(manifest: dict[str, Any], rows: list[Any], blobs: Any) -> dict[str, Any]:
    """What `wop import otel` needs to give the capture back whole: its manifest's own fields (the pinned files with
    their stored text in place of a blob reference) and its run_start and run_end events."""
    kept = {key: manifest[key] for key in ("captureId", "name", "status", "ambient") if key in manifest}
    kept["program"] = _pins_with_copies(manifest.get("program") or {}, blobs)
    attributes = {"wop.manifest": orjson.dumps(kept).decode()}
    for row in rows:
        if row.event["type"] in ("run_start", "run_end"):
            attributes[f"wop.{row.event['type']}_event"] = _whole(row.event)
    return attributes


def _pins_with_copies(program: dict[str, Any], blobs: Any) -> dict[str, Any]:
    """The program with each pinned file's stored copy in place of its blob reference (`copy`, with the reference's
    `encoding`); a pin whose copy is missing, altered or binary travels without one (by path and sha256)."""
    travelling = dict(program)
    for key in ("script", "modules", "workflow"):
        pins = program.get(key)
        if pins is None:
            continue
        carried = []
        for pin in pins if isinstance(pins, list) else [pins]:
            reference = pin.get("blob") if isinstance(pin, dict) else None
            try:
                copy = blobs.resolve(reference) if isinstance(reference, dict) else None
            except WopError:
                copy = None
            if isinstance(pin, dict):
                bare = {name: value for name, value in pin.items() if name != "blob"}
                encoding = reference.get("encoding") if isinstance(reference, dict) else None
                kept = isinstance(copy, str) or (copy is not None and encoding == "json")
                carried.append({**bare, "copy": copy, "encoding": encoding} if kept else bare)
        travelling[key] = carried if isinstance(pins, list) else (carried[0] if carried else None)
    return travelling


def _whole(event: dict[str, Any]) -> str:
    """An event as JSON, whole (never cut: the import rebuilds the capture from it)."""
    return orjson.dumps({key: event[key] for key in ("seq", "ts", "type", "data", "origin") if key in event}).decode()


def _event_attributes(event: dict[str, Any]) -> dict[str, Any]:
    """A state write, recorded value, note or divergence as span event attributes (scalars as they are, else JSON)."""
    attributes: dict[str, Any] = {"wop.seq": event["seq"]}
    for key, value in event["data"].items():
        if isinstance(value, (str, bool, int, float)):
            attributes[f"wop.{key}"] = _text(value) if isinstance(value, str) else value
        elif value is not None:
            attributes[f"wop.{key}"] = _text(value)
    return attributes


def _divergence_target(event: dict[str, Any], by_seq: dict[int, Any], root: Any) -> Any:
    """The span of the call a divergence was found at (replayEventId = `<runId>:<seq>` in this capture), else the root."""
    where = event["data"].get("replayEventId")
    if isinstance(where, str) and where.rpartition(":")[2].isdigit():
        return by_seq.get(int(where.rpartition(":")[2]), root)
    return root


def _failure_text(result: dict[str, Any]) -> str:
    """A failed call's status text: its exception, or the HTTP status and the start of the body of a 4xx/5xx answer
    (which carries no exception)."""
    from openwop_cli.report.summary import failure_text

    error = result.get("error")
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
    if error is not None:
        return _text(error)
    return failure_text(result, MAX_STATUS_BODY_CHARS)


def _text(value: Any) -> str:
    """A value as an attribute string: text as it is, anything else as JSON; cut to MAX_VALUE_CHARS."""
    if isinstance(value, str):
        text = value
    else:
        text = orjson.dumps(value, default=lambda other: f"<{len(other)} bytes>" if isinstance(other, (bytes, bytearray))
                            else repr(other)).decode()
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _ns(milliseconds: int) -> int:
    return int(milliseconds) * 1_000_000


class _Sdk:
    """The few OpenTelemetry SDK pieces an export uses, imported together (a clear error when the extra is missing)."""

    def __init__(self) -> None:
        import logging

        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
        from opentelemetry.sdk.trace.export import SpanExportResult
        from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

        from openwop_cli._version import __version__

        logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # failures are reported as one wop line
        self.SUCCESS = SpanExportResult.SUCCESS
        self._exporter, self._resource, self._limits = OTLPSpanExporter, Resource, SpanLimits
        self._provider, self._processor = TracerProvider, SpanProcessor
        self._kinds = {"client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}
        self._status, self._codes, self._context = Status, StatusCode, set_span_in_context
        self._version = __version__

    def tracer_provider(self, collected: list[Any], project: str | None) -> Any:
        attributes = {"service.name": "wop", "service.version": self._version, "telemetry.sdk.name": "opentelemetry"}
        if project:
            attributes["openinference.project.name"] = project
        unlimited = self._limits.UNSET
        provider = self._provider(resource=self._resource.create(attributes), shutdown_on_exit=False,
                                  span_limits=self._limits(max_span_attributes=unlimited, max_events=unlimited))

        class Collect(self._processor):  # type: ignore[name-defined]  # (a base class loaded at run time)
            def on_end(self, span: Any) -> None:
                collected.append(span)

        provider.add_span_processor(Collect())
        return provider

    def exporter(self, url: str) -> Any:
        return self._exporter(endpoint=url, timeout=30)

    def kind(self, name: str) -> Any:
        return self._kinds[name]

    def error(self, description: str) -> Any:
        return self._status(self._codes.ERROR, description)

    def context_of(self, span: Any) -> Any:
        return self._context(span)


def _sdk() -> _Sdk:
    try:
        return _Sdk()
    except ImportError:
        raise UsageError(EXTRA_HINT) from None
