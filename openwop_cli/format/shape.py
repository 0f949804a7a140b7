"""The shape of a capture, defined once: msgspec Structs for the manifest, the event envelope and the data of every
event type, and the one validator every reader applies with them.

A capture is data from a stranger. Whatever reads one (the reader, the replay source, diff, run logs, the store)
parses a line with orjson (the one parser) and hands the dict to `EventValidator.problem`, which converts it to the
Struct of its type in C (`msgspec.convert`: every field wop reads has its type and range) and keeps the dict; a wrong
value is reported once, as a damaged capture naming the seq and the field, never met later as a crash. (The capture
reader checks a group of usual events at once with the same shapes (Group) and SERVED, and hands any other group to
`problem`, line by line.) Data fields wop does not read are left alone, so newer writers can add fields freely;
envelope and origin fields it does not know are left out of a capture's events.

What orjson decides stays decided: a key written twice is read as its last value, a lone surrogate or invalid UTF-8
makes the line no JSON, an integer beyond 64 bits is read as a float (wop itself writes such an integer as
{"$bigint": digits}, a plain object here), a number beyond a double's range makes the line no JSON. Nesting is
bounded by what orjson writes (schema.MAX_DEPTH levels in an event's data or a manifest).

Imported by the readers when they first read, never by the runtime inside a program (msgspec and these classes cost
milliseconds to load).
"""

import re
import threading
import types
from collections.abc import Callable
from functools import cache, reduce
from operator import or_
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin

import msgspec
from msgspec import Meta, Struct

from openwop_cli.format.events import (
    EVENT_VERSION,
    LLM_REQUEST,
    LLM_RESPONSE,
    NONDETERMINISTIC,
    REPLAY_DIVERGED,
    REPLAY_NOTE,
    RUN_END,
    RUN_START,
    STATE_MUTATION,
    TOOL_CALL,
    TOOL_RESULT,
)
from openwop_cli.format.schema import MAX_DEPTH, MAX_INT, SHALLOW_BYTES, too_deep

Count = Annotated[int, Meta(ge=0, le=MAX_INT, description="a non-negative integer")]
Key = str | int | None  # ids and names used as dictionary keys: never a list or an object
Scalar = str | int | float | bool | None
Error = dict[str, Any] | str | None
Number = int | float | None
Hex64 = Annotated[str, Meta(pattern="^[0-9a-f]{64}$", description="64 lowercase hex digits")]
NonEmpty = Annotated[str, Meta(min_length=1, description="a non-empty string")]
HttpStatus = Annotated[int, Meta(ge=100, le=999, description="an HTTP status (100 to 999)")]


class Shape(Struct, kw_only=True, forbid_unknown_fields=False, gc=False):
    """Every part of a capture: fields given as keyword, fields it does not name left alone. Untracked by the garbage
    collector (gc=False): a validator's Structs are dropped as soon as they are made, so none is ever in a cycle."""


# ---- events --------------------------------------------------------------------------------------------------------

class Site(Shape, forbid_unknown_fields=True):  # another field: left out (EventValidator)
    file: str | None = None
    line: int | None = None
    function: str | None = None
    text: str | None = None
    occurrence: int | None = None


class Origin(Shape, forbid_unknown_fields=True):
    pid: int | None = None
    thread: Key = None
    task: Key = None
    poolTask: Key = None
    site: Site | None = None


class Envelope(Shape, forbid_unknown_fields=True):
    """What every event of a capture carries; `data` is typed by each event type's subclass. A field it does not
    name is refused here, and EventValidator leaves it out of the event: the common case costs no check in Python."""

    version: Annotated[int, Meta(ge=0, le=EVENT_VERSION, description=str(EVENT_VERSION))]
    captureId: str
    runId: str
    seq: Annotated[int, Meta(description="a non-negative integer")]  # its range is the reader's: it names the seq
    ts: Annotated[int, Meta(ge=0, le=MAX_INT, description="integer epoch milliseconds")]
    type: str
    data: dict[str, Any]
    origin: Origin | None = None
    sourceSeq: Count | None = None


class Chunk(Shape):
    data: str | None = None
    event: str | None = None
    id: str | None = None
    headers: dict[str, Any] | None = None
    dataBase64: str | None = None


class Answer(Shape):
    """An HTTP answer as a replay serves it (an LLM response's data, an http tool's result)."""

    status: HttpStatus | None = None
    headers: dict[str, str] | None = None
    stream: list[Chunk] | None = None


class RunStart(Shape):
    argv: list[str] | None = None
    cwd: str | None = None
    python: str | None = None
    platform: str | None = None
    env: list[Any] | None = None
    channels: dict[str, Any] | None = None


class RunEnd(Shape):
    exitCode: int | None = None
    status: str | None = None
    durationMs: Number = None
    error: Error = None


class LlmRequest(Shape):
    provider: str | None = None
    model: str | None = None
    callId: Key = None
    cacheKey: str | None = None


class LlmResponse(Answer):
    provider: str | None = None
    model: str | None = None
    callId: Key = None
    ok: bool | None = None
    error: Error = None
    usage: dict[str, Any] | None = None
    stopReason: Scalar = None
    streamFormat: str | None = None
    streamComplete: bool | None = None
    streamError: dict[str, Any] | None = None
    responseType: str | None = None


class ToolCall(Shape):
    callId: Key = None
    name: str | None = None


class ToolResult(Shape):
    callId: Key = None
    ok: bool | None = None
    error: Error = None
    resultType: str | None = None
    streamComplete: bool | None = None
    streamError: dict[str, Any] | None = None


class HttpToolResult(ToolResult):
    """The result of an `http` tool call a transport adapter recorded (call id "h…"): an answer a replay serves."""

    result: Answer | None = None


class StateMutation(Shape):
    kind: str | None = None
    channel: Key = None
    key: Key = None
    reducer: str | None = None
    nodeId: Key = None
    typeId: Key = None
    sourceEngineId: Key = None
    schemaVersion: int | None = None
    declaration: dict[str, Any] | None = None


class Nondeterministic(Shape):
    source: str | None = None
    key: Scalar = None
    min: int | None = None
    max: int | None = None


Time = Annotated[int, Meta(ge=0)] | Annotated[float, Meta(ge=0)] | str


class ClockValue(Nondeterministic):
    value: Annotated[Time, Meta(description="a time (a non-negative number or ISO text)")] | None = None


class UuidValue(Nondeterministic):
    value: Annotated[str, Meta(description="a uuid's text")] | None = None


class VersionValue(Nondeterministic):
    value: Annotated[int, Meta(description="an integer version")] | None = None


class ReplayDiverged(Shape):
    code: str | None = None
    divergencePoint: int | None = None
    jsonPath: str | None = None
    detail: str | None = None


class ReplayNote(Shape):
    pass


class LogEnvelope(Envelope, forbid_unknown_fields=False):
    """The envelope of an OpenWOP run log's events, which keep the fields of their own (an eventId)."""


def _event(name: str, data: type[Shape], base: type[Envelope] = Envelope) -> type[Envelope]:
    """The Struct of one event type: the envelope with its data's shape."""
    return cast(type[Envelope], msgspec.defstruct(name, [("data", data)], bases=(base,), kw_only=True))


EVENT_SHAPES: dict[str, type[Shape]] = {
    RUN_START: RunStart, RUN_END: RunEnd, LLM_REQUEST: LlmRequest, LLM_RESPONSE: LlmResponse, TOOL_CALL: ToolCall,
    TOOL_RESULT: ToolResult, STATE_MUTATION: StateMutation, NONDETERMINISTIC: Nondeterministic,
    REPLAY_DIVERGED: ReplayDiverged, REPLAY_NOTE: ReplayNote,
}
RUN_LOG_SHAPES: dict[str, type[Shape]] = {"channel.written": StateMutation}  # OpenWOP hosts' run logs: their other types are taken as they are
EVENTS = {event_type: _event(f"{data.__name__}Event", data) for event_type, data in EVENT_SHAPES.items()}
RUN_LOG_EVENTS = {event_type: _event(f"{data.__name__}LogEvent", data, LogEnvelope)
                  for event_type, data in {**EVENT_SHAPES, **RUN_LOG_SHAPES}.items()}
VALUES: dict[str, type[Shape]] = {"clock": ClockValue, "uuid": UuidValue, "version": VersionValue}  # nondeterministic data by its source
HTTP_CALL_PREFIX = "h"  # the call ids of the `http` tool calls the transport adapters record (exchange.RecordedRequest)
ENVELOPE_FIELDS = frozenset(field.encode_name for field in msgspec.structs.fields(Envelope))
ORIGIN_FIELDS = frozenset(field.encode_name for field in msgspec.structs.fields(Origin))
SITE_FIELDS = frozenset(field.encode_name for field in msgspec.structs.fields(Site))


def _tagged(event_type: str, shape: type[Envelope]) -> type[Envelope]:
    """shape with its type as a msgspec tag: a union of these is converted, event by event, by the shape its type
    names (the fields and their types are the envelope's and the data's, the same Struct definitions)."""
    fields = [(field.encode_name, field.type) if field.required else (field.encode_name, field.type, field.default)
              for field in msgspec.structs.fields(shape) if field.encode_name != "type"]
    return cast(type[Envelope], msgspec.defstruct(f"{shape.__name__}Tagged", fields, kw_only=True, gc=False,
                                                  forbid_unknown_fields=True, tag_field="type", tag=event_type))


# Events read at once, converted by one msgspec call (a call per event costs more than its checks): each by the Struct
# its type names, as EVENTS converts it alone (tests/format/test_reader_verdict.py).
TAGGED_EVENTS = tuple(_tagged(event_type, shape) for event_type, shape in EVENTS.items())
Group = msgspec.defstruct("Group", [("events", list[reduce(or_, TAGGED_EVENTS)])], gc=False)  # type: ignore[misc]


# ---- manifest ------------------------------------------------------------------------------------------------------

class BlobRef(Shape):
    blob: str = msgspec.field(name="$blob")
    size: int | None = None
    encoding: str | None = None


class Pin(Shape):
    path: str
    sha256: Hex64
    blob: BlobRef
    redacted: bool | None = None


class Process(Shape):
    pid: int | None = None
    ppid: int | None = None
    python: str | None = None
    executable: str | None = None
    argv: list[str] | None = None
    mpIdentity: list[Annotated[int, Meta(ge=-MAX_INT, le=MAX_INT, description="an integer")]] | None = None
    stopped: bool | None = None  # it never said it ended (killed): the capture holds what it did until then


class Program(Shape):
    argv: list[str] | None = None
    cwd: str | None = None
    python: str | None = None
    script: list[Pin] | None = None
    modules: list[Pin] | None = None
    processes: list[Process] | None = None
    workflow: Pin | None = None
    pytest: str | None = None


class LineChecksums(Shape):
    algorithm: str | None = None
    path: Annotated[Literal["events.crc32"], Meta(  # manifest.LINE_CHECKSUMS_NAME (it imports this module)
        description="'events.crc32' (a capture's files stay in its directory)")] | None = None


class Integrity(Shape):
    algorithm: str | None = None
    eventsHash: Hex64 | None = None
    eventsBytes: int | None = None
    lineChecksums: LineChecksums | None = None


class Redaction(Shape):
    enabled: bool | None = None
    profile: str | None = None


class Tool(Shape):
    name: str | None = None
    version: str | None = None


class Lost(Shape):
    fromSeq: int | None = None
    events: int | None = None
    reason: str | None = None


class Source(Shape):
    captureId: str | None = None
    runId: str | None = None
    fromSeq: int | None = None
    mode: str | None = None
    policy: str | None = None
    path: str | None = None


class Score(Shape):
    sourceRunId: str | None = None
    replayRunId: str | None = None
    fromSeq: int | None = None
    matchedEvents: int | None = None
    comparedEvents: int | None = None
    firstDivergenceSeq: int | None = None
    score: Number = None


class Model(Shape):
    provider: str | None = None
    model: str | None = None


class Signature(Shape):
    algorithm: str | None = None
    keyId: str | None = None
    value: str | None = None


class Manifest(Shape):
    captureId: NonEmpty
    runId: NonEmpty
    status: Annotated[Literal["ok", "error", "incomplete"], Meta(description="one of ok, error, incomplete")]
    name: str | None = None
    createdAt: Count | None = None
    completedAt: Count | None = None
    mode: str | None = None
    eventCount: Count | None = None
    eventLogPath: Literal["events.jsonl"] | None = None  # manifest.EVENTS_NAME
    redaction: Redaction | None = None
    tool: Tool | None = None
    program: Program | None = None
    integrity: Integrity | None = None
    lost: Lost | None = None
    error: str | None = None
    source: Source | None = None
    score: Score | None = None
    model: Model | None = None
    originScheme: int | None = None
    output: dict[str, Any] | None = None
    compared: dict[str, Any] | None = None
    signature: Signature | None = None


def manifest_problem(manifest: Any) -> str | None:
    """What is wrong with a manifest (which field, what it must be), or None.

    The names of the capture's own files are fixed: a manifest that points its events or checksums anywhere else
    (another directory, a device) is damaged, never followed."""
    if type(manifest) is not dict:
        return "the manifest must be a JSON object"
    shapes_ready()
    try:
        msgspec.convert(manifest, Manifest)
    except msgspec.ValidationError as error:
        return explain(error, manifest, Manifest, "manifest")
    if too_deep(manifest):
        return f"the manifest nests deeper than the {MAX_DEPTH} levels wop reads"
    return None


# ---- the validator -------------------------------------------------------------------------------------------------

_readiness = threading.Lock()
_ready: list[bool] = []


def shapes_ready() -> None:
    """Have msgspec build what it knows of every shape once, on one thread, before any conversion (the validator and
    manifest_problem call this first). msgspec builds a type's information on its first conversion, and two threads
    doing that at once for the same types crash the process (SIGSEGV in msgspec 0.22: parallel batch replays, each
    reading its source capture on a thread of its own; tests/format/test_shapes_threads.py)."""
    if _ready:
        return
    with _readiness:
        if _ready:
            return
        for shape in _every_shape():
            try:
                msgspec.convert({}, shape)
            except msgspec.ValidationError:
                pass
        _ready.append(True)


def _every_shape() -> list[type[Struct]]:
    """Every Struct the validator converts to: the shapes (Shape's subclasses), and Group with the tagged events of
    its union."""
    found: list[type[Struct]] = [Group, *TAGGED_EVENTS]
    pending = [Shape]
    while pending:
        for subclass in pending.pop().__subclasses__():
            found.append(subclass)
            pending.append(subclass)
    return found


class EventValidator:
    """Checks events of one capture: envelope, data of the event's type, nesting.

    capture_id/run_id: the manifest's, which every event of a capture carries (None: only their type is checked).
    run_log: events of an OpenWOP run log, whose other event types are accepted as they are (their data an object)."""

    def __init__(self, capture_id: str | None = None, run_id: str | None = None, *, run_log: bool = False) -> None:
        shapes_ready()
        self.capture_id, self.run_id = capture_id, run_id
        self.shapes = RUN_LOG_EVENTS if run_log else EVENTS
        self.other: type[Envelope] | None = LogEnvelope if run_log else None
        self.problem = self._problem_function()

    def _problem_function(self) -> Callable[..., str | None]:
        """`problem`, with everything it reads bound in its closure: it runs once per event of every read."""
        shapes, other, capture_id, run_id = self.shapes, self.other, self.capture_id, self.run_id
        convert, invalid = msgspec.convert, msgspec.ValidationError
        explain_event, served = self._explain, SERVED

        def problem(event: Any, line: bytes | None = None) -> str | None:
            """What is wrong with one event, naming the field, or None when wop can use it (then the event keeps
            only the envelope and origin fields wop knows). line: the bytes it was parsed from, when known (the
            nesting check then runs only on a line with enough brackets to nest too deep)."""
            try:
                event_type = event["type"]
                shape = shapes.get(event_type, other)
            except (KeyError, TypeError):
                return explain_event(event, None)
            if shape is None:
                return explain_event(event, None)
            try:
                convert(event, shape)
            except invalid as error:
                if not (str(error).startswith(UNKNOWN_FIELD) and _keep_known_fields(event)):
                    return explain_event(event, error)
                try:
                    convert(event, shape)
                except invalid as again:
                    return explain_event(event, again)
            if capture_id is not None and (event["captureId"] != capture_id or event["runId"] != run_id):
                return (f"the event belongs to capture {_show(event['captureId'])}, "
                        f"not to this capture {capture_id}")
            data = event["data"]
            if event_type in served and (extra := served[event_type](data)) is not None:
                return extra
            if not nests_too_deep(data, line):
                return None
            return f"field data nests deeper than the {MAX_DEPTH} levels wop reads"

        return problem

    def _explain(self, event: Any, error: msgspec.ValidationError | None) -> str:
        if type(event) is not dict:
            return "an event must be a JSON object"
        event_type = event.get("type")
        shape = self.shapes.get(event_type, self.other) if type(event_type) is str else None
        if shape is None:
            return f"field type is not an event type: {_show(event_type)}"
        if error is None:
            error = _error_of(event, shape)
        version = event.get("version")
        if type(version) is int and version > EVENT_VERSION:
            return f"event version {version} is newer than this wop reads ({EVENT_VERSION})"
        return explain(error, event, shape, "") if error is not None else "the event does not have its shape"


def _error_of(value: Any, shape: Any) -> msgspec.ValidationError | None:
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError as error:
        return error
    return None


def _served(shape: type[Shape], where: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        error = _error_of(value, shape)
        return None if error is None else explain(error, value, shape, where)

    return check


def _value_problem(data: dict[str, Any]) -> str | None:
    """A recorded value a replay hands back has the type its source gives it."""
    source = data.get("source")
    shape = VALUES.get(source) if "value" in data and type(source) is str else None
    return None if shape is None else _served(shape, "data")(data)


def _tool_result_problem(data: dict[str, Any]) -> str | None:
    """An http tool's result is an answer a replay serves."""
    call_id = data.get("callId")
    if type(call_id) is str and call_id.startswith(HTTP_CALL_PREFIX) and type(data.get("result")) is dict:
        return _served(HttpToolResult, "data")(data)
    return None


SERVED: dict[str, Callable[[dict[str, Any]], str | None]] = {  # what a replay hands back, beyond its type's shape
    NONDETERMINISTIC: _value_problem, TOOL_RESULT: _tool_result_problem}


_NOT_BRACKETS = bytes(range(256)).translate(None, b"{[\n")
# a line with more than MAX_DEPTH opening brackets, which only such a line can nest too deep
DEEP_LINE = rf"[{{\[](?:[^\n]*[{{\[]){{{MAX_DEPTH}}}"


# From this size of events.jsonl on, its lines are scanned by Hyperscan: loading it and its database costs a process
# ~10 ms, which the scan (0.3 ns a byte less than counting) pays back past ~30 MB.
SCAN_BYTES = 32 << 20


def shallow_lines(chunk: bytes, scan: bool = False) -> bool:
    """True when no line of chunk has more than MAX_DEPTH opening brackets, so none nests too deep. scan (a large
    file's chunk): one Hyperscan scan where it is installed, a third of the cost of counting, which keeps only brackets
    and newlines in one pass, then takes the longest line of what is left."""
    finder = _deep_line_finder() if scan else None
    return shallow_lines_counted(chunk) if finder is None else not finder.search(chunk)


def shallow_lines_counted(chunk: bytes) -> bool:
    """shallow_lines without Hyperscan."""
    return max(map(len, chunk.translate(None, _NOT_BRACKETS).split(b"\n"))) <= MAX_DEPTH


@cache
def _deep_line_finder() -> Any:
    """DEEP_LINE's Hyperscan matcher (its database cached on disk), or None where Hyperscan is not installed."""
    from openwop_cli.format.scan import HyperscanMatcher

    try:
        return HyperscanMatcher([DEEP_LINE])
    except ImportError:
        return None


def nests_too_deep(data: Any, line: bytes | None = None) -> bool:
    """too_deep(data), for data read from line (when known): a line too short, or with too few brackets, to nest
    that deep is not walked."""
    if line is not None and (len(line) < SHALLOW_BYTES or line.count(b"{") + line.count(b"[") <= MAX_DEPTH):
        return False
    return too_deep(data)


UNKNOWN_FIELD = "Object contains unknown field"


def _keep_known_fields(event: dict[str, Any]) -> bool:
    """Leave out of a capture's event the envelope and origin fields wop does not know; False when there were none
    (what msgspec refused is something else)."""
    dropped = False
    origin = event.get("origin")
    site = origin.get("site") if type(origin) is dict else None
    for part, known in ((event, ENVELOPE_FIELDS), (origin, ORIGIN_FIELDS), (site, SITE_FIELDS)):
        if type(part) is dict and not part.keys() <= known:
            for key in part.keys() - known:
                del part[key]
            dropped = True
    return dropped


# ---- messages ------------------------------------------------------------------------------------------------------

_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>.*)`)?$", re.DOTALL)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_MISSING_FIELD = re.compile(r"^Object missing required field `(?P<name>[^`]*)`")
_MISSING = object()
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "an object",
               list: "an array", type(None): "null"}


def explain(error: msgspec.ValidationError, value: Any, shape: Any, where: str) -> str:
    """msgspec's complaint as wop says it: `field <where.path> must be <what its shape allows>, not <what it is>`,
    the path naming the field (and the key of an object, the index of an array) from the root of `value`."""
    found = _AT.match(str(error))
    what, path = (found["what"], found["path"] or "") if found else (str(error), "")
    missing = _MISSING_FIELD.match(what)
    if missing:
        path += "." + missing["name"]
    names, current, expected = [], value, shape
    for step in _STEP.finditer(path):
        name, index = step.group(1), step.group(2)
        if index == "...":  # a value of an object: find which key holds the wrong one
            value_type = _value_type(expected)
            key = next((key for key, item in (current.items() if type(current) is dict else ())
                        if _error_of(item, value_type) is not None), None)
            names.append(f".{key}")
            current, expected = current.get(key, _MISSING) if type(current) is dict else _MISSING, value_type
        elif index is not None:
            names.append(f"[{index}]")
            current = current[int(index)] if type(current) is list and int(index) < len(current) else _MISSING
            expected = _item_type(expected)
        else:
            names.append(f".{name}")
            current = current.get(name, _MISSING) if type(current) is dict else _MISSING
            expected = _field_type(expected, name)
    field = (where + "".join(names)).lstrip(".")
    if current is _MISSING:
        shown = "missing"
    elif what.startswith("Expected `") and ", got `" in what:
        shown = _type_name(current)
    else:
        shown = _show(current)
    return f"field {field} must be {describe(expected)}, not {shown}"


def describe(kind: Any) -> str:
    """What a type allows, in words: `a string or null`, `an integer`, `'events.crc32'`."""
    options: list[str] = []
    for member in _members(kind):
        text = _description(member)
        if text is None:
            base = _unannotated(member)
            if get_origin(base) is Literal:
                text = " or ".join(repr(item) for item in get_args(base))
            elif isinstance(base, type) and issubclass(base, Struct):
                text = "an object"
            else:
                text = _TYPE_NAMES.get(get_origin(base) or base, "a value")
        if text not in options:
            options.append(text)
    if "null" in options:  # null last, as it reads best
        options.remove("null")
        options.append("null")
    return options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]


def _members(kind: Any) -> list[Any]:
    """The alternatives of a type (a Union's members, an annotated Union's members), each with its annotations."""
    description = _description(kind)
    base = _unannotated(kind)
    if get_origin(base) in (Union, types.UnionType):
        members = [member for arg in get_args(base) for member in _members(arg)]
        return [kind] if description is not None and len(members) > 1 else members
    return [kind]


def _description(kind: Any) -> str | None:
    if get_origin(kind) is Annotated:
        return next((meta.description for meta in kind.__metadata__
                     if isinstance(meta, Meta) and meta.description), None)
    return None


def _unannotated(kind: Any) -> Any:
    return get_args(kind)[0] if get_origin(kind) is Annotated else kind


def _field_type(kind: Any, name: str) -> Any:
    """The type of field `name` in the Struct among kind's alternatives (Any when there is none)."""
    for member in _members(kind):
        base = _unannotated(member)
        if isinstance(base, type) and issubclass(base, Struct):
            return next((field.type for field in msgspec.structs.fields(base) if field.encode_name == name), Any)
    return Any


def _item_type(kind: Any) -> Any:
    for member in _members(kind):
        base = _unannotated(member)
        if get_origin(base) is list:
            return get_args(base)[0]
    return Any


def _value_type(kind: Any) -> Any:
    for member in _members(kind):
        base = _unannotated(member)
        if get_origin(base) is dict:
            return get_args(base)[1]
    return Any


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """A short, printable rendering of a bad value for a message."""
    text = repr(value) if not isinstance(value, (dict, list)) else _type_name(value)
    return text if len(text) <= 40 else text[:39] + "…"
