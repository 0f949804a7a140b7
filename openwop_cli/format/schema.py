"""The one validator every reader applies: manifest and event fields checked for type and range as they are read.

A capture is data from a stranger. Whatever reads one (the reader, the replay source, run logs)
checks here the fields wop goes on to use, so a wrong type is reported once, as a damaged capture
naming the seq and the field — never met later as a crash. Checks are plain type tests (no
jsonschema in the hot path): an event's envelope, then the data fields of its type. Data fields wop
does not read are left alone, so newer writers can add fields freely; envelope and origin fields it
does not know are left out of a capture's events.

Big event logs are read through a second, faster door (`EventChecker.fast`): msgspec decodes a line and checks its
envelope and origin in C, against types made from the same tables; whatever that door does not take whole — a
line it refuses, one that is not UTF-8, a number the two parsers read apart (long_number_lines) — goes through
orjson and the checks here, so both doors accept exactly the same lines and give the same events.

Nesting is bounded by what orjson writes (MAX_DEPTH levels in an event's data, or a manifest): what
the sink can write is exactly what a reader accepts, no recursion over it meets Python's limit, and
`dumps_wrapping` writes it inside any output (a diff, a report, a state) whatever levels that adds.
"""

import functools
import operator
import re
from collections.abc import Callable
from operator import itemgetter
from typing import Any, TypedDict

import orjson

from openwop_cli.format.events import (
    EVENT_TYPES,
    EVENT_VERSION,
    LLM_REQUEST,
    LLM_RESPONSE,
    NONDETERMINISTIC,
    REPLAY_DIVERGED,
    RUN_END,
    RUN_START,
    STATE_MUTATION,
    TOOL_CALL,
    TOOL_RESULT,
)

MAX_DEPTH = 254  # container levels orjson writes: the deepest an event's data or a manifest may nest
WRAPPING_LEVELS = 8  # the most levels a wop output puts around a recorded value
TOO_DEEP = f"(nested deeper than {MAX_DEPTH} levels: not recorded)"
MAX_INT = 2**53  # seqs, times and counts stay exact in any JSON reader and never overflow what orjson writes
SHALLOW_BYTES = 2 * (MAX_DEPTH + 1)  # a line shorter than this cannot nest deeper than MAX_DEPTH
_NONE = type(None)
STR = (str,)
OPT_STR = (str, _NONE)
OPT_INT = (int, _NONE)
OPT_NUMBER = (int, float, _NONE)
OPT_BOOL = (bool, _NONE)
OPT_DICT = (dict, _NONE)
OPT_LIST = (list, _NONE)
KEY = (str, int, _NONE)  # ids and names used as dictionary keys: never a list or an object
SCALAR = (str, int, float, bool, _NONE)
ERROR = (dict, str, _NONE)
Fields = tuple[tuple[str, tuple[type, ...]], ...]

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "an object",
               list: "an array", _NONE: "null"}
_HEX64 = re.compile(r"[0-9a-f]{64}")

EVENT_DATA: dict[str, Fields] = {
    RUN_START: (("argv", OPT_LIST), ("cwd", OPT_STR), ("python", OPT_STR), ("platform", OPT_STR),
                ("env", OPT_LIST), ("channels", OPT_DICT)),
    RUN_END: (("exitCode", OPT_INT), ("status", OPT_STR), ("durationMs", OPT_NUMBER), ("error", ERROR)),
    LLM_REQUEST: (("provider", OPT_STR), ("model", OPT_STR), ("callId", KEY), ("cacheKey", OPT_STR)),
    LLM_RESPONSE: (("provider", OPT_STR), ("model", OPT_STR), ("callId", KEY), ("ok", OPT_BOOL),
                   ("error", ERROR), ("usage", OPT_DICT), ("stopReason", SCALAR), ("status", OPT_INT),
                   ("headers", OPT_DICT), ("stream", OPT_LIST), ("streamFormat", OPT_STR),
                   ("streamComplete", OPT_BOOL), ("streamError", OPT_DICT), ("responseType", OPT_STR)),
    TOOL_CALL: (("callId", KEY), ("name", OPT_STR)),
    TOOL_RESULT: (("callId", KEY), ("ok", OPT_BOOL), ("error", ERROR), ("resultType", OPT_STR),
                  ("streamComplete", OPT_BOOL), ("streamError", OPT_DICT)),
    STATE_MUTATION: (("kind", OPT_STR), ("channel", KEY), ("key", KEY), ("reducer", OPT_STR),
                     ("nodeId", KEY), ("typeId", KEY), ("sourceEngineId", KEY), ("schemaVersion", OPT_INT),
                     ("declaration", OPT_DICT)),
    NONDETERMINISTIC: (("source", OPT_STR), ("key", SCALAR), ("min", OPT_INT), ("max", OPT_INT)),
    REPLAY_DIVERGED: (("code", OPT_STR), ("divergencePoint", OPT_INT), ("jsonPath", OPT_STR), ("detail", OPT_STR)),
}
OPENWOP_DATA: dict[str, Fields] = {"channel.written": EVENT_DATA[STATE_MUTATION]}  # run logs of OpenWOP hosts
ORIGIN_TAIL = b',"origin":{'  # how an event line the sink wrote ends: its origin, then the closing brace
MAX_ORIGIN_TAILS = 4096  # distinct origins whose bytes a checker remembers as checked
ORIGIN: Fields = (("pid", OPT_INT), ("thread", KEY), ("task", KEY), ("poolTask", KEY), ("site", OPT_DICT))
SITE: Fields = (("file", OPT_STR), ("line", OPT_INT), ("function", OPT_STR), ("text", OPT_STR), ("occurrence", OPT_INT))
ENVELOPE_FIELDS = frozenset({"version", "captureId", "runId", "seq", "ts", "type", "data", "origin", "sourceSeq"})
ORIGIN_FIELDS, SITE_FIELDS = frozenset(name for name, _ in ORIGIN), frozenset(name for name, _ in SITE)


SELDOM = frozenset({"nodeId", "typeId", "sourceEngineId", "schemaVersion", "declaration", "error", "min", "max",
                    "poolTask", "streamComplete", "streamError", "responseType", "resultType"})  # fields most events lack: tested one by one only when the data has one of them


@functools.cache
def _compiled(fields: Fields) -> Callable[[dict[str, Any]], bool]:
    """fields as one expression over a dict: the table above as straight-line code, so checking an event costs no
    loop (this is the hot path of every read). Absent fields (None, which every field allows) are tested first; the
    SELDOM ones only when one of them is there. Made when first needed, not at import."""
    def term(index: int, name: str) -> str:
        return f"type(get({name!r})) in a{index}"

    terms = [term(index, name) for index, (name, _) in enumerate(fields) if name not in SELDOM]
    seldom = [term(index, name) for index, (name, _) in enumerate(fields) if name in SELDOM]
    if seldom:
        terms.append(f"(seldom.isdisjoint(value) or {' and '.join(seldom)})")
    scope: dict[str, Any] = {f"a{index}": (_NONE, *(kind for kind in allowed if kind is not _NONE)) if _NONE in allowed
                             else allowed for index, (_, allowed) in enumerate(fields)}
    scope["seldom"] = frozenset(name for name, _ in fields if name in SELDOM)
    scope["type"] = type
    exec(f"def check(value):\n    get = value.get\n    return {' and '.join(terms) or 'True'}", scope)  # noqa: S102
    return scope["check"]


_ENVELOPE = itemgetter("version", "seq", "ts", "type", "data", "captureId", "runId")


@functools.cache
def _data_checks(run_log: bool) -> dict[str, Callable[[dict[str, Any]], bool]]:
    """The data check of every event type (and, in a run log, of OpenWOP's types)."""
    checks = {event_type: _compiled(EVENT_DATA.get(event_type, ())) for event_type in EVENT_TYPES}
    if run_log:
        checks.update({event_type: _compiled(fields) for event_type, fields in OPENWOP_DATA.items()})
    return checks


class EventChecker:
    """Checks events of one capture: envelope, data fields of the event's type, nesting.

    capture_id/run_id: the manifest's, which every event of a capture carries (None: only their type
    is checked). run_log: events of an OpenWOP run log, whose other event types are accepted as they are."""

    def __init__(self, capture_id: str | None = None, run_id: str | None = None, *, run_log: bool = False) -> None:
        self.capture_id, self.run_id = capture_id, run_id
        self._data_ok, self._other_type = _data_checks(run_log), _accept if run_log else _refuse
        self._origin_ok, self._site_ok = _compiled(ORIGIN), _compiled(SITE)
        self._origin_tails: set[bytes] = set()
        self.problem = self._fast_check()

    def fast(self) -> Callable[[bytes, bool], dict[str, Any] | None] | None:
        """A quicker way to read a line of a big capture (msgspec is imported for it): `fast(line, shallow)` is the
        event when the line is one `problem` passes (the same dict, unknown fields left out as `problem` leaves them),
        else None, and the caller reads the line with orjson and `problem`. The caller hands it only lines that
        long_number_lines does not name. Only for a checker that knows its capture's ids; None where Hyperscan, which
        long_number_lines needs, is not installed."""
        assert self.capture_id is not None and self.run_id is not None
        if _long_number_scanners() is None:
            return None
        decode, refused = _envelope_decoder(self.capture_id, self.run_id)
        data_checks, other_type = self._data_ok, self._other_type
        shallow_bytes = SHALLOW_BYTES

        def fast(line: bytes, shallow: bool = False) -> dict[str, Any] | None:
            try:
                event = decode(line)
                if not line.isascii():
                    line.decode()  # UnicodeDecodeError: msgspec does not check the bytes it skips (unknown fields)
            except refused:
                return None
            data, event_type = event["data"], event["type"]
            if (data_checks.get(event_type, other_type)(data)
                    and (event_type != RUN_START or _argv_ok(data))
                    and (event_type not in SERVED or served_problem(event_type, data) is None)
                    and (shallow or len(line) < shallow_bytes or not may_nest_too_deep(line))):
                return event
            return None

        return fast

    def _fast_check(self) -> Callable[..., str | None]:
        """`problem` with everything it reads bound in its closure: it runs once per event of every read."""
        data_checks, other_type, explain, extras_ok = self._data_ok, self._other_type, self._explain, self._extras_ok
        capture_id, run_id, tails = self.capture_id, self.run_id, self._origin_tails
        envelope, max_int, shallow_bytes = _ENVELOPE, MAX_INT, SHALLOW_BYTES

        def problem(event: Any, line: bytes | None = None, shallow: bool = False) -> str | None:
            """What is wrong with one event, naming the field, or None when wop can use it.

            line: the bytes it was parsed from, when known (the nesting check then runs only on a line with
            enough brackets to nest too deep, and an origin is checked once per distinct bytes).
            shallow: the line is known not to nest too deep (a reader cleared its whole chunk at once).
            An event of a capture that passes keeps only the envelope and origin fields wop knows (a newer writer's
            others are left out, as the fast door leaves them)."""
            try:
                version, seq, ts, event_type, data, event_capture, event_run = envelope(event)
                data_ok = data_checks.get(event_type, other_type)  # TypeError: not a string (unhashable)
            except (KeyError, TypeError):
                return explain(event)
            if (type(seq) is int and type(ts) is int and type(data) is dict and type(version) is int
                    and 0 <= ts <= max_int and 0 <= version <= EVENT_VERSION  # seq: its range is the reader's
                    and (event_capture == capture_id and event_run == run_id if capture_id is not None
                         else type(event_capture) is str and type(event_run) is str)
                    and data_ok(data)
                    and (len(event) == 7 or line is not None and len(event) == 8
                         and line[line.rfind(ORIGIN_TAIL):] in tails or extras_ok(event, line))
                    and (event_type != RUN_START or _argv_ok(data))
                    and (event_type not in SERVED or served_problem(event_type, data) is None)
                    and (shallow or line is not None and (len(line) < shallow_bytes or not may_nest_too_deep(line))
                         or not too_deep(data))):
                return None
            return explain(event)

        return problem

    def _extras_ok(self, event: dict[str, Any], line: bytes | None) -> bool:
        """The optional envelope fields (origin, sourceSeq): True when they are right; a right origin's bytes are
        remembered, and `problem` takes a line ending in them as checked.

        A line that ends in `,"origin":C}`, C bytes whose origin was checked before, has that origin: the quote
        before `origin` opens a key (a closing quote would leave `origin"` outside a string), C is one whole value
        on its own, and the `}` after it, the line's last byte, closes the event itself; a repeated key's last
        value is the one read. Events carry few distinct origins (a process, its threads, their call sites)."""
        tail = line[line.rfind(ORIGIN_TAIL):] if line is not None and len(event) == 8 else None
        get = event.get
        origin, source_seq = get("origin"), get("sourceSeq")
        if not ((origin is None or type(origin) is dict and self._origin_ok(origin)
                 and ((site := origin.get("site")) is None or type(site) is dict and self._site_ok(site)))
                and (source_seq is None or type(source_seq) is int and 0 <= source_seq <= MAX_INT)):
            return False
        if self.capture_id is not None:
            _keep_known_fields(event)
        if (tail is not None and tail.startswith(ORIGIN_TAIL) and tail.endswith(b"}") and origin is not None
                and len(self._origin_tails) < MAX_ORIGIN_TAILS and _parses_to(tail[len(ORIGIN_TAIL) - 1:-1], origin)):
            self._origin_tails.add(tail)
        return True

    def _explain(self, event: Any) -> str:
        """The message for an event the fast check refused: the first field that is wrong."""
        if type(event) is not dict:
            return "an event must be a JSON object"
        get = event.get
        version, seq, ts, event_type, data = get("version"), get("seq"), get("ts"), get("type"), get("data")
        if type(version) is not int or not 0 <= version <= EVENT_VERSION:
            return _newer(version) if type(version) is int and version > EVENT_VERSION else "field version must be 1"
        if type(seq) is not int or not 0 <= seq <= MAX_INT:
            return "field seq must be a non-negative integer"
        if type(ts) is not int or not 0 <= ts <= MAX_INT:
            return "field ts must be integer epoch milliseconds"
        if type(event_type) is not str or (event_type not in self._data_ok and self._other_type is _refuse):
            return f"field type is not an event type: {_show(event_type)}"
        if type(data) is not dict:
            return f"field data must be an object, not {_type_name(data)}"
        capture_id, run_id = get("captureId"), get("runId")
        if type(capture_id) is not str or type(run_id) is not str:
            return "fields captureId and runId must be strings"
        if self.capture_id is not None and (capture_id != self.capture_id or run_id != self.run_id):
            return f"the event belongs to capture {_show(capture_id)}, not to this capture {self.capture_id}"
        fields = EVENT_DATA.get(event_type) or OPENWOP_DATA.get(event_type, ())
        problem = _optional_envelope(get) or fields_problem(data, fields, "data")
        if problem is None and type(data.get("argv")) is list:
            problem = strings_problem(data["argv"], "data.argv")
        if problem is None and event_type in SERVED:
            problem = served_problem(event_type, data)
        return problem or f"field data nests deeper than the {MAX_DEPTH} levels wop reads"


def long_number_lines(data: bytes) -> set[int] | None:
    """Indexes (0-based) of the lines of data that may hold an integer of 19 digits or more (orjson reads one beyond
    64 bits as a float, msgspec as an int) or a number with an exponent of 100 or more (too big for a float: orjson
    refuses it, msgspec lets it by in a field it skips), so that such a line is read by orjson alone; None where
    Hyperscan is not installed. A necessary condition, cheap: one Hyperscan pass finds every run of 19 digits (a
    few per MiB, most of them in hex strings), which counts when what comes before it, past a minus sign and
    blanks, opens a value (a colon, comma or bracket: digits after a point or an exponent's e are a float's, which
    both parsers read alike); another finds the big exponents by the number's end."""
    scanners = _long_number_scanners()
    if scanners is None:
        return None
    runs, exponents = scanners
    ends = exponents.match_ends(data)
    previous = -2
    for end in runs.match_ends(data):
        if end == previous + 1:  # the same run, one digit longer (Hyperscan reports every end)
            previous = end
            continue
        previous, before = end, end - 20  # the byte before the run's first digit
        if before >= 0 and data[before] == _MINUS:
            before -= 1
        while before >= 0 and data[before] in _BLANKS:
            before -= 1
        if before >= 0 and data[before] in _OPENS_A_VALUE:
            ends.append(end)
    found: set[int] = set()
    line, counted = 0, 0
    for end in sorted(ends):
        line += data.count(b"\n", counted, end)
        counted = end
        found.add(line)
    return found


_MINUS, _BLANKS, _OPENS_A_VALUE = ord("-"), b" \t\r", b":,["


@functools.cache
def _long_number_scanners() -> tuple[Any, Any] | None:
    from openwop_cli.format.redact import HyperscanMatcher

    try:
        return (HyperscanMatcher(["[0-9]{19}"], every_match=True),
                HyperscanMatcher([r'[0-9][eE]\+?0*[1-9][0-9]{2,}[^0-9a-zA-Z"]'], every_match=True))  # not a hex string
    except ImportError:
        return None


@functools.lru_cache(maxsize=8)
def _envelope_decoder(capture_id: str, run_id: str) -> tuple[Callable[[bytes], dict[str, Any]],
                                                             tuple[type[BaseException], ...]]:
    """msgspec's door for the event lines of one capture: (decode, refused). decode reads a line into the event dict,
    its envelope (ids included) and origin checked for the types and ranges asked here (TypedDicts made from the
    same tables) and only the fields wop knows kept; refused: the errors by which it turns a line away."""
    from typing import Annotated, Literal, NotRequired

    import msgspec

    def typed(fields: Fields, nested: dict[str, Any]) -> dict[str, Any]:
        return {name: nested.get(name) or functools.reduce(operator.or_, kinds) for name, kinds in fields}

    made: Any = TypedDict  # classes made at run time from the tables, for msgspec: no static type to check
    count = Annotated[int, msgspec.Meta(ge=0, le=MAX_INT)]
    site = made("Site", typed(SITE, {}), total=False)
    origin = made("Origin", typed(ORIGIN, {"site": site | None}), total=False)
    envelope = made("Envelope", {
        "version": Annotated[int, msgspec.Meta(ge=0, le=EVENT_VERSION)],
        "captureId": Literal[capture_id], "runId": Literal[run_id],
        "seq": count, "ts": count, "type": str, "data": dict[str, Any],
        "origin": NotRequired[origin | None], "sourceSeq": NotRequired[count | None]})
    return msgspec.json.Decoder(envelope).decode, (msgspec.DecodeError, ValueError, RecursionError)


def _argv_ok(data: dict[str, Any]) -> bool:
    """A run_start's argv, when it is a list, holds strings only."""
    return type(data.get("argv")) is not list or strings_problem(data["argv"], "data.argv") is None


SERVED = frozenset({LLM_RESPONSE, TOOL_RESULT, NONDETERMINISTIC})  # the events whose data a replay hands the program
_HTTP_CALL_PREFIX = "h"  # the call ids of the `http` tool calls the transport adapters record (exchange.RecordedRequest)


def served_problem(event_type: str, data: dict[str, Any]) -> str | None:
    """What a replay would hand the program from this event's data and could not (a status that is no number, headers
    that are no object of strings, a stream chunk whose data is no text, a clock value that is no time), naming the
    field; None when it can serve all of it. So `verify` refuses what a replay cannot serve."""
    if event_type == NONDETERMINISTIC:
        return _value_problem(data)
    if event_type == LLM_RESPONSE:
        return _answer_problem(data, "data")
    result = data.get("result")
    if type(result) is dict and type(data.get("callId")) is str and data["callId"].startswith(_HTTP_CALL_PREFIX):
        return _answer_problem(result, "data.result")
    return None


def _answer_problem(answer: dict[str, Any], where: str) -> str | None:
    """An HTTP answer as recorded (an LLM response's data, an http tool's result): status, headers, stream chunks."""
    status = answer.get("status")
    if status is not None and (type(status) is not int or not 100 <= status <= 999):
        return f"field {where}.status must be an HTTP status (100 to 999), not {_show(status)}"
    headers = answer.get("headers")
    if headers is not None:
        if type(headers) is not dict:
            return f"field {where}.headers must be an object, not {_type_name(headers)}"
        for name, value in headers.items():
            if type(value) is not str:
                return f"field {where}.headers.{name} must be a string, not {_type_name(value)}"
    stream = answer.get("stream")
    if stream is not None:
        if type(stream) is not list:
            return f"field {where}.stream must be an array, not {_type_name(stream)}"
        for index, chunk in enumerate(stream):
            if type(chunk) is not dict:
                return f"field {where}.stream[{index}] must be an object, not {_type_name(chunk)}"
            problem = fields_problem(chunk, _CHUNK, f"{where}.stream[{index}]")
            if problem is not None:
                return problem
    return None


_CHUNK: Fields = (("data", OPT_STR), ("event", OPT_STR), ("id", OPT_STR), ("headers", OPT_DICT),
                  ("dataBase64", OPT_STR))


def _value_problem(data: dict[str, Any]) -> str | None:
    """A recorded value a replay hands back: a clock reading is a time (epoch seconds or nanoseconds, or ISO text),
    a uuid is text, a version is an integer."""
    value, source = data.get("value"), data.get("source")
    if value is None:
        return None
    if source == "clock" and not (type(value) is str or type(value) in (int, float) and value >= 0):
        return f"field data.value must be a time (a non-negative number or ISO text), not {_show(value)}"
    if source == "uuid" and type(value) is not str:
        return f"field data.value must be a uuid's text, not {_type_name(value)}"
    if source == "version" and type(value) is not int:
        return f"field data.value must be an integer version, not {_type_name(value)}"
    return None


def _keep_known_fields(event: dict[str, Any]) -> None:
    """Leave out of a capture's event the envelope and origin fields wop does not know."""
    for key in event.keys() - ENVELOPE_FIELDS:
        del event[key]
    origin = event.get("origin") or {}
    for part, known in ((origin, ORIGIN_FIELDS), (origin.get("site") or {}, SITE_FIELDS)):
        for key in part.keys() - known:
            del part[key]


def _parses_to(text: bytes, value: Any) -> bool:
    """True when text is one whole JSON value on its own, equal to value and of the same types throughout."""
    try:
        return orjson.dumps(orjson.loads(text)) == orjson.dumps(value)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return False


def may_nest_too_deep(line: bytes) -> bool:
    """A necessary condition, cheap to test (two counting passes, no copy), for a JSON line nesting deeper than
    MAX_DEPTH: it has more opening brackets than that."""
    return len(line) >= SHALLOW_BYTES and line.count(b"{") + line.count(b"[") > MAX_DEPTH


@functools.cache
def chunk_nesting_gate() -> Any:
    """may_nest_too_deep for every line of a chunk in one Hyperscan pass: an object whose `search(chunk)` is
    False when no line has more than MAX_DEPTH opening brackets; None where Hyperscan is not installed.
    Compiling it takes tens of milliseconds, so readers use it for big files only."""
    from openwop_cli.format.redact import HyperscanMatcher

    try:
        return HyperscanMatcher([rf"(?:[^\n{{\[]*[{{\[]){{{MAX_DEPTH + 1}}}"])
    except ImportError:
        return None


def _refuse(_data: Any) -> bool:
    return False


def _accept(_data: Any) -> bool:
    return True


def fields_problem(value: dict[str, Any], fields: Fields, where: str) -> str | None:
    """The first of fields (name, allowed types) whose value in `value` has a type not allowed, or None."""
    get = value.get
    for name, allowed in fields:
        if type(get(name)) not in allowed:
            return f"field {where}.{name} must be {_allowed(allowed)}, not {_type_name(get(name))}"
    return None


def strings_problem(values: list[Any], where: str) -> str | None:
    """None when every item of a list is a string, else which one is not."""
    for index, item in enumerate(values):
        if type(item) is not str:
            return f"field {where}[{index}] must be a string, not {_type_name(item)}"
    return None


def too_deep(value: Any) -> bool:
    """True when value nests deeper than MAX_DEPTH levels (orjson, which counts them in C, would refuse it)."""
    try:
        orjson.dumps(value, default=_as_null)
    except orjson.JSONEncodeError:
        return True
    return False


def cut_nesting(value: Any, levels: int) -> Any:
    """value with whatever nests deeper than levels replaced by a note: how a program's too-deep value is recorded."""
    if levels <= 0 and type(value) in (dict, list, tuple):
        return TOO_DEEP
    if type(value) is dict:
        return {key: cut_nesting(item, levels - 1) for key, item in value.items()}
    if type(value) in (list, tuple):
        return [cut_nesting(item, levels - 1) for item in value]
    return value


def shown_bytes(value: Any) -> Any:
    """How an output shows bytes (a resolved binary blob, a program's raw request): their size and the start of
    their sha256, so two that differ read differently, never their content."""
    if isinstance(value, (bytes, bytearray)):
        import hashlib

        return f"<{len(value)} bytes sha256:{hashlib.sha256(value).hexdigest()[:12]}>"
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps_wrapping(value: Any, option: int = 0, default: Any = shown_bytes) -> bytes:
    """orjson.dumps for an output that wraps recorded values (a diff, a report, a state): a value a reader
    accepts may already nest MAX_DEPTH levels, so the output's own levels would take it past what orjson
    writes; then the few outer levels are written here and every value below them by orjson on its own."""
    try:
        return orjson.dumps(value, option=option, default=default)
    except orjson.JSONEncodeError:
        return _spliced(value, WRAPPING_LEVELS, default) + (b"\n" if option & orjson.OPT_APPEND_NEWLINE else b"")


def _spliced(value: Any, levels: int, default: Any) -> bytes:
    if levels and type(value) is dict:
        return b"{" + b",".join(orjson.dumps(str(key)) + b":" + _spliced(item, levels - 1, default)
                                for key, item in value.items()) + b"}"
    if levels and type(value) in (list, tuple):
        return b"[" + b",".join(_spliced(item, levels - 1, default) for item in value) + b"]"
    return orjson.dumps(value, default=default)


def _as_null(_value: Any) -> None:
    """Bytes (resolved binary blobs) count as one level, like any scalar."""
    return None


def _optional_envelope(get: Any) -> str | None:
    origin = get("origin")
    if origin is not None:
        if type(origin) is not dict:
            return f"field origin must be an object, not {_type_name(origin)}"
        problem = fields_problem(origin, ORIGIN, "origin")
        if problem is None and origin.get("site") is not None:
            problem = fields_problem(origin["site"], SITE, "origin.site")
        if problem is not None:
            return problem
    source_seq = get("sourceSeq")
    if source_seq is not None and (type(source_seq) is not int or not 0 <= source_seq <= MAX_INT):
        return "field sourceSeq must be a non-negative integer"
    return None


# ---- manifest ------------------------------------------------------------------------------------

BLOB_REF: Fields = (("$blob", STR), ("size", OPT_INT), ("encoding", OPT_STR))
PIN: Fields = (("path", STR), ("sha256", STR), ("blob", (dict,)), ("redacted", OPT_BOOL))
MANIFEST = (
    ("captureId", STR), ("runId", STR), ("status", STR), ("name", OPT_STR), ("createdAt", OPT_INT),
    ("completedAt", OPT_INT), ("mode", OPT_STR), ("eventCount", OPT_INT), ("eventLogPath", OPT_STR),
    ("redaction", OPT_DICT), ("tool", OPT_DICT), ("program", OPT_DICT), ("integrity", OPT_DICT), ("lost", OPT_DICT),
    ("error", OPT_STR), ("source", OPT_DICT), ("score", OPT_DICT), ("model", OPT_DICT), ("originScheme", OPT_INT),
    ("output", OPT_DICT), ("compared", OPT_DICT), ("signature", OPT_DICT),
)
PROGRAM = (("argv", OPT_LIST), ("cwd", OPT_STR), ("python", OPT_STR), ("script", OPT_LIST), ("modules", OPT_LIST),
           ("processes", OPT_LIST), ("workflow", OPT_DICT), ("pytest", OPT_STR))
INTEGRITY = (("algorithm", OPT_STR), ("eventsHash", OPT_STR), ("eventsBytes", OPT_INT), ("lineChecksums", OPT_DICT))
SUB_FIELDS = {
    "redaction": (("enabled", OPT_BOOL), ("profile", OPT_STR)),
    "tool": (("name", OPT_STR), ("version", OPT_STR)),
    "lost": (("fromSeq", OPT_INT), ("events", OPT_INT), ("reason", OPT_STR)),
    "source": (("captureId", OPT_STR), ("runId", OPT_STR), ("fromSeq", OPT_INT), ("mode", OPT_STR),
               ("policy", OPT_STR), ("path", OPT_STR)),
    "score": (("sourceRunId", OPT_STR), ("replayRunId", OPT_STR), ("fromSeq", OPT_INT), ("matchedEvents", OPT_INT),
              ("comparedEvents", OPT_INT), ("firstDivergenceSeq", OPT_INT), ("score", OPT_NUMBER)),
    "model": (("provider", OPT_STR), ("model", OPT_STR)),
    "signature": (("algorithm", OPT_STR), ("keyId", OPT_STR), ("value", OPT_STR)),
    "program": PROGRAM,
    "integrity": INTEGRITY,
}
LINE_CHECKSUMS = (("algorithm", OPT_STR), ("path", OPT_STR))
PROCESS = (("pid", OPT_INT), ("ppid", OPT_INT), ("python", OPT_STR), ("executable", OPT_STR), ("argv", OPT_LIST),
           ("mpIdentity", OPT_LIST))


def manifest_problem(manifest: Any, statuses: tuple[str, ...], events_name: str, checksums_name: str) -> str | None:
    """What is wrong with a manifest's fields (which field, what it must be), or None.

    The names of the capture's own files are fixed: a manifest that points its events or checksums
    anywhere else (another directory, a device) is damaged, never followed."""
    if type(manifest) is not dict:
        return "the manifest must be a JSON object"
    problem = fields_problem(manifest, MANIFEST, "manifest")
    if problem is not None:
        return problem
    if manifest["status"] not in statuses:
        return f"field manifest.status must be one of {', '.join(statuses)}, not {_show(manifest['status'])}"
    for name, fields in SUB_FIELDS.items():
        if manifest.get(name) is not None:
            problem = fields_problem(manifest[name], fields, f"manifest.{name}")
            if problem is not None:
                return problem
    if not manifest["captureId"] or not manifest["runId"]:
        return "fields captureId and runId must not be empty"
    for name in ("eventCount", "createdAt", "completedAt"):
        if not 0 <= (manifest.get(name) or 0) <= MAX_INT:
            return f"field manifest.{name} must be between 0 and {MAX_INT}"
    if manifest.get("eventLogPath") not in (None, events_name):
        return f"field manifest.eventLogPath must be {events_name!r}, not {_show(manifest['eventLogPath'])}"
    return (_integrity_problem(manifest.get("integrity"), checksums_name) or _program_problem(manifest.get("program"))
            or (f"the manifest nests deeper than the {MAX_DEPTH} levels wop reads" if too_deep(manifest) else None))


def _integrity_problem(integrity: dict[str, Any] | None, checksums_name: str) -> str | None:
    if integrity is None:
        return None
    events_hash = integrity.get("eventsHash")
    if events_hash is not None and _HEX64.fullmatch(events_hash) is None:
        return "field manifest.integrity.eventsHash must be 64 lowercase hex digits"
    checksums = integrity.get("lineChecksums")
    if checksums is None:
        return None
    problem = fields_problem(checksums, LINE_CHECKSUMS, "manifest.integrity.lineChecksums")
    if problem is None and checksums.get("path") not in (None, checksums_name):
        problem = (f"field manifest.integrity.lineChecksums.path must be {checksums_name!r}, "
                   f"not {_show(checksums['path'])}: a capture's files stay in its directory")
    return problem


def _program_problem(program: dict[str, Any] | None) -> str | None:
    if program is None:
        return None
    if program.get("argv") is not None:
        problem = strings_problem(program["argv"], "manifest.program.argv")
        if problem is not None:
            return problem
    for part in ("script", "modules"):
        for index, pin in enumerate(program.get(part) or ()):
            problem = _pin_problem(pin, f"manifest.program.{part}[{index}]")
            if problem is not None:
                return problem
    for index, process in enumerate(program.get("processes") or ()):
        where = f"manifest.program.processes[{index}]"
        if type(process) is not dict:
            return f"field {where} must be an object"
        problem = fields_problem(process, PROCESS, where)
        if problem is None and process.get("argv") is not None:
            problem = strings_problem(process["argv"], f"{where}.argv")
        if problem is None and process.get("mpIdentity") is not None:
            problem = next((f"field {where}.mpIdentity[{index}] must be an integer"
                            for index, number in enumerate(process["mpIdentity"])
                            if type(number) is not int or not -MAX_INT <= number <= MAX_INT), None)
        if problem is not None:
            return problem
    workflow = program.get("workflow")
    if workflow is not None:
        return _pin_problem(workflow, "manifest.program.workflow")
    return None


def _pin_problem(pin: Any, where: str) -> str | None:
    if type(pin) is not dict:
        return f"field {where} must be an object"
    problem = fields_problem(pin, PIN, where) or fields_problem(pin["blob"], BLOB_REF, f"{where}.blob")
    if problem is None and _HEX64.fullmatch(pin["sha256"]) is None:
        problem = f"field {where}.sha256 must be 64 lowercase hex digits"
    return problem


def _newer(version: int) -> str:
    return f"event version {version} is newer than this wop reads ({EVENT_VERSION})"


def _allowed(allowed: tuple[type, ...]) -> str:
    names = [_TYPE_NAMES[kind] for kind in (str, int, float, bool, dict, list, _NONE) if kind in allowed]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """A short, printable rendering of a bad value for a message."""
    text = repr(value) if not isinstance(value, (dict, list)) else _type_name(value)
    return text if len(text) <= 40 else text[:39] + "…"
