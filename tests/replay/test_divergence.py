"""A divergence's shape (capture-replay-design.md ReplayDivergence) and the helpers that fill it, in process."""

import pytest

from openwop_cli.replay.divergence import (
    CODES,
    EVENT_MISSING,
    EVENT_PAYLOAD_MISMATCH,
    EVENT_UNEXPECTED,
    EXTRA_CODES,
    NETWORK_BLOCKED,
    Divergence,
    describe_reader,
    event_summary,
    first_difference,
    json_path,
    network_blocked,
    reader_of,
    refusal_nature,
)

RECORDED = {"seq": 3, "type": "tool_call", "data": {"name": "lookup", "args": {"id": 1}, "callId": "t1"}}
TODAY = {"type": "tool_call", "data": {"name": "lookup", "args": {"id": 2}, "callId": "t9"}}


def test_the_spec_codes_and_the_ones_that_concern_no_recorded_event():
    assert CODES[:4] == ("event_type_mismatch", "event_payload_mismatch", "event_missing", "event_unexpected")
    assert EVENT_UNEXPECTED in EXTRA_CODES and EVENT_MISSING not in EXTRA_CODES
    assert EVENT_PAYLOAD_MISMATCH not in EXTRA_CODES and set(EXTRA_CODES) <= set(CODES)


def test_a_payload_mismatch_is_at_its_event_and_shows_the_values_at_its_path():
    divergence = Divergence(EVENT_PAYLOAD_MISMATCH, 3, "$.args.id", 1, 2, "differs", "tool_call", RECORDED, TODAY,
                            point=7)
    assert divergence.divergence_point == 3 and divergence.sides() == (1, 2)
    assert divergence.to_json() == {
        "code": EVENT_PAYLOAD_MISMATCH, "eventSeq": 3, "jsonPath": "$.args.id", "expected": RECORDED,
        "observed": TODAY, "eventType": "tool_call", "expectedValue": 1, "observedValue": 2, "divergencePoint": 3,
        "detail": "differs", "site": None}


def test_an_unexpected_call_is_at_its_point_and_shows_the_call_without_bookkeeping():
    site = {"file": "agent.py", "line": 4, "function": "main"}
    divergence = Divergence(EVENT_UNEXPECTED, None, None, None, None, "no such call", "tool_call", observed=TODAY,
                            point=5, site=site)
    assert divergence.divergence_point == 5
    assert divergence.sides() == (None, {"name": "lookup", "args": {"id": 2}})
    shown = divergence.to_json()
    assert "eventSeq" not in shown and "jsonPath" not in shown and "expected" not in shown
    assert shown["observed"] == TODAY and shown["divergencePoint"] == 5 and shown["site"] == site


@pytest.mark.parametrize("divergence", [
    Divergence(EVENT_PAYLOAD_MISMATCH, 3, "$.args.id", 1, 2, "differs", "tool_call", RECORDED, TODAY),
    Divergence(EVENT_UNEXPECTED, None, None, None, None, "no such call", "tool_call", observed=TODAY, point=5,
               site={"file": "a.py", "line": 1}),
])
def test_a_divergence_read_back_from_its_json_is_the_same(divergence):
    assert Divergence.from_json(divergence.to_json()) == divergence


def test_a_divergence_read_from_sparse_or_odd_json_takes_defaults():
    read = Divergence.from_json({"eventSeq": 2, "divergencePoint": 9, "site": "agent.py:4"})
    assert (read.code, read.event_seq, read.point, read.detail, read.site) == ("", 2, None, "", None)
    assert Divergence.from_json({"divergencePoint": 9}).point == 9


def test_a_blocked_connection_with_no_recording_there():
    site = {"file": "agent.py", "line": 12}
    divergence = network_blocked("api.example.com:443", site, None)
    assert (divergence.code, divergence.event_seq, divergence.json_path, divergence.expected) == (
        NETWORK_BLOCKED, None, None, None)
    value = {"host": "api.example.com", "port": 443, "site": site}
    assert divergence.observed_value == value and divergence.site == site and divergence.event_type == "nondeterministic"
    assert divergence.observed == {"type": "nondeterministic",
                                   "data": {"source": "network", "key": "api.example.com:443", "value": value}}
    assert divergence.detail == ("the program opened a connection to api.example.com:443 (opened by agent.py:12) and "
                                 "replay blocked it: the capture has no call there to serve")
    assert network_blocked("[::1]:http", None, None).observed_value == {"host": "[::1]", "port": "http", "site": None}
    assert "(opened by" not in network_blocked("h:1", None, None).detail


def test_a_blocked_connection_the_capture_saw_unrecorded():
    data = {"source": "network", "key": "db:5432", "value": {"bytes": 10}, "unrecorded": True}
    divergence = network_blocked("db:5432", None, (4, data))
    assert (divergence.code, divergence.event_seq, divergence.expected_value) == (NETWORK_BLOCKED, 4, {"bytes": 10})
    assert divergence.expected == {"seq": 4, "type": "nondeterministic", "data": data}
    assert divergence.observed_value == {"host": "db", "port": 5432, "site": None}
    assert divergence.event_type == "nondeterministic" and divergence.site is None
    site = {"file": "db.py", "line": 3}
    assert network_blocked("db:5432", site, (4, data)).site == site
    assert divergence.observed == {"type": "nondeterministic", "data": {"source": "network", "key": "db:5432",
                                                                        "value": divergence.observed_value}}
    assert divergence.detail == ("the program opened a connection to db:5432 and replay blocked it: the capture saw "
                                 "connections there that no adapter recorded (seq 4), so nothing can serve them; "
                                 "capture it again with --proxy")


def test_json_paths_name_keys_and_indexes():
    assert json_path([]) == "$"
    assert json_path(["messages", 1, "content"]) == "$.messages[1].content"
    assert json_path(["my key", "a-b", "_ok"]) == "$['my key']['a-b']._ok"


@pytest.mark.parametrize("response, nature", [
    ({"stop_reason": "refusal"}, "refusal"),
    ({"stopReason": "refusal"}, "refusal"),
    ({"stop_reason": "end_turn", "content": [{"type": "text", "text": "refusal"}]}, "valid"),
    ({"choices": [{"message": {"refusal": "I can't"}, "finish_reason": "stop"}]}, "refusal"),
    ({"choices": [{"message": {"refusal": None, "content": "ok"}, "finish_reason": "stop"}]}, "valid"),
    ({"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]}, "refusal"),
    ({"choices": [{"finish_reason": "content_filter"}]}, "refusal"),
    ({"choices": [{"message": "text", "finish_reason": "length"}]}, "valid"),
    ({"choices": []}, "valid"),
    ({"choices": ["odd"]}, "valid"),
    ({"output": [{"content": [{"type": "output_text"}, {"type": "refusal", "refusal": "no"}]}]}, "refusal"),
    ({"output": [{"content": [{"type": "output_text"}]}, "odd", {"content": ["odd"]}]}, "valid"),
    ({"output": [{"type": "refusal"}]}, "valid"),
    ("refusal", "valid"),
    (None, "valid"),
])
def test_refusals_of_each_provider_are_told_from_answers(response, nature):
    assert refusal_nature(response) == nature


def test_a_reader_is_its_thread_task_and_pool_task_in_words():
    origin = {"pid": 7, "thread": "MainThread", "task": "main#1", "poolTask": None, "site": {"line": 1}}
    assert reader_of(origin) == {"thread": "MainThread", "task": "main#1"}
    assert describe_reader(reader_of(origin)) == "thread MainThread, asyncio task main#1"
    pooled = reader_of({"pid": 7, "thread": "worker", "poolTask": "process 2"})
    assert describe_reader(pooled) == "pool task process 2"
    assert describe_reader({}) == "thread None"


def test_an_events_summary_is_the_call_without_its_bookkeeping():
    assert event_summary("tool_call", {"name": "f", "args": {}, "callId": "t1"}) == {"name": "f", "args": {}}
    assert event_summary("llm_request", {"provider": "openai", "model": "m", "request": {}, "cacheKey": "k",
                                         "callId": "c"}) == {"provider": "openai", "model": "m", "request": {}}
    assert event_summary("nondeterministic", {"source": "rng", "key": "k", "value": 1, "site": {}}) == {
        "source": "rng", "key": "k", "value": 1}
    assert event_summary("state_mutation", {"kind": "channel", "channel": "c", "value": 1, "reducer": "append"}) == {
        "kind": "channel", "channel": "c", "value": 1}
    assert event_summary("run_end", {"exitCode": 0}) == {"exitCode": 0}


def test_values_whose_keys_are_not_all_text_are_compared_too():
    """Today's side of a comparison may hold what the program passed, before it became JSON (an int key)."""
    assert first_difference({1: "a", "b": 2}, {1: "c", "b": 2}) == ("$[1]", "a", "c")
