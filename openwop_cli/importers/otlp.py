"""OpenTelemetry traces read from where they are kept, as plain spans: OTLP JSON, OTLP protobuf, a Phoenix server.

- OTLP JSON as the Collector's file exporter writes it: one `{"resourceSpans": …}` (or `{"resourceLogs": …}`: GenAI
  events sent as log records) document a line, or one document in a file; a directory of such files.
- OTLP protobuf: one ExportTraceServiceRequest (an OTLP/HTTP body), or the file exporter's `format: proto`, messages
  each after its length (4 bytes, big-endian).
- Phoenix (`--phoenix URL --project P`): through its own client, spans as its REST API returns them.

A trace file is data from a stranger: the files, each document, the depth of a value, the spans of a trace are
bounded, every field's type is checked, and anything wrong is one BadTrace naming the file and document. Memory is
flat in the number of traces: a first pass notes which documents hold each trace (where they are, nothing else), and
each trace is then read from its own documents only.
"""

import base64
import binascii
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from openwop_cli.errors import BadTrace

MAX_FILE_BYTES = 8 << 30
MAX_DOCUMENT_BYTES = 256 << 20
MAX_FILES = 10_000
MAX_TRACES = 1_000_000
MAX_SPANS_PER_TRACE = 200_000
MAX_VALUE_DEPTH = 32
PHOENIX_PAGE = 10_000
_PREFIX = struct.Struct(">I")
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """A span event (or a log record that belongs to the span: its body is attribute `body`)."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class Span:
    """One span in plain types: ids as lowercase hex, times in epoch nanoseconds, attributes by their dotted name."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[SpanEvent] = field(default_factory=list)
    status_code: int = 0  # OTLP's: 0 unset, 1 ok, 2 error
    status_message: str = ""
    dropped_attributes: int = 0
    resource: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Document:
    path: Path
    offset: int
    length: int
    proto: bool


class TraceSource:
    """The traces in OTLP files (a file or a directory of them): `trace_ids()` in the order they first appear, then
    `spans(trace_id)` for each."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._where: dict[str, list[_Document]] = {}
        self._cached: tuple[_Document, Any] | None = None
        for file in _files(self.path):
            for document in _documents(file):
                for trace_id in _trace_ids(self._parsed(document), document):
                    places = self._where.setdefault(trace_id, [])
                    if not places or places[-1] != document:
                        places.append(document)
                    if len(self._where) > MAX_TRACES:
                        raise BadTrace(f"{self.path} holds more than {MAX_TRACES} traces; import them in parts")

    def trace_ids(self) -> list[str]:
        return list(self._where)

    def spans(self, trace_id: str) -> list[Span]:
        """The trace's spans (log records that name one of its spans among that span's events), in no set order."""
        spans: list[Span] = []
        logs: list[tuple[str, SpanEvent]] = []
        for document in self._where.get(trace_id, ()):
            parsed = self._parsed(document)
            if document.proto:
                spans.extend(_proto_spans(parsed, trace_id))
            else:
                spans.extend(_json_spans(parsed, trace_id, document))
                logs.extend(_json_logs(parsed, trace_id, document))
            if len(spans) > MAX_SPANS_PER_TRACE:
                raise BadTrace(f"trace {trace_id} has more than {MAX_SPANS_PER_TRACE} spans; wop imports no bigger one")
        by_id = {span.span_id: span for span in spans}
        for span_id, event in logs:
            if span_id in by_id:
                by_id[span_id].events.append(event)
        return spans

    def _parsed(self, document: _Document) -> Any:
        """A document's parsed form; the last one is kept (the traces of one batch are read one after the other)."""
        if self._cached is not None and self._cached[0] == document:
            return self._cached[1]
        raw = _read(document)
        parsed = _parse_proto(raw, document) if document.proto else _parse_json(raw, document)
        self._cached = (document, parsed)
        return parsed


# ---- files and documents ---------------------------------------------------------------------------------------


def _files(path: Path) -> list[Path]:
    try:
        if path.is_dir():
            files = sorted(child for child in path.iterdir() if child.is_file() and not child.name.startswith("."))
            if len(files) > MAX_FILES:
                raise BadTrace(f"{path} holds {len(files)} files; wop reads at most {MAX_FILES}")
            if not files:
                raise BadTrace(f"{path} holds no trace files")
            return files
        if not path.is_file():
            raise BadTrace(f"no trace at {path}: not a file or directory")
    except OSError as exc:
        raise BadTrace(f"cannot read {path}: {exc.strerror or exc}") from None
    return [path]


def _documents(path: Path) -> Iterator[_Document]:
    """Where each document of a file is: JSON lines (or one JSON document), else protobuf messages."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise BadTrace(f"{path} is {size} bytes; wop imports trace files up to {MAX_FILE_BYTES} bytes")
        with open(path, "rb") as file:
            head = file.read(64).lstrip()
            if head[:1] in (b"{", b"["):
                yield from _json_documents(path, file, size)
            else:
                yield from _proto_documents(path, file, size)
    except OSError as exc:
        raise BadTrace(f"cannot read {path}: {exc.strerror or exc}") from None


def _json_documents(path: Path, file: Any, size: int) -> Iterator[_Document]:
    file.seek(0)
    first = file.readline(MAX_DOCUMENT_BYTES + 1)
    if not _is_json(first):  # one document over several lines (pretty-printed)
        if size > MAX_DOCUMENT_BYTES:
            raise BadTrace(f"{path}: a JSON document over several lines larger than {MAX_DOCUMENT_BYTES} bytes")
        yield _Document(path, 0, size, False)
        return
    offset = 0
    line = first
    while line:
        if len(line) > MAX_DOCUMENT_BYTES:
            raise BadTrace(f"{path}: a line at byte {offset} is longer than {MAX_DOCUMENT_BYTES} bytes")
        if line.strip():
            yield _Document(path, offset, len(line), False)
        offset += len(line)
        line = file.readline(MAX_DOCUMENT_BYTES + 1)


def _is_json(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _proto_documents(path: Path, file: Any, size: int) -> Iterator[_Document]:
    """The file exporter's length-prefixed messages when the lengths tile the file, else the file as one message."""
    file.seek(0)
    places, offset = [], 0
    while offset + 4 <= size:
        (length,) = _PREFIX.unpack(file.read(4))
        if length == 0 or offset + 4 + length > size:
            break
        places.append(_Document(path, offset + 4, length, True))
        offset += 4 + length
        file.seek(offset)
    if places and offset == size:
        yield from places
        return
    if size > MAX_DOCUMENT_BYTES:
        raise BadTrace(f"{path} is neither JSON nor length-prefixed OTLP protobuf messages, and too big to be one "
                       f"message (over {MAX_DOCUMENT_BYTES} bytes)")
    yield _Document(path, 0, size, True)


def _read(document: _Document) -> bytes:
    if document.length > MAX_DOCUMENT_BYTES:
        raise BadTrace(f"{document.path}: a document of {document.length} bytes; wop reads up to {MAX_DOCUMENT_BYTES}")
    try:
        with open(document.path, "rb") as file:
            file.seek(document.offset)
            return file.read(document.length)
    except OSError as exc:
        raise BadTrace(f"cannot read {document.path}: {exc.strerror or exc}") from None


def _where(document: _Document) -> str:
    return f"{document.path} (byte {document.offset})"


# ---- OTLP JSON -------------------------------------------------------------------------------------------------


def _parse_json(raw: bytes, document: _Document) -> Any:
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadTrace(f"{_where(document)} is not JSON: {exc}") from None
    if not isinstance(parsed, dict) or not any(key in parsed for key in _TOP_KEYS):
        raise BadTrace(f"{_where(document)} is not OTLP JSON: expected resourceSpans (or resourceLogs)")
    return parsed


_TOP_KEYS = ("resourceSpans", "resource_spans", "resourceLogs", "resource_logs")


def _get(mapping: Any, camel: str, snake: str | None = None) -> Any:
    """A field under its OTLP JSON name, or its protobuf field name (some writers keep those)."""
    if not isinstance(mapping, dict):
        return None
    value = mapping.get(camel)
    return mapping.get(snake) if value is None and snake else value


def _list(mapping: Any, camel: str, snake: str, document: _Document) -> list[Any]:
    value = _get(mapping, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadTrace(f"{_where(document)}: `{camel}` is not a list")
    return value


def _trace_ids(parsed: Any, document: _Document) -> Iterator[str]:
    if document.proto:
        for resource in parsed.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    yield _proto_id(span.trace_id, 16, document, "traceId")
        return
    for resource in _list(parsed, "resourceSpans", "resource_spans", document):
        for scope in _list(resource, "scopeSpans", "scope_spans", document):
            for span in _list(scope, "spans", "spans", document):
                yield _json_id(_get(span, "traceId", "trace_id"), 16, document, "traceId")
    for resource in _list(parsed, "resourceLogs", "resource_logs", document):
        for scope in _list(resource, "scopeLogs", "scope_logs", document):
            for record in _list(scope, "logRecords", "log_records", document):
                trace_id = _get(record, "traceId", "trace_id")
                if trace_id and _get(record, "spanId", "span_id"):
                    yield _json_id(trace_id, 16, document, "traceId")


def _json_spans(parsed: Any, trace_id: str, document: _Document) -> Iterator[Span]:
    for resource in _list(parsed, "resourceSpans", "resource_spans", document):
        resource_attributes = _attributes(_get(_get(resource, "resource"), "attributes"), document)
        for scope in _list(resource, "scopeSpans", "scope_spans", document):
            for span in _list(scope, "spans", "spans", document):
                if _json_id(_get(span, "traceId", "trace_id"), 16, document, "traceId") == trace_id:
                    yield _json_span(span, trace_id, resource_attributes, document)


def _json_span(span: dict[str, Any], trace_id: str, resource: dict[str, Any], document: _Document) -> Span:
    parent = _get(span, "parentSpanId", "parent_span_id")
    status = _get(span, "status") or {}
    events = [SpanEvent(_text(_get(event, "name"), document, "event name"),
                        _nanos(_get(event, "timeUnixNano", "time_unix_nano"), document),
                        _attributes(_get(event, "attributes"), document))
              for event in _list(span, "events", "events", document)]
    return Span(trace_id, _json_id(_get(span, "spanId", "span_id"), 8, document, "spanId"),
                _json_id(parent, 8, document, "parentSpanId") if parent else None,
                _text(_get(span, "name"), document, "span name"),
                _nanos(_get(span, "startTimeUnixNano", "start_time_unix_nano"), document),
                _nanos(_get(span, "endTimeUnixNano", "end_time_unix_nano"), document),
                _attributes(_get(span, "attributes"), document), events, _status_code(_get(status, "code")),
                str(_get(status, "message") or ""), _count(_get(span, "droppedAttributesCount",
                                                                 "dropped_attributes_count")), resource)


def _json_logs(parsed: Any, trace_id: str, document: _Document) -> Iterator[tuple[str, SpanEvent]]:
    """The log records of the trace that name a span (GenAI events sent through the logs API), as span events."""
    for resource in _list(parsed, "resourceLogs", "resource_logs", document):
        for scope in _list(resource, "scopeLogs", "scope_logs", document):
            for record in _list(scope, "logRecords", "log_records", document):
                record_trace = _get(record, "traceId", "trace_id")
                span_id = _get(record, "spanId", "span_id")
                if not record_trace or not span_id or _json_id(record_trace, 16, document, "traceId") != trace_id:
                    continue
                attributes = _attributes(_get(record, "attributes"), document)
                name = _get(record, "eventName", "event_name") or attributes.get("event.name") or ""
                if _get(record, "body") is not None:
                    attributes["body"] = _value(_get(record, "body"), document, 0)
                time = _get(record, "timeUnixNano", "time_unix_nano") or _get(record, "observedTimeUnixNano",
                                                                                "observed_time_unix_nano")
                yield (_json_id(span_id, 8, document, "spanId"),
                       SpanEvent(_text(name, document, "event name"), _nanos(time, document), attributes))


def _attributes(values: Any, document: _Document) -> dict[str, Any]:
    if values is None:
        return {}
    if not isinstance(values, list):
        raise BadTrace(f"{_where(document)}: attributes are not a list of key/value pairs")
    found = {}
    for pair in values:
        key = pair.get("key") if type(pair) is dict else None
        if type(key) is not str:
            raise BadTrace(f"{_where(document)}: an attribute without a string key")
        found[key] = _value(pair.get("value"), document, 0)
    return found


_SCALARS = (("stringValue", "string_value"), ("boolValue", "bool_value"), ("doubleValue", "double_value"))


def _value(value: Any, document: _Document, depth: int) -> Any:
    """An OTLP AnyValue as a plain value (a kvlist as a dict, bytes as bytes)."""
    if type(value) is dict and len(value) == 1:  # the common case first: one field, a string
        text = value.get("stringValue")
        if type(text) is str:
            return text
    if depth > MAX_VALUE_DEPTH:
        raise BadTrace(f"{_where(document)}: a value nested deeper than {MAX_VALUE_DEPTH} levels")
    if not isinstance(value, dict) or not value:
        return None
    for camel, snake in _SCALARS:
        found = _get(value, camel, snake)
        if found is not None:
            return found if not isinstance(found, (dict, list)) else _bad_value(document)
    number = _get(value, "intValue", "int_value")
    if number is not None:
        try:
            number = int(number)
        except (TypeError, ValueError):
            raise BadTrace(f"{_where(document)}: intValue {_short(number)} is not an integer") from None
        if not _INT64[0] <= number <= _INT64[1]:
            raise BadTrace(f"{_where(document)}: intValue {_short(number)} is not a 64-bit integer")
        return number
    array = _get(value, "arrayValue", "array_value")
    if array is not None:
        return [_value(item, document, depth + 1) for item in _list(array, "values", "values", document)]
    kvlist = _get(value, "kvlistValue", "kvlist_value")
    if kvlist is not None:
        return {str(_get(pair, "key")): _value(_get(pair, "value"), document, depth + 1)
                for pair in _list(kvlist, "values", "values", document)}
    encoded = _get(value, "bytesValue", "bytes_value")
    if isinstance(encoded, str):
        try:
            return base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raise BadTrace(f"{_where(document)}: bytesValue is not base64") from None
    return None


def _bad_value(document: _Document) -> Any:
    raise BadTrace(f"{_where(document)}: a scalar value holds a list or object")


def _json_id(value: Any, size: int, document: _Document, name: str) -> str:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex: OTLP JSON's hex, or the base64 a protobuf JSON
    writer makes."""
    if isinstance(value, str):
        if len(value) == size * 2:
            try:
                bytes.fromhex(value)
                return value.lower()
            except ValueError:
                pass
        try:
            raw = base64.b64decode(value, validate=True)
        except binascii.Error:
            raw = b""
        if len(raw) == size:
            return raw.hex()
    raise BadTrace(f"{_where(document)}: {name} {_short(value)} is not a {size}-byte id")


def _nanos(value: Any, document: _Document) -> int:
    try:
        nanos = int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None
    except ValueError:
        nanos = None
    if nanos is None or not 0 <= nanos < 1 << 64:
        raise BadTrace(f"{_where(document)}: time {_short(value)} is not a count of nanoseconds")
    return nanos


def _text(value: Any, document: _Document, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadTrace(f"{_where(document)}: {name} {_short(value)} is not text")
    return value


def _status_code(value: Any) -> int:
    if isinstance(value, str):
        return {"STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2, "OK": 1, "ERROR": 2}.get(value.upper(), 0)
    return value if type(value) is int and value in (0, 1, 2) else 0


def _count(value: Any) -> int:
    try:
        return max(int(value), 0) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


# ---- OTLP protobuf ---------------------------------------------------------------------------------------------


def _parse_proto(raw: bytes, document: _Document) -> Any:
    try:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
    except ImportError:
        raise BadTrace(f"{document.path} is OTLP protobuf, which needs opentelemetry-proto: "
                       "pip install 'openwop-cli[otel]'") from None
    message = TracesData()
    try:
        message.ParseFromString(raw)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise BadTrace(f"{_where(document)} is neither OTLP JSON nor OTLP protobuf ({exc})") from None
    return message


def _proto_spans(message: Any, trace_id: str) -> Iterator[Span]:
    wanted = bytes.fromhex(trace_id)
    for resource in message.resource_spans:
        resource_attributes = _proto_attributes(resource.resource.attributes)
        for scope in resource.scope_spans:
            for span in scope.spans:
                if span.trace_id != wanted:
                    continue
                events = [SpanEvent(event.name, event.time_unix_nano, _proto_attributes(event.attributes))
                          for event in span.events]
                yield Span(trace_id, span.span_id.hex(), span.parent_span_id.hex() or None, span.name,
                           span.start_time_unix_nano, span.end_time_unix_nano, _proto_attributes(span.attributes),
                           events, span.status.code, span.status.message, span.dropped_attributes_count,
                           resource_attributes)


def _proto_id(raw: bytes, size: int, document: _Document, name: str) -> str:
    if len(raw) != size:
        raise BadTrace(f"{_where(document)}: {name} of {len(raw)} bytes, not {size}")
    return raw.hex()


def _proto_attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _proto_value(pair.value, 0) for pair in pairs}


def _proto_value(value: Any, depth: int) -> Any:
    if depth > MAX_VALUE_DEPTH:
        raise BadTrace(f"a protobuf value nested deeper than {MAX_VALUE_DEPTH} levels")
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_proto_value(item, depth + 1) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {pair.key: _proto_value(pair.value, depth + 1) for pair in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


# ---- Phoenix ---------------------------------------------------------------------------------------------------


class PhoenixSource:
    """The traces of a Phoenix project, read through Phoenix's client: its root spans name the traces, and each
    trace's spans are fetched when it is imported."""

    def __init__(self, url: str, project: str) -> None:
        try:
            from phoenix.client import Client
        except ImportError:
            raise BadTrace("reading from Phoenix needs its client: pip install 'openwop-cli[otel]'") from None
        self.path = f"{url.rstrip('/')} (project {project})"
        self._client = Client(base_url=url)
        self._project = project
        roots = self._get(parent_id="null", limit=MAX_TRACES)
        starts: dict[str, str] = {}
        for span in roots:
            trace_id = _phoenix_id((span.get("context") or {}).get("trace_id"), 16)
            starts.setdefault(trace_id, str(span.get("start_time") or ""))
        self._trace_ids = sorted(starts, key=lambda trace: starts[trace])

    def trace_ids(self) -> list[str]:
        return list(self._trace_ids)

    def spans(self, trace_id: str) -> list[Span]:
        found = self._get(trace_ids=[trace_id], limit=MAX_SPANS_PER_TRACE + 1)
        if len(found) > MAX_SPANS_PER_TRACE:
            raise BadTrace(f"trace {trace_id} has more than {MAX_SPANS_PER_TRACE} spans; wop imports no bigger one")
        return [phoenix_span(span) for span in found]

    def _get(self, **filters: Any) -> list[dict[str, Any]]:
        try:
            return list(self._client.spans.get_spans(project_identifier=self._project, timeout=60, **filters))
        except Exception as exc:  # the client raises httpx's errors, and its own for an unknown project
            reason = " ".join(str(exc).split())[:200]
            raise BadTrace(f"cannot read project {self._project!r} from Phoenix at {self.path}: {reason}") from None


def phoenix_span(span: Any) -> Span:
    """A span as Phoenix's REST API returns it (nested attributes, ISO times) in the plain form."""
    span = _phoenix_object(span, "a span")
    context = _phoenix_object(span.get("context"), "a span context")
    events = span.get("events") or []
    if not isinstance(events, list):
        raise BadTrace("Phoenix returned span events that are not a list")
    events = [SpanEvent(str(event.get("name") or ""), _iso_nanos(event.get("timestamp")),
                        flat_attributes(_phoenix_object(event.get("attributes") or {}, "event attributes")))
              for event in map(lambda event: _phoenix_object(event, "a span event"), events)]
    parent = span.get("parent_id")
    code = {"OK": 1, "ERROR": 2}.get(str(span.get("status_code") or "").upper(), 0)
    attributes = flat_attributes(_phoenix_object(span.get("attributes") or {}, "span attributes"))
    kind = span.get("span_kind")
    if isinstance(kind, str) and kind.upper() not in ("", "UNKNOWN"):  # Phoenix keeps the OpenInference kind apart
        attributes.setdefault("openinference.span.kind", kind.upper())
    return Span(_phoenix_id(context.get("trace_id"), 16), _phoenix_id(context.get("span_id"), 8),
                _phoenix_id(parent, 8) if parent else None, str(span.get("name") or ""),
                _iso_nanos(span.get("start_time")), _iso_nanos(span.get("end_time")), attributes, events, code,
                str(span.get("status_message") or ""))


def _phoenix_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadTrace(f"Phoenix returned {what} that is not an object")
    return value


def flat_attributes(nested: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Attributes nested by their dotted names (Phoenix's form) back under those names: objects and lists of objects
    are walked (a list's items by index), any other value is kept."""
    if depth > MAX_VALUE_DEPTH:
        raise BadTrace(f"Phoenix returned attributes nested deeper than {MAX_VALUE_DEPTH} levels")
    flat: dict[str, Any] = {}
    items = (nested.items() if isinstance(nested, dict)
             else enumerate(nested) if isinstance(nested, list) else ())
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, dict) or (isinstance(value, list) and value and all(isinstance(item, dict)
                                                                                  for item in value)):
            flat.update(flat_attributes(value, name + ".", depth + 1))
        elif type(value) is int and not _INT64[0] <= value <= _INT64[1]:
            raise BadTrace(f"Phoenix returned attribute {name} = {_short(value)}, not a 64-bit integer")
        else:
            flat[name] = value
    return flat


def _phoenix_id(value: Any, size: int) -> str:
    if isinstance(value, str) and len(value) == size * 2:
        try:
            bytes.fromhex(value)
            return value.lower()
        except ValueError:
            pass
    raise BadTrace(f"Phoenix returned an id {_short(value)} that is not {size} bytes of hex")


def _iso_nanos(value: Any) -> int:
    if not isinstance(value, str):
        raise BadTrace(f"Phoenix returned a time {_short(value)} that is not ISO 8601 text")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadTrace(f"Phoenix returned a time {_short(value)} that is not ISO 8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    whole = int(moment.timestamp())
    return whole * 1_000_000_000 + moment.microsecond * 1_000
