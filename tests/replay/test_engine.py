"""The replay engine's decisions, in process: real captures written by the real sink, today's calls handed to
ReplayEngine.match as the runtime's boundaries hand them (the `wop replay` tests reach it only in a subprocess)."""

import pytest

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from openwop_cli.replay.divergence import (
    EVENT_PAYLOAD_MISMATCH,
    EVENT_TYPE_MISMATCH,
    EVENT_UNEXPECTED,
    NONDETERMINISTIC_UNDERFLOW,
    REFUSAL_DIVERGENCE,
)
from openwop_cli.replay.engine import LENIENT, STRICT, ReplayEngine, is_checked
from openwop_cli.replay.errors import ReplayDivergenceError
from openwop_cli.replay.keys import KIND_LLM, KIND_STATE, KIND_TOOL, KIND_VALUE, KIND_VERSION
from openwop_cli.replay.source import ReplaySource

MAIN = {"pid": 1, "thread": "MainThread"}
WORKER = {"pid": 1, "thread": "MainThread/worker#1"}
OTHER = {"pid": 1, "thread": "MainThread/worker#2"}
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
REFUSED = {"choices": [{"message": {"role": "assistant", "content": None, "refusal": "no"},
                        "finish_reason": "stop"}]}
ANSWERED = {"choices": [{"message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}]}


class Recording:
    """A capture written event by event with the real sink; calls get their result at once unless held open."""

    def __init__(self, directory, manifest=None):
        self.directory = directory
        self.sink = CaptureSink(directory, redactor=Redactor("default", ()))
        self.sink.start(manifest or {})
        self.calls = 0

    def tool(self, name, args, result=None, origin=MAIN, answered=True):
        call_id = self.open_call("tool_call", {"name": name, "args": args}, origin)
        if answered:
            self.answer(call_id, result, origin)
        return call_id

    def llm(self, request, response=None, origin=MAIN):
        call_id = self.open_call("llm_request", {"provider": "openai", "model": "m", "request": request}, origin)
        self.sink.append("llm_response", {"callId": call_id, "ok": True, "response": response or ANSWERED},
                         origin=origin)

    def open_call(self, event_type, data, origin=MAIN):
        self.calls += 1
        call_id = f"c{self.calls}"
        self.sink.append(event_type, {**data, "callId": call_id}, origin=origin)
        return call_id

    def answer(self, call_id, result, origin=MAIN):
        self.sink.append("tool_result", {"callId": call_id, "ok": True, "result": result}, origin=origin)

    def value(self, key, value, source="rng", origin=MAIN):
        self.sink.append("nondeterministic", {"source": source, "key": key, "value": value}, origin=origin)

    def write(self, channel, value, reducer="append", origin=MAIN):
        self.sink.append("state_mutation", {"kind": "channel", "channel": channel, "reducer": reducer,
                                            "value": value}, origin=origin)

    def engine(self, **options):
        self.sink.finalize("ok")
        return ReplayEngine(ReplaySource(self.directory), **options)


def tool(name, args):
    return {"name": name, "args": args}


def llm(request):
    return {"provider": "openai", "model": "m", "request": request}


def state(channel, value, reducer="append"):
    return {"kind": "channel", "channel": channel, "reducer": reducer, "value": value}


def calling(engine, origin):
    engine.caller_origin = lambda: dict(origin)
    return engine


@pytest.fixture
def recording(tmp_path):
    return Recording(tmp_path / "capture")


def divergence_of(engine, kind, data):
    """The divergence a strict engine stops at for this call."""
    with pytest.raises(ReplayDivergenceError) as raised:
        engine.match(kind, data)
    assert engine.stopped is raised.value.divergence
    return raised.value.divergence


# ---- matching ---------------------------------------------------------------------------------


def test_calls_are_served_their_recorded_answers_by_content(recording):
    recording.tool("a", {"n": 1}, "A")
    recording.tool("b", {"n": 2}, "B")
    engine = recording.engine()
    first, second = engine.match(KIND_TOOL, tool("a", {"n": 1})), engine.match(KIND_TOOL, tool("b", {"n": 2}))
    assert (first.unit, first.request_seq, first.result_seq, first.divergence) == (0, 0, 1, None)
    assert (second.unit, second.request_seq, second.result_seq, second.divergence) == (1, 2, 3, None)
    assert engine.divergences == [] and engine.stopped is None and not first.live and not first.unservable
    assert engine.next_unserved_seq() == engine.next_unserved_seq() == 3  # all served: the capture's last event


def test_a_call_whose_answer_was_never_recorded_is_served_with_no_result(recording):
    recording.tool("hang", {}, answered=False)
    match = recording.engine().match(KIND_TOOL, tool("hang", {}))
    assert (match.unit, match.request_seq, match.result_seq, match.divergence) == (0, 0, None, None)


def test_equal_calls_are_served_their_answers_in_recorded_order(recording):
    recording.tool("tick", {}, 1)
    recording.tool("tick", {}, 2)
    engine = recording.engine()
    assert [engine.match(KIND_TOOL, tool("tick", {})).result_seq for _ in range(2)] == [1, 3]


def test_two_threads_calls_replay_in_whichever_order_the_threads_make_them_today(recording):
    recording.tool("a", {}, "A", origin=WORKER)
    recording.tool("b", {}, "B", origin=OTHER)
    engine = recording.engine()
    assert engine.match(KIND_TOOL, tool("b", {})).unit == 1
    assert engine.match(KIND_TOOL, tool("a", {})).unit == 0
    assert engine.divergences == []


def test_calls_one_thread_made_at_once_replay_in_either_order(recording):
    first = recording.tool("a", {}, answered=False)
    second = recording.tool("b", {}, answered=False)
    recording.answer(first, "A")
    recording.answer(second, "B")
    engine = recording.engine()
    assert engine.match(KIND_TOOL, tool("b", {})).result_seq == 3
    assert engine.match(KIND_TOOL, tool("a", {})).result_seq == 2
    assert engine.divergences == []


def test_one_threads_sequential_calls_swapped_are_a_divergence_at_the_call_not_made_yet(recording):
    recording.tool("a", {"n": 1}, "A")
    recording.tool("b", {"n": 2}, "B")
    engine = recording.engine()
    divergence = divergence_of(engine, KIND_TOOL, {**tool("b", {"n": 2}), "callId": "t9"})
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 0, "$")
    assert divergence.expected_value == {"name": "a", "args": {"n": 1}}
    assert divergence.observed_value == {"name": "b", "args": {"n": 2}}
    assert divergence.event_type == "tool_call" and divergence.expected["seq"] == 0
    assert divergence.observed == {"type": "tool_call", "data": {**tool("b", {"n": 2}), "callId": "t9"}}
    assert divergence.detail == ("calls out of order: this tool_call was recorded at seq 2, after the tool_call at "
                                 "seq 0 that has not been made yet")


def test_a_call_made_before_another_kind_of_call_recorded_first_is_a_type_mismatch(recording):
    recording.value("k", 4)
    recording.tool("b", {}, "B")
    divergence = divergence_of(recording.engine(), KIND_TOOL, tool("b", {}))
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_TYPE_MISMATCH, 0, "$")
    assert divergence.expected_value == {"source": "rng", "key": "k", "value": 4}
    assert "after the nondeterministic at seq 0" in divergence.detail


def test_lenient_serves_a_call_out_of_order_and_goes_on(recording):
    recording.tool("a", {}, "A")
    recording.tool("b", {}, "B")
    engine = recording.engine(policy=LENIENT)
    assert engine.match(KIND_TOOL, tool("b", {})).result_seq == 3
    assert engine.match(KIND_TOOL, tool("a", {})).result_seq == 1
    assert [divergence.code for divergence in engine.divergences] == [EVENT_PAYLOAD_MISMATCH]
    assert engine.stopped is None


def test_strict_stops_at_the_first_divergence_and_refuses_every_call_after_it(recording):
    recording.tool("a", {"n": 1}, "A")
    recording.tool("b", {}, "B")
    found = []
    engine = recording.engine(policy=STRICT, on_divergence=found.append)
    divergence = divergence_of(engine, KIND_TOOL, tool("a", {"n": 2}))
    with pytest.raises(ReplayDivergenceError, match="^replay already stopped: event_payload_mismatch at seq 0"):
        engine.match(KIND_TOOL, tool("b", {}))
    assert found == engine.divergences == [divergence]


def test_changed_arguments_are_a_payload_mismatch_at_their_path_and_lenient_serves_the_recorded_call(recording):
    recording.tool("a", {"n": 1, "same": True}, "A")
    engine = recording.engine(policy=LENIENT)
    match = engine.match(KIND_TOOL, tool("a", {"n": 2, "same": True}))
    assert (match.unit, match.result_seq) == (0, 1)
    divergence = match.divergence
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 0, "$.args.n")
    assert (divergence.expected_value, divergence.observed_value) == (1, 2)
    assert divergence.detail == "this tool_call differs from the one recorded at seq 0"
    assert divergence.event_type == "tool_call"
    assert divergence.expected["data"]["args"] == {"n": 1, "same": True}
    assert divergence.observed == {"type": "tool_call", "data": tool("a", {"n": 2, "same": True})}


def test_a_changed_call_is_compared_with_its_own_threads_next_call_to_that_tool(recording):
    recording.tool("fetch", {"page": 1}, "1", origin=WORKER)
    recording.tool("fetch", {"page": 2}, "2", origin=OTHER)
    engine = calling(recording.engine(policy=LENIENT), OTHER)
    match = engine.match(KIND_TOOL, tool("fetch", {"page": 3}))
    assert match.unit == 1 and match.divergence.event_seq == 2 and match.divergence.expected_value == 2


def test_a_tool_the_capture_has_no_more_calls_to_is_unexpected(recording):
    recording.tool("a", {}, "A")
    recording.tool("b", {}, "B")
    engine = recording.engine(policy=LENIENT)
    assert engine.match(KIND_TOOL, tool("a", {})).unit == 0
    match = engine.match(KIND_TOOL, tool("c", {"x": 1}))
    assert match.unit is None and not match.live
    divergence = match.divergence if match.divergence else engine.divergences[-1]
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_UNEXPECTED, None, None)
    assert divergence.divergence_point == 2  # the recorded call to b, not made yet
    assert divergence.observed == {"type": "tool_call", "data": tool("c", {"x": 1})}
    assert divergence.detail == ("the capture has no (more) calls to tool 'c'; the lenient replay ran it for real "
                                 "(outbound network stays blocked)")
    assert divergence.event_type == "tool_call"


def test_strict_says_how_to_run_an_unrecorded_tool_for_real(recording):
    recording.tool("a", {}, "A")
    divergence = divergence_of(recording.engine(), KIND_TOOL, tool("c", {}))
    assert divergence.code == EVENT_UNEXPECTED and divergence.divergence_point == 0
    assert divergence.detail == ("the capture has no (more) calls to tool 'c'; it is not run during a replay "
                                 "(--allow-tool c runs it for real)")


def test_an_unrecorded_http_call_is_never_said_to_run_for_real(recording):
    recording.tool("a", {}, "A")
    engine = recording.engine(policy=LENIENT)
    engine.match(KIND_TOOL, tool("http", {"method": "GET", "url": "http://example.test/"}))
    assert "--allow-tool http" in engine.divergences[0].detail


def test_an_allowed_tool_the_capture_has_no_call_to_runs_live_without_a_divergence(recording):
    recording.tool("a", {}, "A")
    engine = recording.engine()
    match = engine.match(KIND_TOOL, tool("c", {}), live_if_unrecorded=True)
    assert match.live and match.unit is None and engine.divergences == []


def test_an_llm_call_where_the_capture_has_another_kind_of_call_is_a_type_mismatch(recording):
    recording.value("k", 4)
    recording.tool("a", {}, "A")
    divergence = divergence_of(recording.engine(), KIND_LLM, llm(REQUEST))
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_TYPE_MISMATCH, 0, "$.type")
    assert (divergence.expected_value, divergence.observed_value) == ("nondeterministic", "llm_request")
    assert divergence.expected["seq"] == 0
    assert divergence.detail == "the program made a llm_request where the capture has a nondeterministic (seq 0)"
    assert divergence.event_type == "llm_request"
    assert divergence.observed == {"type": "llm_request", "data": llm(REQUEST)}


def test_an_llm_call_when_the_capture_has_nothing_left_is_unexpected(recording):
    recording.tool("a", {}, "A")
    engine = recording.engine(policy=LENIENT)
    engine.match(KIND_TOOL, tool("a", {}))
    match = engine.match(KIND_LLM, llm(REQUEST))
    assert match.unit is None and engine.divergences[0].code == EVENT_UNEXPECTED
    assert engine.divergences[0].detail == "the program made a llm_request the capture does not have"


def test_a_changed_llm_request_is_compared_with_the_next_recorded_llm_call(recording):
    recording.llm(REQUEST)
    changed = {"model": "m", "messages": [{"role": "user", "content": "bye"}]}
    divergence = divergence_of(recording.engine(), KIND_LLM, llm(changed))
    assert (divergence.code, divergence.event_seq) == (EVENT_PAYLOAD_MISMATCH, 0)
    assert divergence.json_path == "$.messages[0].content"
    assert (divergence.expected_value, divergence.observed_value) == ("hi", "bye")


def test_a_flipped_stream_flag_is_found_before_any_other_difference(recording):
    recording.llm(REQUEST)
    divergence = divergence_of(recording.engine(), KIND_LLM, llm({**REQUEST, "stream": True, "n": 2}))
    assert (divergence.json_path, divergence.expected_value, divergence.observed_value) == ("$.stream", None, True)


def test_a_request_with_the_same_cache_key_that_differs_elsewhere_is_not_served_when_its_answer_changes_shape(
        recording):
    recording.sink.append("llm_request", {"provider": "openai", "model": "m", "request": REQUEST, "callId": "x",
                                          "cacheKey": "k1"}, origin=MAIN)
    recording.sink.append("llm_response", {"callId": "x", "ok": True, "response": ANSWERED}, origin=MAIN)
    engine = recording.engine(policy=LENIENT)
    match = engine.match(KIND_LLM, {**llm({**REQUEST, "stream": True}), "cacheKey": "k1"})
    assert match.unit == 0 and match.result_seq == 1 and match.unservable
    assert (match.divergence.code, match.divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, "$.stream")
    assert match.divergence.detail == ("the llm_request recorded at seq 0 has the same cache key, but today's request "
                                       "differs at $.stream (the recorded answer has another shape: it is not served)")
    assert match.divergence.event_type == "llm_request" and match.divergence.expected["seq"] == 0
    assert match.divergence.observed == {"type": "llm_request",
                                         "data": {**llm({**REQUEST, "stream": True}), "cacheKey": "k1"}}
    same = engine.match(KIND_LLM, {**llm(REQUEST), "cacheKey": "k1"})
    assert same.unit is None  # the one recorded call was served already


def test_a_request_with_the_same_cache_key_and_another_max_tokens_is_served_with_a_divergence(recording):
    recording.sink.append("llm_request", {"provider": "openai", "model": "m", "request": {**REQUEST, "max_tokens": 5},
                                          "callId": "x", "cacheKey": "k1"}, origin=MAIN)
    recording.sink.append("llm_response", {"callId": "x", "ok": True, "response": ANSWERED}, origin=MAIN)
    match = recording.engine(policy=LENIENT).match(KIND_LLM, {**llm({**REQUEST, "max_tokens": 9}), "cacheKey": "k1"})
    assert match.unit == 0 and not match.unservable
    assert (match.divergence.event_seq, match.divergence.json_path) == (0, "$.max_tokens")
    assert (match.divergence.expected_value, match.divergence.observed_value) == (5, 9)
    assert match.divergence.detail == ("the llm_request recorded at seq 0 has the same cache key, but today's request "
                                       "differs at $.max_tokens")


# ---- values -----------------------------------------------------------------------------------


def test_more_values_than_the_capture_holds_is_an_underflow_and_runs_live(recording):
    recording.value("k", 4)
    engine = calling(recording.engine(policy=LENIENT), MAIN)
    assert engine.match(KIND_VALUE, {"source": "rng", "key": "k"}).request_seq == 0
    match = engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    assert match.live and match.unit is None
    divergence = engine.divergences[0]
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (NONDETERMINISTIC_UNDERFLOW, None, "$.key")
    assert (divergence.expected_value, divergence.observed_value) == (None, "k")
    assert divergence.detail == "the program asked for more rng values with key 'k' than the capture holds"
    assert divergence.event_type == "nondeterministic"
    assert divergence.observed == {"type": "nondeterministic", "data": {"source": "rng", "key": "k"}}
    assert divergence.divergence_point == 0  # everything served: the capture's last event


def test_an_override_holds_for_a_value_the_capture_has_no_more_of(recording):
    recording.value("k", 4)
    engine = calling(recording.engine(policy=LENIENT, overrides={"k": 40}), MAIN)
    engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    match = engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    assert match.live and (match.override, match.has_override) == (40, True)


def test_each_thread_is_served_the_keyed_values_it_read(recording):
    recording.value("k", "worker's", origin=WORKER)
    recording.value("k", "other's", origin=OTHER)
    engine = recording.engine()
    assert calling(engine, OTHER).match(KIND_VALUE, {"source": "rng", "key": "k"}).request_seq == 1
    assert calling(engine, WORKER).match(KIND_VALUE, {"source": "rng", "key": "k"}).request_seq == 0
    assert engine.divergences == []


def test_a_keyed_value_another_thread_read_is_served_with_a_divergence_naming_both_readers(recording):
    recording.value("k", 4, origin=WORKER)
    engine = calling(recording.engine(policy=LENIENT), OTHER)
    match = engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    assert match.request_seq == 0
    divergence = match.divergence
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 0, "$.origin")
    assert divergence.expected_value == {"thread": "MainThread/worker#1"}
    assert divergence.observed_value == {"thread": "MainThread/worker#2"}
    assert divergence.detail == ("the rng value 'k' recorded at seq 0 was read by thread MainThread/worker#1; today "
                                 "thread MainThread/worker#2 asks for it (it has none of its own left)")
    assert divergence.event_type == "nondeterministic" and divergence.expected["seq"] == 0
    assert divergence.observed == {"type": "nondeterministic", "data": {"source": "rng", "key": "k"}}


def test_a_capture_whose_origins_are_not_stable_never_serves_a_value_by_its_reader(tmp_path):
    recording = Recording(tmp_path / "old", manifest={"originScheme": 1})
    recording.value("k", 4, origin=WORKER)
    engine = calling(recording.engine(), OTHER)
    match = engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    assert match.request_seq == 0 and match.divergence is None and engine.divergences == []


def test_a_value_of_another_source_with_the_same_key_is_not_served_to_another_thread(recording):
    recording.value("k", "0b7e2a4c-9d1f-4e8a-b6c3-5f2d1e0a9b8c", source="uuid", origin=WORKER)
    engine = calling(recording.engine(policy=LENIENT), OTHER)
    assert engine.match(KIND_VALUE, {"source": "rng", "key": "k"}).live
    assert engine.divergences[0].code == NONDETERMINISTIC_UNDERFLOW


def test_overrides_replace_the_value_of_their_key_only(recording):
    recording.value("k", 4)
    recording.value("other", 5)
    engine = calling(recording.engine(overrides={"k": 40}), MAIN)
    match = engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    assert (match.override, match.has_override, match.request_seq) == (40, True, 0)
    other = engine.match(KIND_VALUE, {"source": "rng", "key": "other"})
    assert (other.override, other.has_override) == (None, False)
    assert engine.match(KIND_TOOL, tool("k", {}), live_if_unrecorded=True).has_override is False


def test_a_version_the_capture_never_chose_is_no_divergence(recording):
    recording.tool("a", {}, "A")
    engine = recording.engine()
    match = engine.match(KIND_VERSION, {"source": "version", "key": "change-1", "min": 1, "max": 2})
    assert match.unit is None and engine.divergences == []


def test_a_recorded_version_outside_todays_range_is_a_payload_mismatch(recording):
    recording.sink.append("nondeterministic", {"source": "version", "key": "change-1", "value": 3, "min": 1,
                                               "max": 3}, origin=MAIN)
    engine = recording.engine(policy=LENIENT)
    data = {"source": "version", "key": "change-1", "min": 1, "max": 2}
    assert engine.match(KIND_VERSION, data).request_seq == 0
    engine.version_out_of_range(0, data, 3)
    divergence = engine.divergences[0]
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 0, "$.value")
    assert (divergence.expected_value, divergence.observed_value) == (3, {"min": 1, "max": 2})
    assert divergence.detail == ("the recorded run took version 3 of 'change-1'; today's code supports only 1..2")
    assert divergence.expected["seq"] == 0 and divergence.event_type == "nondeterministic"
    assert divergence.observed == {"type": "nondeterministic", "data": data}


def test_a_version_out_of_range_before_from_seq_is_not_checked(recording):
    recording.sink.append("nondeterministic", {"source": "version", "key": "c", "value": 3}, origin=MAIN)
    recording.tool("a", {}, "A")
    engine = recording.engine(from_seq=1)
    engine.version_out_of_range(0, {"key": "c", "min": 1, "max": 2}, 3)
    assert engine.divergences == []
    fork = ReplayEngine(ReplaySource(recording.directory), from_seq=1, branch=True)
    fork.version_out_of_range(0, {"key": "c", "min": 1, "max": 2}, 3)
    assert [divergence.event_seq for divergence in fork.divergences] == [0], "a fork checks its history"


# ---- state writes -----------------------------------------------------------------------------


def test_a_write_with_another_reducer_is_a_payload_mismatch_at_reducer(recording):
    recording.write("log", "x", reducer="append")
    engine = recording.engine(policy=LENIENT)
    match = engine.match(KIND_STATE, state("log", "x", reducer="replace"))
    assert match.request_seq == 0
    divergence = match.divergence
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 0, "$.reducer")
    assert (divergence.expected_value, divergence.observed_value) == ("append", "replace")
    assert divergence.detail == "the write to 'log' differs from the one recorded at seq 0"
    assert divergence.event_type == "state_mutation" and divergence.expected["seq"] == 0
    assert divergence.observed == {"type": "state_mutation", "data": state("log", "x", reducer="replace")}


def test_a_write_of_another_value_is_compared_with_the_channels_next_write(recording):
    recording.write("log", "x")
    recording.write("other", "y")
    divergence = divergence_of(recording.engine(), KIND_STATE, state("log", "z"))
    assert (divergence.event_seq, divergence.json_path, divergence.expected_value) == (0, "$.value", "x")


def test_a_write_the_capture_has_no_more_of_is_unexpected(recording):
    recording.write("log", "x")
    engine = recording.engine(policy=LENIENT)
    engine.match(KIND_STATE, state("log", "x"))
    engine.match(KIND_STATE, state("log", "x"))
    assert engine.divergences[0].code == EVENT_UNEXPECTED
    assert engine.divergences[0].detail == "the capture has no (more) writes to 'log'"


def test_a_legacy_variable_write_compares_with_its_prefixs_reducer(recording):
    recording.sink.append("state_mutation", {"kind": "variable", "key": "_loopbackCount:gate", "value": 1},
                          origin=MAIN)
    engine = recording.engine()
    data = {"kind": "variable", "key": "_loopbackCount:gate", "reducer": "counter", "value": 1}
    assert engine.match(KIND_STATE, data).divergence is None


def test_a_variable_written_with_another_reducer_names_the_variable(recording):
    recording.sink.append("state_mutation", {"kind": "variable", "key": "plan", "value": 1}, origin=MAIN)
    divergence = divergence_of(recording.engine(), KIND_STATE, {"kind": "variable", "key": "plan", "reducer": "counter",
                                                                "value": 1})
    assert (divergence.json_path, divergence.expected_value, divergence.observed_value) == ("$.reducer", "replace",
                                                                                            "counter")
    assert divergence.detail == "the write to 'plan' differs from the one recorded at seq 0"


def test_equal_writes_of_several_threads_are_each_served_the_callers_own(recording):
    recording.write("log", "tick", origin=WORKER)
    recording.write("log", "tick", origin=OTHER)
    recording.write("log", "tock", origin=OTHER)
    engine = recording.engine()
    calling(engine, OTHER)
    assert engine.match(KIND_STATE, state("log", "tick")).request_seq == 1
    assert engine.match(KIND_STATE, state("log", "tock")).request_seq == 2
    calling(engine, WORKER)
    assert engine.match(KIND_STATE, state("log", "tick")).request_seq == 0
    assert engine.divergences == []


def test_equal_tool_calls_of_several_threads_are_each_served_the_callers_own_answer(recording):
    recording.tool("tick", {}, "worker's", origin=WORKER)
    recording.tool("tick", {}, "other's", origin=OTHER)
    engine = calling(recording.engine(), OTHER)
    assert engine.match(KIND_TOOL, tool("tick", {})).result_seq == 3
    calling(engine, WORKER)
    assert engine.match(KIND_TOOL, tool("tick", {})).result_seq == 1


def test_the_state_after_a_write_must_be_the_recorded_one(recording):
    recording.write("log", "x")
    engine = recording.engine(policy=LENIENT)
    engine.state_difference(0, state("log", "x"), ["x"], ["x"])
    assert engine.divergences == []
    engine.state_difference(0, state("log", "x"), ["x"], ["y", "x"])
    divergence = engine.divergences[0]
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 0,
                                                                            "$.channels.log[0]")
    assert (divergence.expected_value, divergence.observed_value) == ("x", "y")
    assert divergence.detail == ("after this write 'log' holds a different value than in the recorded run (same "
                                 "input, different reducer or declaration)")
    assert divergence.event_type == "state_mutation" and divergence.expected["seq"] == 0
    assert divergence.observed == {"type": "state_mutation", "data": state("log", "x")}
    engine.state_difference(0, {"kind": "variable", "key": "my var", "value": 1}, 1, 2)
    assert engine.divergences[1].json_path == "$.variables['my var']"


def test_the_state_after_a_write_is_not_checked_before_from_seq_nor_in_a_fork(recording):
    recording.write("log", "x")
    recording.write("log", "y")
    replay = recording.engine(policy=LENIENT, from_seq=1)
    replay.state_difference(0, state("log", "x"), ["x"], ["z"])
    assert replay.divergences == []
    replay.state_difference(1, state("log", "y"), ["y"], ["z"])
    assert len(replay.divergences) == 1
    fork = ReplayEngine(ReplaySource(recording.directory), policy=LENIENT, from_seq=1, branch=True)
    fork.state_difference(0, state("log", "x"), ["x"], ["z"])
    assert fork.divergences == []


# ---- from_seq, forks ---------------------------------------------------------------------------


def test_is_checked_counts_a_replays_units_from_from_seq_and_a_forks_before_it():
    assert [is_checked(seq, 2, False) for seq in (1, 2, 3)] == [False, True, True]
    assert [is_checked(seq, 2, True) for seq in (1, 2, 3)] == [True, False, False]


def test_a_replay_from_a_seq_leaves_the_calls_before_it_unchecked(recording):
    recording.tool("a", {"n": 1}, "A")
    recording.tool("b", {"n": 1}, "B")
    engine = recording.engine(from_seq=2)
    match = engine.match(KIND_TOOL, tool("a", {"n": 2}))
    assert match.unit == 0 and match.divergence is None and engine.divergences == []
    divergence = divergence_of(engine, KIND_TOOL, tool("b", {"n": 2}))
    assert divergence.event_seq == 2


def test_a_replay_from_a_seq_lets_the_calls_before_it_come_in_any_order(recording):
    recording.tool("a", {}, "A")
    recording.tool("b", {}, "B")
    recording.tool("c", {}, "C")
    engine = recording.engine(from_seq=4)
    assert engine.match(KIND_TOOL, tool("b", {})).divergence is None
    assert engine.next_unserved_seq() == 4  # a, unserved, is before from_seq: not counted
    assert engine.match(KIND_TOOL, tool("a", {})).divergence is None
    assert engine.match(KIND_TOOL, tool("c", {})).divergence is None
    assert engine.divergences == []


def test_an_unexpected_call_points_at_the_first_checked_call_not_made_yet(recording):
    recording.tool("a", {}, "A")
    recording.tool("b", {}, "B")
    engine = recording.engine(policy=LENIENT, from_seq=2)
    engine.match(KIND_TOOL, tool("c", {}))
    assert engine.divergences[0].divergence_point == 2


def test_a_fork_serves_its_history_and_runs_everything_after_it_live(recording):
    recording.tool("a", {}, "A")
    recording.tool("b", {}, "B")
    engine = recording.engine(from_seq=2, branch=True)
    assert engine.match(KIND_TOOL, tool("a", {})).result_seq == 1
    after = engine.match(KIND_TOOL, tool("b", {}))
    assert after.live and after.unit is None
    other = engine.match(KIND_TOOL, tool("c", {"x": 1}))
    assert other.live and engine.divergences == [] and engine.stopped is None


def test_a_fork_reports_a_live_answer_that_refuses_where_the_recorded_one_did_not_and_back(recording):
    recording.llm(REQUEST, ANSWERED)
    recording.llm({**REQUEST, "n": 2}, REFUSED)
    engine = recording.engine(from_seq=0, branch=True)
    engine.check_live_llm(llm(REQUEST), REFUSED)
    engine.check_live_llm(llm({**REQUEST, "n": 2}), ANSWERED)
    engine.check_live_llm(llm(REQUEST), ANSWERED)
    engine.check_live_llm(llm({**REQUEST, "n": 3}), REFUSED)  # no recorded call: nothing to compare with
    first, second = engine.divergences
    assert (first.code, first.event_seq, first.json_path) == (REFUSAL_DIVERGENCE, 0, "$.response")
    assert (first.expected_value, first.observed_value) == ("valid", "refusal")
    assert first.detail == "the original run got a valid answer here, the live run a refusal"
    assert first.event_type == "llm_request"
    assert first.observed == {"type": "llm_response", "data": {"response": REFUSED}}
    assert first.expected["seq"] == 1
    assert (second.event_seq, second.expected_value, second.observed_value) == (2, "refusal", "valid")
    assert engine.stopped is None  # a fork goes on


def test_a_live_answer_to_a_call_whose_answer_was_never_recorded_is_not_compared(recording):
    recording.open_call("llm_request", {"provider": "openai", "model": "m", "request": REQUEST})
    engine = recording.engine(branch=True)
    engine.check_live_llm(llm(REQUEST), REFUSED)
    assert engine.divergences == []


def test_an_edited_fork_serves_what_still_matches_then_goes_live_from_the_first_change(recording):
    recording.tool("a", {"n": 1}, "A")
    recording.tool("b", {"n": 1}, "B")
    engine = recording.engine(policy=LENIENT, from_seq=4, branch=True, live_after_mismatch=True)
    assert engine.match(KIND_TOOL, tool("a", {"n": 1})).unit == 0
    changed = engine.match(KIND_TOOL, tool("b", {"n": 2}))
    assert changed.live and engine.went_live
    divergence = engine.divergences[0]
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 2, "$.args.n")
    assert (divergence.expected_value, divergence.observed_value, divergence.event_type) == (1, 2, "tool_call")
    assert divergence.expected["seq"] == 2
    assert divergence.observed == {"type": "tool_call", "data": tool("b", {"n": 2})}
    assert divergence.detail == ("this tool_call differs from the one recorded at seq 2: from here the run goes its "
                                 "own way")
    assert engine.match(KIND_TOOL, tool("b", {"n": 1})).live  # live from here, even what the capture has
    assert len(engine.divergences) == 1


def test_an_edited_fork_going_live_at_a_call_the_capture_has_none_of_says_so(recording):
    recording.tool("a", {}, "A")
    engine = recording.engine(policy=LENIENT, from_seq=2, branch=True, live_after_mismatch=True)
    assert engine.match(KIND_TOOL, tool("c", {})).live
    divergence = engine.divergences[0]
    assert (divergence.code, divergence.divergence_point, divergence.event_type) == (EVENT_UNEXPECTED, 0, "tool_call")
    assert divergence.observed == {"type": "tool_call", "data": tool("c", {})}
    assert divergence.detail == "the recorded run made no such tool_call: from here the run goes its own way"


def test_an_edited_fork_keeps_serving_its_overrides_once_live(recording):
    recording.value("k", 4)
    engine = calling(recording.engine(policy=LENIENT, from_seq=1, branch=True, live_after_mismatch=True,
                                      overrides={"k": 40}), MAIN)
    engine.match(KIND_TOOL, tool("c", {}))
    match = engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    assert match.live and (match.override, match.has_override) == (40, True)


def test_an_offline_edited_fork_stops_at_the_first_change(recording):
    recording.tool("a", {"n": 1}, "A")
    engine = recording.engine(policy=STRICT, from_seq=2, branch=True, live_after_mismatch=True)
    divergence = divergence_of(engine, KIND_TOOL, tool("a", {"n": 2}))
    assert divergence.code == EVENT_PAYLOAD_MISMATCH


# ---- telemetry, pool tasks ---------------------------------------------------------------------


POSTHOG = {"method": "POST", "url": "https://us.i.posthog.com/batch/", "body": {"api_key": "k", "batch": []}}


def test_telemetry_is_served_in_any_order_and_as_often_as_asked(recording):
    recording.tool("http", POSTHOG, {"status": 200})
    recording.tool("a", {}, "A")
    recording.tool("http", {**POSTHOG, "body": {"api_key": "k", "batch": [1]}}, {"status": 200})
    recording.tool("http", {**POSTHOG, "body": {"api_key": "k", "batch": [2]}}, {"status": 200})
    engine = recording.engine()
    assert engine.match(KIND_TOOL, tool("a", {})).divergence is None
    served = [engine.match(KIND_TOOL, tool("http", {**POSTHOG, "body": {"api_key": "k", "batch": [n]}}))
              for n in range(5)]
    assert [(match.unit, match.request_seq, match.result_seq) for match in served] == [
        (0, 0, 1), (2, 4, 5), (3, 6, 7), (3, 6, 7), (3, 6, 7)]
    assert [match.telemetry for match in served] == [False, False, False, True, True]
    assert engine.divergences == []
    assert engine.next_unserved_seq() == 7  # telemetry is never waited for: the last event


def test_telemetry_of_a_thread_that_made_nothing_else_is_served_in_any_order(recording):
    recording.tool("a", {}, "A")
    recording.tool("http", POSTHOG, {"status": 200}, origin=WORKER)
    engine = recording.engine()
    assert engine.match(KIND_TOOL, tool("http", POSTHOG)).result_seq == 3
    assert engine.match(KIND_TOOL, tool("a", {})).result_seq == 1
    assert engine.divergences == []


def test_telemetry_the_capture_has_none_of_is_left_to_the_boundary(recording):
    recording.tool("a", {}, "A")
    engine = recording.engine()
    match = engine.match(KIND_TOOL, tool("http", POSTHOG))
    assert match.telemetry and match.unit is None and engine.divergences == []


def test_a_pool_tasks_calls_are_served_to_whichever_worker_runs_it(recording):
    task = {"pid": 1, "thread": "MainThread", "poolTask": "process 1"}
    recording.tool("work", {}, "first", origin=task)
    recording.tool("work", {}, "second", origin={**task, "poolTask": "process 2"})
    engine = recording.engine()
    engine.caller_pool_task = lambda: "process 2"
    assert engine.match(KIND_TOOL, tool("work", {})).result_seq == 3
    engine.caller_pool_task = lambda: "process 1"
    assert engine.match(KIND_TOOL, tool("work", {})).result_seq == 1
    assert engine.divergences == []


def test_a_process_pool_tasks_calls_are_never_served_to_another_task(recording):
    recording.tool("work", {}, "first", origin={"pid": 1, "thread": "MainThread", "poolTask": "process 1"})
    engine = recording.engine(policy=LENIENT)
    engine.caller_pool_task = lambda: "process 2"
    assert engine.match(KIND_TOOL, tool("work", {})).unit is None
    assert engine.divergences[0].code == EVENT_UNEXPECTED


def test_a_secret_in_todays_request_still_finds_and_matches_its_redacted_recording(recording):
    secret = {**REQUEST, "password": "hunter2-long"}
    recording.sink.append("llm_request", {"provider": "openai", "model": "m", "request": secret, "callId": "x",
                                          "cacheKey": "k1"}, origin=MAIN)
    recording.sink.append("llm_response", {"callId": "x", "ok": True, "response": ANSWERED}, origin=MAIN)
    recording.llm(secret, REFUSED)
    recording.sink.finalize("ok")
    assert b"hunter2-long" not in (recording.directory / "events.jsonl").read_bytes()
    engine = ReplayEngine(ReplaySource.for_serving(recording.directory))
    key = engine.source.event(0)["data"]["cacheKey"]  # the recipe's: today's call computes the same (no password in it)
    match = engine.match(KIND_LLM, {**llm(secret), "cacheKey": key})
    assert (match.unit, match.divergence) == (0, None)
    fork = ReplayEngine(ReplaySource.for_serving(recording.directory), branch=True)
    fork.check_live_llm(llm(secret), ANSWERED)
    assert [(divergence.code, divergence.event_seq) for divergence in fork.divergences] == [(REFUSAL_DIVERGENCE, 2)]


def test_an_llm_call_in_a_process_pool_task_is_compared_with_that_tasks_next_call(recording):
    recording.tool("work", {}, "done", origin={"pid": 1, "thread": "MainThread", "poolTask": "process 1"})
    engine = recording.engine()
    engine.caller_pool_task = lambda: "process 1"
    divergence = divergence_of(engine, KIND_LLM, llm(REQUEST))
    assert (divergence.code, divergence.event_seq) == (EVENT_TYPE_MISMATCH, 0)
    other = ReplayEngine(ReplaySource(recording.directory), policy=LENIENT)
    other.caller_pool_task = lambda: "process 2"
    other.match(KIND_LLM, llm(REQUEST))
    assert other.divergences[0].code == EVENT_UNEXPECTED


def test_a_version_the_capture_never_chose_takes_its_override(recording):
    recording.tool("a", {}, "A")
    engine = recording.engine(overrides={"change-1": 2})
    match = engine.match(KIND_VERSION, {"source": "version", "key": "change-1", "min": 1, "max": 2})
    assert (match.unit, match.override, match.has_override) == (None, 2, True)


def test_a_changed_llm_request_is_compared_with_the_first_unserved_llm_call_whoever_made_it(recording):
    recording.llm({**REQUEST, "n": 1}, origin=WORKER)
    recording.llm({**REQUEST, "n": 2}, origin=OTHER)
    engine = calling(recording.engine(), OTHER)
    divergence = divergence_of(engine, KIND_LLM, llm({**REQUEST, "n": 3}))
    assert (divergence.event_seq, divergence.json_path, divergence.expected_value) == (0, "$.n", 1)


def test_a_changed_call_from_a_thread_the_capture_never_saw_is_compared_with_the_first_unserved_one(recording):
    recording.tool("fetch", {"page": 1}, "1", origin=WORKER)
    engine = calling(recording.engine(), {"pid": 1, "thread": "MainThread/new#9"})
    assert divergence_of(engine, KIND_TOOL, tool("fetch", {"page": 3})).event_seq == 0


def test_a_changed_call_skips_a_same_named_thread_that_made_only_telemetry(recording):
    recording.tool("http", POSTHOG, {"status": 200}, origin={"pid": 1, "thread": "MainThread"})
    recording.tool("fetch", {"page": 1}, "1", origin=WORKER)
    recording.tool("fetch", {"page": 2}, "2", origin={"pid": 2, "thread": "MainThread"})
    engine = calling(recording.engine(), {"pid": 3, "thread": "MainThread"})
    assert divergence_of(engine, KIND_TOOL, tool("fetch", {"page": 3})).event_seq == 4


def test_a_changed_call_is_compared_with_the_threads_next_call_only_when_it_is_to_that_tool(recording):
    recording.tool("fetch", {"page": 1}, "1", origin=WORKER)
    recording.value("fetch", 5, origin=OTHER)
    recording.tool("fetch", {"page": 2}, "2", origin=OTHER)
    engine = calling(recording.engine(), OTHER)
    assert divergence_of(engine, KIND_TOOL, tool("fetch", {"page": 3})).event_seq == 0


def test_a_variable_written_with_another_value_is_compared_with_the_variables_next_write(recording):
    recording.sink.append("state_mutation", {"kind": "variable", "key": "plan", "value": 1}, origin=MAIN)
    divergence = divergence_of(recording.engine(), KIND_STATE, {"kind": "variable", "key": "plan", "value": 2})
    assert (divergence.event_seq, divergence.json_path, divergence.expected_value) == (0, "$.value", 1)


def test_a_write_recorded_without_its_reducer_differs_from_one_with_a_reducer(recording):
    recording.sink.append("state_mutation", {"kind": "channel", "channel": "log", "value": 1}, origin=MAIN)
    divergence = divergence_of(recording.engine(), KIND_STATE, state("log", 1, reducer="append"))
    assert (divergence.json_path, divergence.expected_value, divergence.observed_value) == ("$.reducer", None,
                                                                                            "append")


def test_a_variable_write_where_the_capture_wrote_a_channel_of_that_name_differs_at_kind(recording):
    recording.write("plan", 1, reducer="replace")
    divergence = divergence_of(recording.engine(), KIND_STATE, {"kind": "variable", "key": "plan",
                                                                "reducer": "replace", "value": 2})
    assert (divergence.json_path, divergence.expected_value, divergence.observed_value) == ("$.kind", "channel",
                                                                                            "variable")


def test_an_edited_fork_going_live_at_a_value_compares_it_with_the_recorded_value_of_its_key(recording):
    recording.value("k", 4)
    recording.value("k", 5)
    engine = calling(recording.engine(policy=LENIENT, from_seq=1, branch=True, live_after_mismatch=True,
                                      overrides={"k": 40}), MAIN)
    assert engine.match(KIND_VALUE, {"source": "rng", "key": "k"}).request_seq == 0
    live = engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    assert live.live and (live.override, live.has_override) == (40, True)
    divergence = engine.divergences[0]
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 1, "$")
    assert (divergence.expected_value, divergence.observed_value) == (5, None)


def test_a_divergence_shows_todays_call_as_the_capture_keeps_it_never_its_secret(recording):
    recording.tool("login", {"user": "u", "password": "hunter2-long"}, "ok")
    recording.sink.finalize("ok")
    engine = ReplayEngine(ReplaySource.for_serving(recording.directory), policy=LENIENT)
    match = engine.match(KIND_TOOL, tool("login", {"user": "v", "password": "hunter2-long"}))
    assert (match.divergence.json_path, match.divergence.observed_value) == ("$.args.user", "v")
    assert "hunter2-long" not in repr(match.divergence.observed)
    assert match.divergence.observed["data"]["args"]["user"] == "v"


def test_a_fork_keeps_serving_overrides_to_what_it_runs_live(recording):
    recording.value("k", 4)
    engine = calling(recording.engine(from_seq=0, branch=True, overrides={"k": 40}), MAIN)
    match = engine.match(KIND_VALUE, {"source": "rng", "key": "k"})
    assert match.live and (match.override, match.has_override) == (40, True)


def test_a_threads_own_equal_write_is_still_checked_for_its_reducer(recording):
    recording.write("log", "tick", origin=WORKER)
    recording.write("log", "tick", origin=OTHER)
    engine = calling(recording.engine(policy=LENIENT), OTHER)
    match = engine.match(KIND_STATE, state("log", "tick", reducer="replace"))
    assert match.request_seq == 1 and match.divergence.json_path == "$.reducer"


def test_equal_calls_from_a_thread_the_capture_never_saw_are_served_in_recorded_order(recording):
    recording.tool("tick", {}, "worker's", origin=WORKER)
    recording.tool("tick", {}, "other's", origin=OTHER)
    engine = calling(recording.engine(), {"pid": 1, "thread": "MainThread/new#9"})
    assert [engine.match(KIND_TOOL, tool("tick", {})).result_seq for _ in range(2)] == [1, 3]


def test_equal_calls_of_a_thread_named_alike_in_two_processes_are_served_in_recorded_order(recording):
    recording.tool("tick", {}, "worker's", origin=WORKER)
    recording.tool("tick", {}, "first main's", origin={"pid": 1, "thread": "MainThread"})
    recording.tool("tick", {}, "second main's", origin={"pid": 2, "thread": "MainThread"})
    engine = calling(recording.engine(), {"pid": 3, "thread": "MainThread"})
    assert engine.match(KIND_TOOL, tool("tick", {})).result_seq == 1


def test_a_changed_call_after_the_thread_made_all_its_own_is_compared_with_another_threads(recording):
    recording.tool("a", {}, "A", origin=OTHER)
    recording.tool("fetch", {"page": 1}, "1", origin=WORKER)
    engine = calling(recording.engine(), OTHER)
    assert engine.match(KIND_TOOL, tool("a", {})).divergence is None
    assert divergence_of(engine, KIND_TOOL, tool("fetch", {"page": 3})).event_seq == 2


def test_a_changed_call_is_compared_with_the_next_unserved_call_to_its_tool(recording):
    for page in (1, 2, 3, 4):
        recording.tool("fetch", {"page": page}, str(page), origin=WORKER)
    engine = recording.engine(policy=LENIENT)
    calling(engine, OTHER)
    engine.match(KIND_TOOL, tool("fetch", {"page": 1}))
    assert engine.match(KIND_TOOL, tool("fetch", {"page": 9})).divergence.event_seq == 2
    assert engine.match(KIND_TOOL, tool("fetch", {"page": 9})).divergence.event_seq == 4
    assert engine.match(KIND_TOOL, tool("fetch", {"page": 9})).divergence.event_seq == 6


def test_a_changed_call_in_a_process_pool_task_is_compared_with_that_tasks_call(recording):
    recording.tool("work", {"n": 1}, "done", origin={"pid": 1, "thread": "MainThread", "poolTask": "process 1"})
    engine = recording.engine()
    engine.caller_pool_task = lambda: "process 1"
    divergence = divergence_of(engine, KIND_TOOL, tool("work", {"n": 2}))
    assert (divergence.code, divergence.event_seq, divergence.json_path) == (EVENT_PAYLOAD_MISMATCH, 0, "$.args.n")


def test_a_thread_pool_tasks_calls_are_served_before_any_replayer_names_the_task(recording):
    recording.tool("work", {}, "done", origin={"pid": 1, "thread": "MainThread", "poolTask": "threads 1"})
    assert recording.engine().match(KIND_TOOL, tool("work", {})).result_seq == 1


def test_a_replay_from_a_seq_lets_a_call_before_it_go_unmade(recording):
    """`wop replay --from-seq N` checks only events from N on: a call before N the program no longer makes is no
    divergence, and the calls from N on keep their order."""
    recording.tool("a", {}, "A")
    recording.tool("b", {}, "B")
    recording.tool("c", {}, "C")
    engine = recording.engine(from_seq=2)
    assert engine.match(KIND_TOOL, tool("b", {})).divergence is None
    assert engine.match(KIND_TOOL, tool("c", {})).divergence is None
    swapped = ReplayEngine(ReplaySource(recording.directory), from_seq=2)
    divergence = divergence_of(swapped, KIND_TOOL, tool("c", {}))
    assert (divergence.code, divergence.event_seq) == (EVENT_PAYLOAD_MISMATCH, 2)


def test_telemetry_whose_answer_was_never_recorded_is_served_again_with_none(recording):
    recording.tool("http", POSTHOG, answered=False)
    engine = recording.engine()
    assert [engine.match(KIND_TOOL, tool("http", POSTHOG)).result_seq for _ in range(2)] == [None, None]


def test_each_thread_finds_its_own_equal_calls_whatever_other_calls_were_served_before(recording):
    recording.tool("tick", {}, "w", origin=WORKER)
    recording.tool("tick", {}, "o1", origin=OTHER)
    recording.tool("tick", {}, "o2", origin=OTHER)
    recording.tool("tock", {}, "w", origin=WORKER)
    recording.tool("tock", {}, "o", origin=OTHER)
    engine = recording.engine()
    calling(engine, OTHER)
    assert [engine.match(KIND_TOOL, tool("tick", {})).result_seq for _ in range(2)] == [3, 5]
    assert calling(engine, WORKER).match(KIND_TOOL, tool("tick", {})).result_seq == 1
    assert calling(engine, OTHER).match(KIND_TOOL, tool("tock", {})).result_seq == 9
    assert calling(engine, WORKER).match(KIND_TOOL, tool("tock", {})).result_seq == 7
    assert engine.divergences == []
