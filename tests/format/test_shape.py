"""The one validator (format/shape.py): it accepts every capture wop writes (CaptureSink, `wop capture` of real
programs) and refuses the ones a stranger retyped, naming the seq and the field; and the edge cases orjson decides
(integers beyond 64 bits, keys written twice, lone surrogates) and the nesting bound stay as they were."""

import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_cli.format.events import BIG_INT_TAG, revived_big_ints
from openwop_cli.format.manifest import EVENTS_NAME, LINE_CHECKSUMS_NAME
from openwop_cli.format.reader import CaptureReader
from openwop_cli.format.redact import Redactor
from openwop_cli.format.schema import MAX_DEPTH
from openwop_cli.format.shape import (
    EVENT_SHAPES,
    EventValidator,
    Shape,
    manifest_problem,
)
from openwop_cli.format.verify import verify_capture
from openwop_cli.wire.jsonable import json_form
from tests.conftest import run_wop, write_capture
from tests.format.test_hostile_captures import forge, lines_of
from tests.format.test_mutated_captures import EVENTS, build

CAPTURE, RUN = "c0ffee00c0ffee00", "0123456789abcdef"
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
PROGRAM_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**80), 2**80), st.floats(allow_nan=False),
              st.text(max_size=6), st.binary(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8)


def values_of(kind: Any) -> st.SearchStrategy:
    """Values a writer may put in a field of this type (read from the shape's annotations)."""
    if get_origin(kind) is not None and get_origin(kind).__name__ == "Annotated":
        base, *metas = get_args(kind)
        meta = next((m for m in metas if isinstance(m, msgspec.Meta)), msgspec.Meta())
        if base is int:
            return st.integers(meta.ge if meta.ge is not None else -(2**63), meta.le if meta.le is not None else 2**63)
        if base is str and meta.pattern:
            return st.from_regex(meta.pattern, fullmatch=True)
        if base is str and meta.min_length:
            return st.text(min_size=meta.min_length, max_size=8)
        return values_of(base)
    origin = get_origin(kind)
    if origin is Union or isinstance(kind, types.UnionType):
        return st.one_of([values_of(member) for member in get_args(kind)])
    if origin is Literal:
        return st.sampled_from(get_args(kind))
    if origin is list:
        return st.lists(values_of(get_args(kind)[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=4), values_of(get_args(kind)[1]), max_size=3)
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return st.fixed_dictionaries({}, optional={field.encode_name: values_of(field.type)
                                                   for field in msgspec.structs.fields(kind)})
    return {str: st.text(max_size=8), int: st.integers(-(2**63), 2**64 - 1), bool: st.booleans(),
            float: st.floats(allow_nan=False, allow_infinity=False), type(None): st.none()}.get(
        kind, PROGRAM_VALUES.map(json_form))


EVENT_DATA = st.sampled_from(sorted(EVENT_SHAPES)).flatmap(lambda event_type: st.tuples(
    st.just(event_type), st.tuples(values_of(EVENT_SHAPES[event_type]),
                                   st.dictionaries(st.sampled_from(["args", "result", "request", "value", "extra"]),
                                                   PROGRAM_VALUES.map(json_form), max_size=2))
    .map(lambda parts: {**parts[1], **parts[0]})))


@SETTINGS
@given(st.lists(EVENT_DATA, min_size=1, max_size=8))
def test_every_capture_the_sink_writes_is_accepted(tmp_path_factory, events):
    events = [(event_type, data) for event_type, data in events
              if not (event_type == "nondeterministic" and "value" in data and data.get("source") in
                      ("clock", "uuid", "version"))]  # a recorded value's type follows its source: the runtime's
    capture = write_capture(tmp_path_factory.mktemp("c") / "c", events, redactor=Redactor("none"))
    report = verify_capture(capture)
    assert report.ok, report.problems
    read = list(CaptureReader(capture, resolve_blobs=True))
    assert [(event["type"], event["data"]) for event in read] == [(event_type, orjson.loads(orjson.dumps(data)))
                                                                  for event_type, data in events]


PROGRAMS = {
    "tools and ambient values": "import openwop_cli as wop, random, time, uuid\n"
                                "@wop.tool\ndef lookup(n):\n    return {'n': n, 'big': 2**70, 'raw': b'\\x00\\xff'}\n"
                                "lookup(1); lookup(-(2**65)); time.time(); random.random(); uuid.uuid4()\n",
    "a failing tool": "import openwop_cli as wop\n@wop.tool\ndef bad():\n    raise ValueError('no')\n"
                      "try:\n    bad()\nexcept ValueError:\n    pass\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_capture_wop_capture_writes_is_accepted(tmp_path, name):
    program = tmp_path / "agent.py"
    program.write_text(PROGRAMS[name])
    out = tmp_path / "c"
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = verify_capture(out)
    assert report.ok and report.events >= 3, report.problems


def wrong_values(kind: Any) -> list[Any]:
    """Values of JSON types the annotation does not name at all (an int is a number too; true is no integer)."""
    named: set[type] = set()
    pending = [kind]
    while pending:
        current = pending.pop()
        origin = get_origin(current)
        if origin is Union or isinstance(current, types.UnionType) or (origin and origin.__name__ == "Annotated"):
            pending.extend(get_args(current) if origin is not None and origin.__name__ != "Annotated"
                           else get_args(current)[:1])
        elif origin is Literal:
            named.update(type(value) for value in get_args(current))
        elif isinstance(current, type) and issubclass(current, msgspec.Struct):
            named.add(dict)
        else:
            named.add(origin or current)
    if Any in named:
        return []
    if float in named:
        named.add(int)
    return [value for value in ("text", 7, 1.5, True, None, ["a"], {"a": 1}) if type(value) not in named]


RETYPABLE = [(index, field.encode_name, value) for index, (event_type, _) in enumerate(EVENTS)
             for field in msgspec.structs.fields(EVENT_SHAPES[event_type]) for value in wrong_values(field.type)]


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    return build(tmp_path_factory.mktemp("original") / "c", EVENTS)


@SETTINGS
@given(retyped=st.sampled_from(RETYPABLE), envelope=st.sampled_from(
    [("version", "1"), ("seq", 1.5), ("ts", -1), ("ts", "1"), ("type", "other"), ("type", ["tool_call"]),
     ("data", []), ("captureId", 7), ("origin", 3), ("sourceSeq", -2), (None, None)]), where=st.booleans())
def test_a_retyped_field_is_refused_naming_its_seq_and_field(original, tmp_path_factory, retyped, envelope, where):
    """The hardening tests' mutations (test_mutated_captures.build, the forged hash of test_hostile_captures): a data
    field of a type its shape does not allow, or an envelope field out of shape, is bad_event at its seq."""
    index, field, value = retyped
    capture = tmp_path_factory.mktemp("m") / "c"
    import shutil

    shutil.copytree(original, capture)
    lines = lines_of(capture)
    event = orjson.loads(lines[index])
    if where or envelope[0] is None:
        event["data"][field] = value
        named = f"data.{field}"
    else:
        event[envelope[0]] = envelope[1]
        named = "type" if envelope[0] == "type" else envelope[0]
    lines[index] = orjson.dumps(event) + b"\n"
    forge(capture, lines)
    problems = verify_capture(capture).problems
    assert [(problem.kind, problem.seq) for problem in problems] == [("bad_event", index)], problems
    assert f"field {named}" in problems[0].message or (named == "captureId" and "belongs to" in problems[0].message)


# ---- the edge cases orjson decides, and nesting ---------------------------------------------------------------------

def read(tmp_path: Path, data_json: bytes, event_type: bytes = b"tool_call", before: bytes = b"") -> tuple[list, list]:
    """The events and problems a reader finds in a capture whose second line is written by hand."""
    capture = write_capture(tmp_path / "c", [("tool_call", {"name": "x"})] * 2)
    lines = lines_of(capture)
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    lines[1] = (b'{"version":1,"captureId":"%s","runId":"%s",%s"seq":1,"ts":1,"type":"%s","data":%s}\n'
                % (manifest["captureId"].encode(), manifest["runId"].encode(), before, event_type, data_json))
    forge(capture, lines)
    reader = CaptureReader(capture)
    return list(reader.scan_all()), [(problem.kind, problem.message) for problem in reader.problems]


def test_an_integer_beyond_64_bits_in_a_line_is_read_as_a_number_and_refused_where_an_integer_is(tmp_path):
    events, problems = read(tmp_path, b'{"n":18446744073709551616123,"m":-9223372036854775809,"u":18446744073709551615}')
    assert problems == [] and events[1]["data"] == {"n": 1.8446744073709552e22, "m": -9.223372036854776e18,
                                                    "u": 2**64 - 1}
    _, problems = read(tmp_path / "2", b'{"exitCode":18446744073709551616123}', b"run_end")
    assert problems == [("bad_event", "field data.exitCode must be an integer or null, not a number")]


def test_a_big_integer_wop_writes_is_tagged_and_read_back(tmp_path):
    capture = write_capture(tmp_path / "c", [("tool_result", {"callId": "a", "result": json_form(-(2**70))})])
    [event] = CaptureReader(capture)
    assert event["data"]["result"] == {BIG_INT_TAG: str(-(2**70))} and revived_big_ints(event["data"]["result"]) == -(2**70)
    _, problems = read(tmp_path / "2", b'{"exitCode":{"$bigint":"1180591620717411303424"}}', b"run_end")
    assert problems == [("bad_event", "field data.exitCode must be an integer or null, not an object")]


def test_a_key_written_twice_is_read_as_its_last_value(tmp_path):
    events, problems = read(tmp_path, b'{"name":7,"name":"lookup"}', before=b'"seq":"x",')
    assert problems == [] and events[1]["data"] == {"name": "lookup"} and events[1]["seq"] == 1
    _, problems = read(tmp_path / "2", b'{"name":"lookup","name":7}')
    assert problems == [("bad_event", "field data.name must be a string or null, not an integer")]


@pytest.mark.parametrize("text", [b'"\\ud800"', b'"\\udcff x"', b'"\xed\xa0\x80"', b'"\xff"'])
def test_a_lone_surrogate_or_bytes_that_are_no_utf8_make_the_line_no_json(tmp_path, text):
    _, problems = read(tmp_path, b'{"name":"x","note":%s}' % text)
    assert [kind for kind, _ in problems] == ["bad_json"]


def test_a_surrogate_pair_is_one_character(tmp_path):
    events, problems = read(tmp_path, b'{"name":"\\ud83d\\ude00"}')
    assert problems == [] and events[1]["data"]["name"] == "\U0001F600"


@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 300])
@pytest.mark.parametrize("with_line", [True, False])
def test_data_may_nest_as_deep_as_orjson_writes_and_no_deeper(levels, with_line):
    """The data object itself is one level; MAX_DEPTH in all is what the sink writes."""
    line = (b'{"version":1,"captureId":"%s","runId":"%s","seq":0,"ts":1,"type":"tool_call","data":%s}'
            % (CAPTURE.encode(), RUN.encode(), b'{"a":' * levels + b"1" + b"}" * levels))
    problem = EventValidator(CAPTURE, RUN).problem(orjson.loads(line), line if with_line else None)
    assert (problem is None) == (levels <= MAX_DEPTH), problem
    if problem is not None:
        assert problem == f"field data nests deeper than the {MAX_DEPTH} levels wop reads"


def test_unknown_envelope_and_origin_fields_are_left_out_and_data_fields_kept():
    event = {"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": 0, "ts": 1, "type": "tool_call",
             "data": {"name": "x", "later": [1]}, "extra": 1,
             "origin": {"pid": 1, "why": 2, "site": {"line": 2, "column": 3}}}
    assert EventValidator(CAPTURE, RUN).problem(event) is None
    assert event == {"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": 0, "ts": 1, "type": "tool_call",
                     "data": {"name": "x", "later": [1]}, "origin": {"pid": 1, "site": {"line": 2}}}


def test_every_shape_is_a_struct_of_the_one_base_and_names_the_capture_files_as_the_manifest_does():
    assert all(issubclass(shape, Shape) for shape in EVENT_SHAPES.values())
    assert manifest_problem({"captureId": "a", "runId": "b", "status": "ok", "eventLogPath": EVENTS_NAME,
                             "integrity": {"lineChecksums": {"path": LINE_CHECKSUMS_NAME}}}) is None
