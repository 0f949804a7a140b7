"""Property: a big capture's lines read through msgspec (EventChecker.fast) give exactly the events the orjson door
gives (orjson.loads, then EventChecker.problem, which leaves out the envelope and origin fields wop does not know),
and the fast door takes every line the sink writes; numbers of 19 digits or more, on which the two parsers differ,
are found by long_number_lines and kept for orjson. And CaptureReader reads a big capture through it, event for
event as it reads a small one, without importing msgspec for a small one."""

import hashlib
import math
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from openwop_cli.format.manifest import EVENTS_NAME, MANIFEST_NAME
from openwop_cli.format.reader import FAST_BYTES, CaptureReader
from openwop_cli.format.schema import EVENT_DATA, EventChecker, long_number_lines
from tests.conftest import run_wop, write_capture

pytestmark = pytest.mark.skipif(long_number_lines(b"") is None, reason="the fast door needs Hyperscan (Linux x86_64)")
CAPTURE, RUN = "c0ffee00c0ffee00", "0123456789abcdef"
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.integers(-5, 5),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                      max_leaves=8)
DATA_FIELDS = sorted({name for fields in EVENT_DATA.values() for name, _ in fields} | {"value", "argv"})
ORIGINS = st.one_of(st.none(), VALUES, st.fixed_dictionaries(
    {}, optional={"pid": st.one_of(st.integers(0, 9), VALUES), "thread": st.one_of(st.just("MainThread"), VALUES),
                  "task": VALUES, "poolTask": VALUES, "other": VALUES,
                  "site": st.one_of(VALUES, st.fixed_dictionaries({}, optional={
                      "file": st.one_of(st.just("a.py"), VALUES), "line": st.one_of(st.integers(1, 9), VALUES),
                      "function": VALUES, "column": VALUES}))}))
ENVELOPES = st.fixed_dictionaries({
    "version": st.one_of(st.just(1), VALUES), "captureId": st.one_of(st.just(CAPTURE), st.just("other"), VALUES),
    "runId": st.one_of(st.just(RUN), VALUES), "seq": st.one_of(st.integers(0, 9), VALUES),
    "ts": st.one_of(st.just(1_763_875_573_123), VALUES), "type": st.one_of(st.sampled_from(sorted(EVENT_DATA)), VALUES),
    "data": st.one_of(st.dictionaries(st.sampled_from(DATA_FIELDS), VALUES, max_size=4), VALUES),
}, optional={"origin": ORIGINS, "sourceSeq": st.one_of(st.integers(0, 9), VALUES), "extra": VALUES})
# What a stranger may do to the bytes: nothing, spaces after punctuation, a key written twice (the last is read),
# an escaped key, bytes after the object, a cut.
EDITS = st.sampled_from(["none", "spaces", "seq_twice", "escaped_key", "trailing", "cut"])


def line_of(fields: dict, edit: str) -> bytes:
    try:
        line = orjson.dumps(fields)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: write it as a stranger would
        line = _dumps_big(fields).encode()
    if edit == "spaces":
        line = line.replace(b'":', b'": ').replace(b",", b", \t")
    elif edit == "seq_twice":
        line = line[:-1] + b',"seq":"x","seq":3}'
    elif edit == "escaped_key":
        line = line.replace(b'"data":', b'"\\u0064ata":', 1)
    elif edit == "trailing":
        line += b" x"
    elif edit == "cut":
        line = line[: len(line) // 2]
    return line


def _dumps_big(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{orjson.dumps(key).decode()}:{_dumps_big(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dumps_big(item) for item in value) + "]"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return orjson.dumps(value).decode()


def orjson_door(line: bytes) -> dict | None:
    """What a reader makes of a line through orjson and the full check (None: refused)."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return event if EventChecker(CAPTURE, RUN).problem(event, line) is None else None


def same_values(left: object, right: object) -> bool:
    """Equal, and of the same types throughout (1, 1.0 and True are three different values here)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_values(left[key], right[key]) for key in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same_values, left, right))
    return left == right or (isinstance(left, float) and math.isnan(left) and math.isnan(right))


@settings(max_examples=600, deadline=None)
@example({"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": 0, "ts": 1, "type": "tool_call",
          "data": {"n": 2**64}}, "none")
@example({"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": 0, "ts": 1, "type": "tool_call",
          "data": {"n": -(2**63) - 1}}, "spaces")
@example({"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": 0, "ts": 1, "type": "run_start",
          "data": {"argv": ["a", 1]}}, "none")
@example({"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": 0, "ts": 1, "type": "tool_call", "data": {},
          "extra": 1, "origin": {"pid": 1, "other": 2, "site": {"line": 3, "column": 4}}}, "none")
@given(ENVELOPES, EDITS)
def test_the_fast_door_reads_a_line_as_the_orjson_door_does(fields, edit):
    line = line_of(fields, edit)
    expected = orjson_door(line)
    fast = None if long_number_lines(line) else EventChecker(CAPTURE, RUN).fast()(line, False)
    if fast is not None:
        assert expected is not None and same_values(fast, expected), (line, fast, expected)
    elif (expected is not None and edit in ("none", "spaces", "escaped_key") and not long_number_lines(line)
          and expected["seq"] >= 0):  # (a seq's range is the reader's to check: it says which seq it expected)
        raise AssertionError(f"the fast door turned away a line the orjson door reads: {line!r}")


NUMBER_TEXTS = st.one_of(
    st.integers(-(2**80), 2**80).map(str),
    st.tuples(st.integers(-(2**80), 2**80), st.text("0123456789", min_size=1, max_size=25))
    .map(lambda p: f"{p[0]}.{p[1]}"),
    st.tuples(st.integers(-9, 9), st.sampled_from(["e", "E", "e-", "e+"]),
              st.text("0123456789", min_size=1, max_size=22))
    .map(lambda p: f"{p[0]}{p[1]}{p[2]}"),
    st.text("0123456789abcdef", max_size=70).map(lambda text: f'"{text}"'),
)
BLANKS = st.sampled_from(["", " ", "\t", " \r "])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.tuples(BLANKS, NUMBER_TEXTS), min_size=1, max_size=4), min_size=1, max_size=6),
       st.booleans())
def test_long_number_lines_names_every_line_the_two_parsers_read_apart(rows, in_array):
    """Whatever numbers (ints, fractions, exponents) and digit strings a line holds, a line msgspec and orjson read to
    different values is named."""
    import msgspec

    lines = []
    for row in rows:
        values = [f"{blank}{number}" for blank, number in row]
        pairs = ",".join(f'"k{index}":{value}' for index, value in enumerate(values))
        body = f"[{','.join(values)}]" if in_array else pairs
        lines.append(f'{{"a":{body}}}' if in_array else f"{{{body}}}")
    found = long_number_lines("\n".join(lines).encode())
    for index, line in enumerate(lines):
        try:
            ours, theirs = orjson.loads(line), msgspec.json.decode(line.encode())
        except (orjson.JSONDecodeError, msgspec.DecodeError):
            continue
        if not same_values(ours, theirs):
            assert index in found, line


STRANGERS_VALUES = ["-0", "-0.0", "1e-400", "1.0e+2", "01", "1.", ".5", "1e400", "2.2250738585072011e-308",
                    "0.1000000000000000055511151231257827", "4.9e-324", "17976931348623157e292", "9007199254740993",
                    "123456789012345678", "-9223372036854775808", "18446744073709551615", '"\\u00e9\\ud83d\\ude00"',
                    '"\\u0000\\n\\/"', '"\\ud800"', '"\udcff"', "NaN", "[1,]", "tru", '{"a":1,"a":[2]}']


# Where a value goes: in data, or in a field wop does not know (which msgspec skips, and orjson still parses whole).
PLACES = ['"data":{"n":%s}', '"data":{},"later":%s', '"data":{},"origin":{"why":%s}',
          '"data":{},"origin":{"site":{"col":%s}}', '"data":{},"later":{"\udcff":%s}']


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("text", STRANGERS_VALUES + ["1E+400", "-2.5e0309", '"\udcc0\udc80"', '"\udced\udca0\udc80"'])
def test_the_doors_agree_on_the_numbers_and_strings_a_stranger_writes(text, place):
    line = (b'{"version":1,"captureId":"%s","runId":"%s","seq":0,"ts":1,"type":"tool_call",%s}' % (
        CAPTURE.encode(), RUN.encode(), (place % text).encode("utf-8", "surrogateescape")))
    kept_for_orjson = long_number_lines(line)  # a reader's fast door never sees these lines
    fast = None if kept_for_orjson else EventChecker(CAPTURE, RUN).fast()(line, False)
    expected = orjson_door(line)
    assert (same_values(fast, expected) if fast is not None else expected is None or kept_for_orjson), (fast, expected)


def big_capture(path: Path) -> Path:
    """A capture past FAST_BYTES whose lines a stranger edited: a field wop does not know, a number beyond 64 bits,
    an origin with a field of its own, a line the checks refuse; its hash made to match again."""
    padding = "x" * 400
    write_capture(path, [("tool_call", {"name": "lookup", "callId": f"c{index}", "pad": padding})
                         for index in range(FAST_BYTES // 450 + 200)])
    events = path / EVENTS_NAME
    lines = events.read_bytes().split(b"\n")
    lines[10] = lines[10][:-1] + b',"later":{"a":1}}'
    lines[20] = lines[20].replace(b'"callId":', b'"n":18446744073709551616123,"m":-9223372036854775809,"callId":')
    lines[30] = lines[30][:-1] + b',"origin":{"pid":3,"thread":"T","why":1,"site":{"line":2,"col":3}}}'
    lines[9000] = lines[9000].replace(b'"name":"lookup"', b'"name":7')
    events.write_bytes(b"\n".join(lines))
    manifest = orjson.loads((path / MANIFEST_NAME).read_bytes())
    manifest["integrity"]["eventsHash"] = hashlib.sha256(events.read_bytes()).hexdigest()
    (path / MANIFEST_NAME).write_bytes(orjson.dumps(manifest))
    return path


def test_a_big_capture_reads_event_for_event_as_through_orjson(tmp_path):
    capture = big_capture(tmp_path / "big")
    assert (capture / EVENTS_NAME).stat().st_size >= FAST_BYTES
    reader = CaptureReader(capture)
    events = list(reader.scan_all())
    manifest = orjson.loads((capture / MANIFEST_NAME).read_bytes())
    checker = EventChecker(manifest["captureId"], manifest["runId"])
    expected = []
    for line in (capture / EVENTS_NAME).read_bytes().splitlines():
        event = orjson.loads(line)
        if checker.problem(event, line) is None:
            expected.append(event)
    assert len(events) == len(expected) > 9000
    assert all(same_values(got, wanted) for got, wanted in zip(events, expected))
    assert [(problem.kind, problem.line) for problem in reader.problems] == [("bad_event", 9001)]
    assert "later" not in events[10] and events[30]["origin"] == {"pid": 3, "thread": "T", "site": {"line": 2}}
    assert events[20]["data"]["n"] == float(18446744073709551616123) and type(events[20]["data"]["m"]) is float


def test_msgspec_is_imported_for_a_big_capture_only(tmp_path):
    small = write_capture(tmp_path / "small", [("tool_call", {"name": "lookup"})])
    big = big_capture(tmp_path / "big")
    script = ("import sys; from pathlib import Path; from openwop_cli.format.reader import CaptureReader; "
              "list(CaptureReader(Path(sys.argv[1])).scan_all()); print('msgspec' in sys.modules)")
    imported = [subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                               check=True).stdout.strip() for path in (small, big)]
    assert imported == ["False", "True"]


HOSTILE_TAILS = [b',"later":1e999', b',"later":"\xff"', b',"origin":{"\xc0\x80":1}',
                 b',"origin":{"site":{"col":-1E+400}}',
                 b',"later":{"a":[1,2]}']


@pytest.mark.parametrize("tail", HOSTILE_TAILS)
def test_wop_verify_says_the_same_of_a_line_in_a_big_capture_as_in_a_small_one(tmp_path, tail):
    """The same edited line (a field wop does not know, holding what orjson refuses or reads) at the same place of a
    capture under FAST_BYTES and of one over it, its hash made to match: `wop verify --json` says the same of both."""
    said = []
    for name, padding in (("small", 0), ("big", FAST_BYTES // 450 + 200)):
        capture = write_capture(tmp_path / name, [("tool_call", {"name": "lookup", "callId": "c0"})] * 10 + [
            ("tool_result", {"callId": f"c{index}", "pad": "x" * 400}) for index in range(padding)])
        events = capture / EVENTS_NAME
        lines = events.read_bytes().split(b"\n")
        lines[5] = lines[5][:-1] + tail + b"}"
        events.write_bytes(b"\n".join(lines))
        assert (events.stat().st_size >= FAST_BYTES) == (name == "big")
        manifest = orjson.loads((capture / MANIFEST_NAME).read_bytes())
        manifest["integrity"]["eventsHash"] = hashlib.sha256(events.read_bytes()).hexdigest()
        (capture / MANIFEST_NAME).write_bytes(orjson.dumps(manifest))
        done = run_wop("verify", "--json", str(capture))
        said.append((done.returncode, [(problem["kind"], problem["line"], problem["seq"], problem["message"])
                                       for problem in orjson.loads(done.stdout)["problems"]]))
    assert said[0] == said[1]
