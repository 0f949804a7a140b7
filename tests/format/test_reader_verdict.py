"""Property: the reader (and so `wop verify`) gives every line of a capture the verdict the one validator gives it.

The reader checks the usual event inline and hands anything else to the whole check (format/reader.py); a reference
here reads the same file line by line through `EventValidator.problem` alone, walking every event's nesting. For
captures a stranger edited — fields retyped, fields added to the envelope, origin or site, values nested around the
bound, seqs, ids and types changed, keys written twice, bytes flipped, the hashes forged again — both list the same
problems (kind, message, line, seq), and a read yields the same events in both cases.
"""

import os
import shutil
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_cli.format import reader as reader_module
from openwop_cli.format import shape
from openwop_cli.format.reader import CHUNK_BYTES, CaptureReader
from openwop_cli.format.schema import MAX_DEPTH, MAX_INT
from openwop_cli.format.shape import EVENT_SHAPES, EVENTS, EventValidator, Group
from openwop_cli.format.verify import verify_capture
from openwop_cli.wire.jsonable import json_form
from tests.format.test_mutated_captures import ENVELOPE, FIELDS, JSON_VALUES, build, forge, replace_at
from tests.format.test_mutated_captures import EVENTS as CAPTURE_EVENTS
from tests.format.test_shape import CAPTURE, EVENT_DATA, PROGRAM_VALUES, RUN

SETTINGS = settings(max_examples=int(os.environ.get("WOP_FUZZ_EXAMPLES", 150)), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
LINE_PROBLEMS = ("bad_json", "bad_event", "seq_gap")
ENVELOPE_KEYS = ["version", "seq", "ts", "type", "captureId", "runId", "origin", "sourceSeq", "data", "later"]
SERVED_EVENTS = [  # the values a replay hands back, which the validator checks beyond their type's shape
    ("nondeterministic", {"source": "uuid", "key": "id", "value": "0b5c1f0e-6c8e-4d8e-9b1a-3d2c1b0a9f8e"}),
    ("nondeterministic", {"source": "version", "key": "v", "value": 2, "min": 1, "max": 2}),
    ("tool_call", {"name": "http", "callId": "h1", "args": {"method": "GET", "url": "http://127.0.0.1/x"}}),
    ("tool_result", {"callId": "h1", "ok": True, "result": {"status": 200, "headers": {"a": "b"}, "body": "ok"}}),
]
# Many brackets in one line (not deep): the chunk is not known shallow, so each line's nesting is counted.
BRACKETS = [("tool_result", {"callId": "t9", "ok": True, "result": [{"i": index} for index in range(MAX_DEPTH + 10)]})]


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    return build(tmp_path_factory.mktemp("verdict") / "base", CAPTURE_EVENTS + SERVED_EVENTS + BRACKETS)


def reference(capture: Path) -> tuple[list[tuple[int, dict]], list[tuple]]:
    """The events (with their line) and the line problems of a capture, each line read and checked on its own by the
    validator, its nesting walked whole."""
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    check = EventValidator(manifest["captureId"], manifest["runId"]).problem
    events, problems, expected = [], [], 0
    lines = (capture / "events.jsonl").read_bytes().split(b"\n")[:-1]
    for lineno, line in enumerate(lines, 1):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            problems.append(("bad_json", "not a JSON object (the line was damaged or edited)", lineno, expected))
            expected += 1
            continue
        problem = check(event)
        if problem is None and not 0 <= event["seq"] <= MAX_INT:
            problem = "field seq must be a non-negative integer"
        if problem is not None:
            problems.append(("bad_event", problem, lineno, expected))
            expected += 1
            continue
        if event["seq"] != expected:
            problems.append(("seq_gap", f"seq jumps from {expected - 1} to {event['seq']} (expected {expected})",
                             lineno, event["seq"]))
            expected = event["seq"]
        expected += 1
        events.append((lineno, event))
    return events, problems


def read(capture: Path) -> tuple[list[dict], list[tuple]]:
    reader = CaptureReader(capture)
    events = list(reader.scan_all())
    return events, [(problem.kind, problem.message, problem.line, problem.seq) for problem in reader.problems
                    if problem.kind in LINE_PROBLEMS]


def edit(event, how: str, envelope_key: str, data_key: str, steps: list[int], value, depth: int):
    """event with one field retyped, added or nested deep (or any node replaced)."""
    if not isinstance(event, dict):
        return replace_at(event, steps, value)
    if how == "envelope":
        event[envelope_key] = value
    elif how == "data" and isinstance(event.get("data"), dict):
        event["data"][data_key] = value
    elif how == "deep" and isinstance(event.get("data"), dict):
        event["data"][data_key] = replace_at([0], [0] * depth, 1)  # depth + 1 levels below data
    elif how == "unknown field":
        origin = event.setdefault("origin", {"pid": 1, "site": {"line": 3}})
        site = origin.setdefault("site", {"line": 3}) if isinstance(origin, dict) else None
        target = (event, origin, site)[len(steps) % 3]
        if isinstance(target, dict):
            target[f"later{data_key}"] = value
    else:
        event = replace_at(event, steps, value)
    return event


def nested(levels: int) -> bytes:
    return b"[" * levels + b"1" + b"]" * levels


FRAGMENTS = [b'"seq":"x"', b'"seq":-1', b'"seq":9007199254740993', b'"seq":true', b'"type":"tool_call"',
             b'"captureId":"other"', b'"runId":7', b'"version":2', b'"ts":1e400', b'"ts":18446744073709551616',
             b'"ts":1.5', b'"x":"\\ud800"', b'"x":"\xff"', b'"deep":' + nested(MAX_DEPTH - 1),
             b'"deep":' + nested(MAX_DEPTH), b'"callId":"h2","result":{"status":"x"}', b'"source":"clock","value":-1',
             b'"x":1\n', b'"x":{', b'"runId":"other"', b'"seq":3', b'"later":1', b'"origin":{"pid":1,"later":2}',
             b'"data":{"source":"uuid","value":7}', b'"data":{"callId":"h1","result":{"status":7}}',
             b'"data":{"deep":' + nested(MAX_DEPTH - 1) + b"}", b'"data":{"deep":' + nested(MAX_DEPTH) + b"}"]


def splice(line: bytes, where: int, fragment: bytes) -> bytes:
    """line with a key and value put first, last (a key written twice: the last is read) or first in its data."""
    if where == 0:
        return line[:1] + fragment + b"," + line[1:]
    if where == 1:
        return line.replace(b'"data":{', b'"data":{' + fragment + b",", 1)
    return line.rstrip(b"\n")[:-1] + b"," + fragment + b"}\n"


@SETTINGS
@given(edits=st.lists(st.tuples(st.integers(0, len(CAPTURE_EVENTS + SERVED_EVENTS + BRACKETS) - 1),
                                st.sampled_from(["envelope", "data", "deep", "unknown field", "anywhere"]),
                                ENVELOPE, FIELDS, st.lists(st.integers(0, 20), max_size=5), JSON_VALUES,
                                st.sampled_from([MAX_DEPTH - 3, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH + 40])),
                      max_size=4),
       spliced=st.lists(st.tuples(st.integers(0, 100), st.integers(0, 2), st.sampled_from(FRAGMENTS)), max_size=3),
       reforge=st.booleans())
def test_the_reader_gives_each_line_the_verdict_the_validator_gives_it(original, tmp_path, edits, spliced, reforge):
    capture = fresh_copy(original, tmp_path / "capture")
    lines = (capture / "events.jsonl").read_bytes().splitlines(keepends=True)
    for line, how, envelope_key, data_key, steps, value, depth in edits:
        lines[line] = orjson.dumps(edit(orjson.loads(lines[line]), how, envelope_key, data_key, steps, value, depth),
                                   option=orjson.OPT_APPEND_NEWLINE)
    for line, where, fragment in spliced:
        lines[line % len(lines)] = splice(lines[line % len(lines)], where, fragment)
    (capture / "events.jsonl").write_bytes(b"".join(lines))
    if reforge:
        forge(capture)
    expected_events, expected_problems = reference(capture)
    events, problems = read(capture)
    assert problems == expected_problems
    assert events == [event for _, event in expected_events]
    report = verify_capture(capture)
    assert [(p.kind, p.message, p.line, p.seq) for p in report.problems if p.kind in LINE_PROBLEMS] == expected_problems
    first_bad_line = expected_problems[0][2] if expected_problems else len(lines) + 1
    assert list(CaptureReader(capture)) == [event for lineno, event in expected_events if lineno < first_bad_line]


def fresh_copy(original: Path, capture: Path) -> Path:
    """The original capture at capture, copied whole once, then only the files an example edits copied again (the
    whole copy was a fifth of an example's time)."""
    if not capture.exists():
        return shutil.copytree(original, capture)
    for name in ("events.jsonl", "manifest.json", "events.crc32"):
        shutil.copyfile(original / name, capture / name)
    return capture


def converts(value, shape) -> bool:
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError:
        return False
    return True


@SETTINGS
@given(events=st.lists(st.tuples(EVENT_DATA, st.sampled_from([None, *ENVELOPE_KEYS]), PROGRAM_VALUES.map(json_form),
                                 st.sampled_from(sorted(EVENT_SHAPES) + ["other"])), max_size=6))
def test_events_read_at_once_are_accepted_exactly_when_each_is_alone(events):
    """Group (one conversion for many events) accepts a list exactly when EVENTS accepts each of its events."""
    read = []
    for index, ((event_type, data), retyped, value, named_type) in enumerate(events):
        event = {"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": index, "ts": 1, "type": event_type,
                 "data": data}
        if retyped is not None:
            event[retyped] = value if retyped != "type" else named_type
        read.append(event)
    alone = all(type(event["type"]) is str and event["type"] in EVENTS and converts(event, EVENTS[event["type"]])
                for event in read)
    assert converts({"events": read}, Group) == alone


@pytest.mark.parametrize("fragment", FRAGMENTS)
@pytest.mark.parametrize("where", [0, 1, 2])
def test_one_thing_wrong_in_any_line_is_found_as_the_validator_finds_it(original, tmp_path, fragment, where):
    """One line edited, the others intact: what the reader checks of many lines at once must catch it alone."""
    each_line_edited_reads_as_the_validator_reads_it(original, tmp_path, fragment, where)


@pytest.mark.parametrize("fragment", [fragment for fragment in FRAGMENTS if b'"deep"' in fragment])
def test_a_large_files_nesting_scan_finds_what_counting_finds(original, tmp_path, fragment, monkeypatch):
    """The Hyperscan scan a large file's chunks get (here every file's, its bound set to nothing) lets no line nest
    too deep that counting would have caught."""
    pytest.importorskip("hyperscan")
    monkeypatch.setattr(shape, "SCAN_BYTES", 0)
    each_line_edited_reads_as_the_validator_reads_it(original, tmp_path, fragment, 1)


@pytest.mark.parametrize("chunk_bytes", [1, 7, 100, 4_096])
@pytest.mark.parametrize("fragment", [b'"x":{', b'"deep":' + nested(MAX_DEPTH), b'"callId":"h2","result":{"status":"x"}'])
def test_lines_read_in_chunks_of_any_size_read_as_the_validator_reads_them(original, tmp_path, fragment, chunk_bytes,
                                                                         monkeypatch):
    """However the file's chunks cut its lines (a byte at a time, a few lines at once), each line edited reads as the
    validator reads it alone: the reader joins a line from its pieces before checking it."""
    monkeypatch.setattr(reader_module, "CHUNK_BYTES", chunk_bytes)
    each_line_edited_reads_as_the_validator_reads_it(original, tmp_path, fragment, 1)


def each_line_edited_reads_as_the_validator_reads_it(original: Path, tmp_path: Path, fragment: bytes,
                                                      where: int) -> None:
    lines = (original / "events.jsonl").read_bytes().splitlines(keepends=True)
    for index in range(len(lines)):
        capture = shutil.copytree(original, tmp_path / str(index))
        (capture / "events.jsonl").write_bytes(b"".join([*lines[:index], splice(lines[index], where, fragment),
                                                         *lines[index + 1:]]))
        forge(capture)
        expected_events, expected_problems = reference(capture)
        assert read(capture) == ([event for _, event in expected_events], expected_problems), (index, fragment)


def test_lines_that_straddle_chunks_are_read_whole(tmp_path):
    """Events over many 1 MiB chunks of the file (lines cut by a chunk's end) read back as the sink wrote them."""
    events = [("llm_request", {"provider": "openai", "callId": f"l{index}", "request": {"text": "x" * (index % 900)}})
              for index in range(6_000)]
    capture = build(tmp_path / "big", events)
    assert (capture / "events.jsonl").stat().st_size > 3 << 20
    expected_events, expected_problems = reference(capture)
    assert expected_problems == [] and read(capture) == ([event for _, event in expected_events], [])
    assert [event["data"]["callId"] for event in CaptureReader(capture) if event["type"] == "llm_request"] == [
        f"l{index}" for index in range(6_000)]
    assert verify_capture(capture).ok


def straddling(path: Path, marker: bytes, line: bytes | None = None) -> tuple[Path, int]:
    """A capture whose line 301 holds marker (or is line, marker inside it) with the marker's first byte on the last
    byte of the file's first chunk (an earlier line padded to put it there): the capture and that line's number."""
    events = [("llm_request", {"provider": "openai", "callId": f"l{index}", "request": {"text": "x" * 900}})
              for index in range(1_200)]
    events[300] = ("tool_result", {"callId": "h1", "ok": True, "result": {"body": "y" * 4_000}})  # a blob's ref
    capture = build(path, events)
    lines = (capture / "events.jsonl").read_bytes().splitlines(keepends=True)
    if line is not None:
        event = orjson.loads(lines[300])
        lines[300] = line.replace(b"CAPTURE", event["captureId"].encode()).replace(b"RUN", event["runId"].encode())
    before = sum(map(len, lines[:300])) + lines[300].index(marker)
    lines[200] = lines[200].replace(b'"text":"', b'"text":"' + b"x" * (CHUNK_BYTES - 1 - before), 1)
    (capture / "events.jsonl").write_bytes(b"".join(lines))
    forge(capture)
    assert (capture / "events.jsonl").read_bytes()[CHUNK_BYTES - 1:].startswith(marker)
    return capture, 301


def test_a_line_cut_by_a_chunks_end_is_checked_whole(tmp_path):
    """What the reader checks of a chunk at once (nesting, blobs) it checks of the line the chunk's end cuts, joined:
    a line nesting too deep, no half deep enough alone; a blob's ref whose "$" ends the first chunk; a line spanning
    three chunks; a damaged line. Each reads as the validator reads it, line by line."""
    half = MAX_DEPTH // 2 + 2
    deep = ENVELOPE_LINE + b'{"deep":' + b"[" * half + b" " + b"[" * half + b"1" + b"]" * 2 * half + b"}}\n"
    capture, lineno = straddling(tmp_path / "deep", b" [", deep)  # half the brackets in each chunk
    assert found(capture) == [("bad_event", lineno)] and read(capture) == as_read(reference(capture))

    capture, lineno = straddling(tmp_path / "blob", b"$blob")
    served = [event for event in CaptureReader(capture, resolve_blobs=True) if event["type"] == "tool_result"]
    assert served[0]["data"]["result"]["body"] == "y" * 4_000
    for blob in (capture / "blobs").rglob("*"):
        if blob.is_file() and blob.stat().st_size > 1_000:
            blob.unlink()
    assert found(capture) == [("blob", lineno)]

    long = ENVELOPE_LINE + b'{"text":"' + b"z" * (2 * CHUNK_BYTES + 10) + b'"}}\n'
    capture, lineno = straddling(tmp_path / "long", b"z" * 10, long)
    events = list(CaptureReader(capture))
    assert found(capture) == [] and len(events) == 1_200
    assert events[lineno - 1]["data"] == {"text": "z" * (2 * CHUNK_BYTES + 10)}

    capture, lineno = straddling(tmp_path / "damaged", b'"callId"')
    data = (capture / "events.jsonl").read_bytes()
    (capture / "events.jsonl").write_bytes(data[:CHUNK_BYTES] + b"\x00" + data[CHUNK_BYTES + 1:])
    forge(capture)
    assert found(capture) == [("bad_json", lineno)] and read(capture) == as_read(reference(capture))


ENVELOPE_LINE = b'{"version":1,"captureId":"CAPTURE","runId":"RUN","seq":300,"ts":1,"type":"tool_call","data":'


def found(capture: Path) -> list[tuple[str, int | None]]:
    """What verify finds in a capture (a forged one's signature aside), by kind and line."""
    return [(problem.kind, problem.line) for problem in verify_capture(capture).problems
            if problem.kind != "bad_signature"]


def as_read(reference_read: tuple[list, list]) -> tuple[list, list]:
    events, problems = reference_read
    return [event for _, event in events], problems


LINE_BYTES = st.sampled_from([b"{", b"[", b"\n", b"x", b'"', b"]", b"}"])


@given(parts=st.lists(st.tuples(LINE_BYTES, st.integers(1, MAX_DEPTH + 2)), max_size=12))
@settings(max_examples=300, deadline=None)
def test_the_nesting_scan_finds_a_deep_line_exactly_as_counting_does(parts):
    """Hyperscan's scan for a line with more than MAX_DEPTH opening brackets says what counting them says, around
    the bound (the reader skips the walk of each event's data on its word)."""
    pytest.importorskip("hyperscan")
    chunk = b"".join(part * count for part, count in parts)
    assert shape.shallow_lines(chunk, scan=True) == shape.shallow_lines_counted(chunk), chunk
