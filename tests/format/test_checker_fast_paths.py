"""Property: the event checker's fast paths (an origin's bytes checked once, the seldom data fields tested only when
present) accept and refuse exactly what the full check does, with the same message, on sink-written lines and on
lines a stranger wrote: origins of every type, origins repeated, nested or written twice, trailing bytes, escapes."""

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from openwop_cli.format.schema import EVENT_DATA, EventChecker

CAPTURE, RUN = "c0ffee00c0ffee00", "0123456789abcdef"
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-1, 1), st.text("ab\"\\", max_size=3),
                   st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.sampled_from("xy"), st.integers(0, 3),
                                                                          max_size=2))
ORIGIN_KEYS = ["pid", "thread", "task", "poolTask", "site", "origin", "other"]
SITE = st.one_of(VALUES, st.fixed_dictionaries({}, optional={"file": VALUES, "line": VALUES, "function": VALUES,
                                                             "origin": VALUES}))
INNER = st.one_of(VALUES, st.dictionaries(st.sampled_from(ORIGIN_KEYS), VALUES, max_size=3))
ORIGINS = st.one_of(VALUES, st.dictionaries(st.sampled_from(ORIGIN_KEYS), INNER, max_size=4),
                    st.fixed_dictionaries({"pid": st.integers(0, 3), "thread": st.sampled_from(["MainThread", 1])},
                                          optional={"site": SITE, "poolTask": VALUES, "origin": INNER}))
# Origins that repeat across lines (as a real capture's do), so the remembered bytes are met again: good ones, and
# ones whose bytes end like another's (an origin nested in an origin).
REPEATED = [{"pid": 7, "thread": "MainThread"}, {"pid": 7, "thread": "MainThread", "site": {"file": "a.py", "line": 2}},
            {"pid": 7, "origin": {"pid": 2}}, {"pid": "7", "origin": {"pid": 2}}, {"pid": 7, "site": {"line": 2}},
            {"pid": 7, "site": {"line": "2"}}, {"task": [], "origin": {"pid": 7, "thread": "MainThread"}}]
ORIGINS = st.one_of(st.sampled_from(REPEATED), ORIGINS)
DATA_FIELDS = sorted({name for fields in EVENT_DATA.values() for name, _ in fields} | {"value", "origin"})
EVENTS = st.fixed_dictionaries({
    "type": st.sampled_from(sorted(EVENT_DATA)),
    "data": st.one_of(st.just({}), st.dictionaries(st.sampled_from(DATA_FIELDS), st.one_of(VALUES, ORIGINS),
                                                  max_size=4)),
    "origin": ORIGINS,
    "ts": st.one_of(st.just(1), VALUES),
})
# What a stranger may do to a line the sink wrote: leave it, drop the origin, add sourceSeq (after the origin, as the
# sink does, or a wrong one before it), write the origin twice (the last is read), close it with whitespace, escape
# the key.
EDITS = st.sampled_from(["none", "no_origin", "source_seq", "bad_source_seq_first", "origin_twice", "trailing_space",
                         "escaped_key"])


def line_of(event: dict, seq: int, edit: str, other_origin: object) -> bytes:
    fields = {"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": seq, "ts": event["ts"], "type": event["type"],
              "data": event["data"]}
    if edit == "bad_source_seq_first":
        fields["sourceSeq"] = "3"
    if edit != "no_origin":
        fields["origin"] = event["origin"]
    if edit == "source_seq":
        fields["sourceSeq"] = 3
    line = orjson.dumps(fields)
    if edit == "origin_twice":
        line = line[:-1] + b',"origin":' + orjson.dumps(other_origin) + b"}"
    elif edit == "trailing_space":
        line += b" "
    elif edit == "escaped_key":
        line = line.replace(b'"origin":', b'"\\u006frigin":')
    return line


NESTED = ({"type": "tool_call", "data": {}, "ts": 1, "origin": {"pid": 7, "origin": {"pid": 2}}}, "none", None)
WRONG_UNDER_NESTED = ({**NESTED[0], "origin": {"pid": "7", "origin": {"pid": 2}}}, "none", None)
BEFORE = ({"type": "tool_call", "data": {}, "ts": 1, "origin": {"pid": 7}}, "none", None)


@settings(max_examples=400, deadline=None)
@example([NESTED, WRONG_UNDER_NESTED])
@example([BEFORE, (BEFORE[0], "bad_source_seq_first", None)])
@given(st.lists(st.tuples(EVENTS, EDITS, ORIGINS), min_size=1, max_size=12))
def test_fast_paths_judge_every_line_as_the_full_check_does(edited_events):
    warm = EventChecker(CAPTURE, RUN)  # remembers origins across the lines, as a reader's checker does
    for seq, (event, edit, other_origin) in enumerate(edited_events):
        line = line_of(event, seq, edit, other_origin)
        for _ in range(2):  # the second time, an origin checked the first time is known
            assert warm.problem(orjson.loads(line), line) == EventChecker(CAPTURE, RUN).problem(orjson.loads(line))


def test_an_origin_checked_once_is_known_by_its_bytes_and_a_bad_one_is_never_remembered():
    checker = EventChecker(CAPTURE, RUN)
    good = {"pid": 1, "thread": "MainThread", "site": {"file": "a.py", "line": 3, "function": "f"}}
    bad = {**good, "site": {**good["site"], "line": "3"}}

    def line(origin: object, seq: int) -> bytes:
        return orjson.dumps({"version": 1, "captureId": CAPTURE, "runId": RUN, "seq": seq, "ts": 1,
                             "type": "tool_call", "data": {"name": "x"}, "origin": origin})

    assert checker.problem(orjson.loads(line(good, 0)), line(good, 0)) is None
    assert checker.problem(orjson.loads(line(good, 1)), line(good, 1)) is None
    for seq in (2, 3):
        assert checker.problem(orjson.loads(line(bad, seq)), line(bad, seq)) == \
            "field origin.site.line must be an integer or null, not a string"
    assert len(checker._origin_tails) == 1
