"""The canonical reducers of openwop-channels.md, with the spec's own examples, and the store that applies them."""

from collections import OrderedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.channels.reducers import (
    ChannelStore,
    ReducerError,
    effective_reducer,
    is_entry,
    legacy_node,
    legacy_reducer,
    reduce_once,
    ttl_wrapped,
    unwrapped,
    validate,
)
from openwop_cli.format.events import LARGEST_INT, SMALLEST_INT


def fold(reducer, writes, declaration=None, stamps=None):
    store = ChannelStore()
    for index, value in enumerate(writes):
        store.write("c", value, reducer, ts=(stamps[index] if stamps else index), declaration=declaration)
    return store.value("c")


def test_replace_keeps_the_latest_write():
    assert fold("replace", [1, {"a": 1}, "last"]) == "last"


def test_append_keeps_every_write_in_order():
    assert fold("append", ["a", "b", "c"]) == ["a", "b", "c"]


def test_merge_is_shallow_and_later_keys_win():
    assert fold("merge", [{"a": 1, "nested": {"x": 1}}, {"b": 2, "nested": {"y": 2}}, {"a": 3}]) == {
        "a": 3, "b": 2, "nested": {"y": 2}}


def test_counter_adds_including_negative_increments():
    assert fold("counter", [1, 1, 5, -2]) == 5


def test_votes_replace_a_users_earlier_vote():
    votes = [{"userId": "u1", "action": "approve", "timestamp": "t1"},
             {"userId": "u2", "action": "reject", "timestamp": "t2"},
             {"userId": "u1", "action": "reject", "timestamp": "t3", "reason": "changed my mind"}]
    assert fold("votes", votes) == [votes[1], votes[2]]


def test_feedback_appends_with_iterations():
    entries = [{"feedback": "shorter", "timestamp": "t1", "iteration": 1},
               {"feedback": "warmer", "timestamp": "t2", "iteration": 2}]
    assert fold("feedback", entries) == entries


def test_message_is_idempotent_on_message_id():
    first = {"messageId": "m1", "role": "user", "content": "hi", "timestamp": "t1"}
    second = {"messageId": "m2", "role": "assistant", "content": [{"type": "text", "text": "yo"}], "timestamp": "t2"}
    assert fold("message", [first, second, dict(first, content="retried")]) == [first, second]


def test_a_message_write_after_entries_whose_message_id_is_not_a_string_folds():
    """Entries a message write finds in its channel (appended before, or the declared default) whose messageId is a
    list or an object are kept and never match a message's id; their ids used to go into a set (TypeError:
    unhashable, `wop state` exit 70)."""
    message = {"messageId": "m1", "role": "user", "content": "hi"}
    odd = {"messageId": ["m1"], "role": "user", "content": "odd"}
    store = ChannelStore()
    store.write("c", odd, "append")
    store.write("c", message, "message")
    assert store.value("c") == [odd, message]
    assert fold("message", [message, message], {"default": [{"messageId": {"id": "m1"}}]}) == [
        {"messageId": {"id": "m1"}}, message]


def test_message_with_max_size_never_admits_an_evicted_id_again():
    """maxSize drops the oldest message, but the idempotency invariant holds for the whole run: a messageId lands in
    the log exactly once, so a re-emission of the dropped message is still a non-event."""
    first, second, third = ({"messageId": f"m{n}", "role": "user", "content": str(n), "timestamp": "t"} for n in (1, 2, 3))
    assert fold("message", [first, second, third, first], {"maxSize": 2}) == [second, third]
    store = ChannelStore()
    for message in (first, second, third):
        store.write("c", message, "message", declaration={"maxSize": 2})
    twin = store.copy()
    twin.write("c", first, "message", declaration={"maxSize": 2})
    assert twin.value("c") == [second, third], "a copied store remembers the dropped ids too"


@pytest.mark.parametrize("reducer, value", [
    ("merge", [1]), ("counter", "1"), ("counter", True), ("votes", {"action": "approve"}),
    ("feedback", {"text": "x"}), ("message", {"messageId": "m", "role": "robot", "content": "x"}),
    ("message", {"role": "user", "content": "x"}),
])
def test_invalid_inputs_are_validation_errors_and_change_nothing(reducer, value):
    store = ChannelStore()
    with pytest.raises(ReducerError):
        store.write("c", value, reducer)
    assert "c" not in store


@pytest.mark.parametrize("reducer, value, message", [
    ("merge", [1], "merge takes an object, got list"),
    ("counter", "1", "counter takes a number to add, got str"),
    ("votes", {"userId": "u", "action": 1}, "votes takes {userId: string, action: string, timestamp, reason?}"),
    ("votes", ["u"], "votes takes {userId: string, action: string, timestamp, reason?}"),
    ("feedback", {"feedback": 1}, "feedback takes {feedback: string, timestamp, iteration}"),
    ("feedback", "x", "feedback takes {feedback: string, timestamp, iteration}"),
    ("message", {"messageId": 1, "role": "user", "content": "x"},
     "message takes {messageId: string, role, content, timestamp, …}"),
    ("message", {"messageId": "m", "role": "robot", "content": "x"},
     "message role must be one of assistant, system, tool, user, got 'robot'"),
    ("message", {"messageId": "m", "role": "user", "content": 1},
     "message content must be a string or an array of content blocks"),
])
def test_a_refused_write_says_what_the_reducer_takes(reducer, value, message):
    """The validation_error's message is what `wop state` shows for a write it did not apply."""
    with pytest.raises(ReducerError) as raised:
        ChannelStore().write("c", value, reducer)
    assert str(raised.value) == message


def test_max_size_drops_the_oldest_entries_of_list_reducers():
    assert fold("append", [1, 2, 3, 4], {"maxSize": 2}) == [3, 4]


def test_max_size_rejects_oversized_values_of_other_reducers():
    store = ChannelStore()
    store.write("c", {"a": 1}, "merge", declaration={"maxSize": 2})
    store.write("c", {"b": 1}, "merge", declaration={"maxSize": 2})
    with pytest.raises(ReducerError) as raised:
        store.write("c", {"c": 1}, "merge", declaration={"maxSize": 2})
    assert str(raised.value) == "'c' would hold 3 entries, over its maxSize 2"
    assert store.value("c") == {"a": 1, "b": 1}
    store.write("r", "ab", "replace", declaration={"maxSize": 2})
    with pytest.raises(ReducerError) as raised:
        store.write("r", [1, 2, 3], "replace", declaration={"maxSize": 2})
    assert str(raised.value) == "'r' would hold 3 entries, over its maxSize 2" and store.value("r") == "ab"


def test_ttl_wraps_entries_and_prunes_by_the_events_own_time_then_max_size():
    declaration = {"ttlMs": 1000, "maxSize": 2}
    result = fold("append", ["old", "mid", "new", "newest"], declaration, stamps=[0, 1500, 1800, 2600])
    # at 2600 the cutoff is 1600: "old" (0) and "mid" (1500) are gone before maxSize applies
    assert result == [{"value": "new", "_ts": 1800}, {"value": "newest", "_ts": 2600}]


def test_ttl_prunes_every_expired_entry_when_timestamps_come_out_of_order():
    """Spec (Channel TTL): before appending, remove EVERY prior entry whose _ts < now - ttlMs, not only a prefix."""
    result = fold("append", ["late", "early", "mid", "now"], {"ttlMs": 100}, stamps=[1_000, 500, 990, 1_095])
    # at 1095 the cutoff is 995: "early" (500) and "mid" (990) expired although "late" (1000) came before them
    assert result == [{"value": "late", "_ts": 1_000}, {"value": "now", "_ts": 1_095}]


def test_ttl_a_declared_default_does_not_stop_the_pruning_of_expired_writes():
    declaration = {"ttlMs": 100, "default": ["seed"]}
    result = fold("append", ["a", "b", "c"], declaration, stamps=[0, 50, 500])
    assert result == ["seed", {"value": "c", "_ts": 500}], "the default never expires; the writes before 400 do"


def test_ttl_applies_before_max_size():
    """Spec: ttlMs is applied first (at write time), then maxSize on the remainder. With timestamps out of order the
    order shows: maxSize first would drop the fresh "late" entry and keep only the new one."""
    declaration = {"ttlMs": 50, "maxSize": 2}
    result = fold("append", ["late", "early", "new"], declaration, stamps=[100, 0, 120])
    assert result == [{"value": "late", "_ts": 100}, {"value": "new", "_ts": 120}]


def test_ttl_prunes_in_order_after_an_out_of_order_write_is_gone():
    declaration = {"ttlMs": 100}
    result = fold("feedback", [{"feedback": str(n)} for n in range(5)], declaration, stamps=[10, 5, 200, 250, 320])
    assert [entry["value"]["feedback"] for entry in result] == ["3", "4"]


def test_ttl_votes_still_replace_by_user():
    declaration = {"ttlMs": 10_000}
    votes = [{"userId": "u1", "action": "approve"}, {"userId": "u1", "action": "reject"}]
    assert fold("votes", votes, declaration, stamps=[1, 2]) == [{"value": votes[1], "_ts": 2}]


def test_declared_defaults_are_the_starting_value():
    assert fold("counter", [2], {"default": 10}) == 12
    assert fold("append", ["x"], {"default": ["seed"]}) == ["seed", "x"]


def test_unknown_and_vendor_reducers_fold_as_replace_and_legacy_prefixes_map():
    assert effective_reducer("vendor.acme.dedupe") == "replace" and effective_reducer("append") == "append"
    assert [legacy_reducer(name) for name in ("_approvalVotes:n1", "_askExchanges:n1", "_clarificationAnswers:n",
                                               "_feedbackHistory:n", "_loopbackCount:n", "_previousArtifact:n")] == [
        "votes", "append", "merge", "feedback", "counter", "replace"]


def test_a_ttl_entry_is_exactly_value_and_an_integer_ts():
    """Spec (Channel TTL): an entry of a ttlMs channel is `{value: T, _ts: number}`; wop stamps integer ms."""
    assert is_entry({"value": 1, "_ts": 5}) and is_entry({"_ts": 0, "value": None})
    for other in ({"value": 1}, {"value": 1, "_ts": 5, "x": 2}, {"value": 1, "_ts": 5.0}, {"value": 1, "_ts": True},
                  {"values": 1, "_ts": 5}, {"value": 1, "ts": 5}, OrderedDict(value=1, _ts=5), ["value", "_ts"], None):
        assert not is_entry(other), other
    assert unwrapped({"value": {"a": 1}, "_ts": 5}) == {"a": 1}
    assert unwrapped({"value": 1, "_ts": "5"}) == {"value": 1, "_ts": "5"} and unwrapped(7) == 7


def test_only_list_reducers_with_a_ttl_wrap_their_entries():
    assert [ttl_wrapped({"ttlMs": 1000}, reducer) for reducer in ("append", "votes", "feedback")] == [True] * 3
    assert [ttl_wrapped({"ttlMs": 1000}, reducer) for reducer in ("message", "replace", "merge", "counter")] == [
        False] * 4
    assert not ttl_wrapped({"ttlMs": 0}, "append") and not ttl_wrapped({}, "append")


def test_one_write_onto_a_value_folded_elsewhere():
    """reduce_once: what the runtime checks a replayed write against (the recorded value before, today's write)."""
    assert reduce_once("c", None, "x", "append", ts=5, declaration={}) == ["x"]
    assert reduce_once("c", None, 2, "counter", ts=5, declaration={"default": 10}) == 12
    assert reduce_once("c", 0, 2, "counter", ts=5, declaration={"default": 10}) == 2
    assert reduce_once("c", ["a"], "b", "append", ts=5, declaration={"default": ["seed"]}) == ["a", "b"]
    expired = [{"value": "early", "_ts": 2000}, {"value": "old", "_ts": 0}]
    assert reduce_once("c", expired, "new", "append", ts=2500, declaration={"ttlMs": 1000}) == [
        {"value": "early", "_ts": 2000}, {"value": "new", "_ts": 2500}], "entries folded elsewhere: all pruned"
    message = {"messageId": "m1", "role": "user", "content": "hi"}
    assert reduce_once("c", [message], dict(message, content="again"), "message", ts=5, declaration={}) == [message]
    assert reduce_once("n", LARGEST_INT, 1, "counter", ts=0, declaration={}) == {"$bigint": str(LARGEST_INT + 1)}
    assert reduce_once("n", {"$bigint": str(LARGEST_INT + 1)}, -1, "counter", ts=0, declaration={}) == LARGEST_INT
    assert reduce_once("c", "ab", "x", "append", ts=0, declaration={}) == ["x"], "not a list: the list starts afresh"
    assert reduce_once("c", ["a", "b"], "x", "replace", ts=0, declaration={}) == "x"


def test_a_recorded_counter_keeps_a_total_beyond_64_bits_tagged_and_a_programs_store_as_an_int():
    recorded, programs = ChannelStore(recorded=True), ChannelStore()
    for store in (recorded, programs):
        store.write("low", SMALLEST_INT, "counter")
        store.write("low", -1, "counter")
        store.write("edge", SMALLEST_INT, "counter")
    assert recorded.value("low") == {"$bigint": str(SMALLEST_INT - 1)} and recorded.value("edge") == SMALLEST_INT
    assert programs.value("low") == SMALLEST_INT - 1


def test_a_recorded_counter_adds_an_increment_recorded_beyond_64_bits():
    big = {"$bigint": str(LARGEST_INT + 1)}
    assert reduce_once("n", 1, big, "counter", ts=0, declaration={}) == {"$bigint": str(LARGEST_INT + 2)}
    assert reduce_once("n", -2, big, "counter", ts=0, declaration={}) == LARGEST_INT - 1
    assert reduce_once("n", None, big, "counter", ts=0, declaration={}) == big


@pytest.mark.parametrize("reducer, value", [
    ("replace", [1]), ("append", None), ("merge", {"a": 1}), ("counter", 2), ("counter", -0.5),
    ("counter", {"$bigint": str(LARGEST_INT + 1)}), ("votes", {"userId": "u", "action": "approve"}),
    ("feedback", {"feedback": "x"}), ("message", {"messageId": "m", "role": "user", "content": "x"}),
])
def test_an_input_its_reducer_takes_passes_the_check_a_programs_write_meets(reducer, value):
    """validate is the check a program's write meets before it is recorded (runtime/state_api); the fold takes it."""
    validate(reducer, value)
    store = ChannelStore(recorded=True)
    store.write("c", value, reducer)
    assert "c" in store


def test_a_legacy_variables_node_is_what_follows_its_prefix():
    assert [legacy_node(name) for name in ("_approvalVotes:gate", "_loopbackIteration:n2", "_previousArtifact:w",
                                           "wfArtifactData_step")] == ["gate", "n2", "w", "step"]
    assert legacy_node("_approvalVotes:") is None and legacy_node("plain") is None
    assert legacy_node("x_approvalVotes:gate") is None


def ttl_store():
    """A TTL channel whose entries were folded elsewhere (their order unknown), a message channel, a counter."""
    store = ChannelStore()
    store.load("ttl", [{"value": "late", "_ts": 100}, {"value": "early", "_ts": 0}], "append")
    store.write("log", {"messageId": "m1", "role": "user", "content": "hi"}, "message")
    store.write("n", 1, "counter")
    return store


def test_a_copied_store_folds_on_apart_from_its_original():
    store = ttl_store()
    twin = store.copy()
    assert twin.recorded is store.recorded and twin.snapshot() == store.snapshot()
    assert twin.names() == ["ttl", "log", "n"]
    twin.write("ttl", "new", "append", ts=140, declaration={"ttlMs": 50})
    twin.write("log", {"messageId": "m1", "role": "user", "content": "again"}, "message")
    twin.write("n", 1, "counter")
    assert twin.value("ttl") == [{"value": "late", "_ts": 100}, {"value": "new", "_ts": 140}], \
        "the copy knows the entries' order is unknown: every expired one is dropped"
    assert len(twin.value("log")) == 1 and twin.value("n") == 2
    assert store.value("ttl") == [{"value": "late", "_ts": 100}, {"value": "early", "_ts": 0}]
    assert store.value("n") == 1 and ChannelStore(recorded=True).copy().recorded


def test_a_store_adopts_another_stores_channel_as_its_own_copy():
    other, store = ttl_store(), ChannelStore()
    store.write("ttl", "mine", "append")
    store.write("log", {"messageId": "m9", "role": "user", "content": "x"}, "message")
    for name in ("ttl", "log", "n"):
        store.adopt(other, name)
    assert store.snapshot() == other.snapshot()
    store.write("ttl", "new", "append", ts=140, declaration={"ttlMs": 50})
    store.write("log", {"messageId": "m1", "role": "user", "content": "again"}, "message")
    store.write("log", {"messageId": "m9", "role": "user", "content": "x"}, "message")
    assert store.value("ttl") == [{"value": "late", "_ts": 100}, {"value": "new", "_ts": 140}]
    assert [entry["messageId"] for entry in store.value("log")] == ["m1", "m9"], "m1 seen, m9 forgotten"
    assert len(other.value("ttl")) == 2 and len(other.value("log")) == 1


def test_adopting_a_channel_in_order_or_absent_elsewhere():
    ordered = ChannelStore()
    ordered.write("ttl", "late", "append", ts=100, declaration={"ttlMs": 1000})
    ordered.write("ttl", "later", "append", ts=200, declaration={"ttlMs": 1000})
    store = ttl_store()
    store.adopt(ordered, "ttl")
    store.write("ttl", "early", "append", ts=50, declaration={"ttlMs": 1000})
    store.write("ttl", "new", "append", ts=1120, declaration={"ttlMs": 1000})
    assert [entry["value"] for entry in store.value("ttl")] == ["later", "new"], "out of order again: all pruned"
    store.adopt(ChannelStore(), "log")
    store.adopt(ChannelStore(), "ttl")
    assert "log" not in store and "ttl" not in store
    store.write("log", {"messageId": "m1", "role": "user", "content": "hi"}, "message")
    assert len(store.value("log")) == 1, "the dropped channel's seen ids went with it"
    store.adopt(ChannelStore(), "never written")
    assert "never written" not in store


def test_a_channel_loaded_or_adopted_without_seen_ids_takes_them_from_its_entries():
    first, second = ({"messageId": f"m{n}", "role": "user", "content": str(n)} for n in (1, 2))
    store = ChannelStore()
    store.write("log", first, "message")
    store.load("log", [second], "message")
    store.write("log", first, "message")
    store.write("log", second, "message")
    assert store.value("log") == [second, first]
    loaded, adopting = ChannelStore(), ChannelStore()
    loaded.load("log", [second], "message")
    adopting.write("log", first, "message")
    adopting.adopt(loaded, "log")
    adopting.write("log", first, "message")
    adopting.write("log", second, "message")
    assert adopting.value("log") == [second, first]


def reference(reducer, current, value):
    """The spec's reducer functions, translated literally (copying, no optimisation)."""
    if reducer == "replace":
        return value
    if reducer == "append":
        return [*(current or []), value]
    if reducer == "merge":
        return {**(current or {}), **value}
    if reducer == "counter":
        return (current or 0) + value
    if reducer == "votes":
        return [*[v for v in current or [] if v["userId"] != value["userId"]], value]
    if reducer == "message":
        return current if any(m["messageId"] == value["messageId"] for m in current or []) else [*(current or []), value]
    raise AssertionError(reducer)


WRITES = st.one_of(
    st.tuples(st.just("replace"), st.integers()),
    st.tuples(st.just("append"), st.text(max_size=3)),
    st.tuples(st.just("merge"), st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=3)),
    st.tuples(st.just("counter"), st.integers(-5, 5)),
    st.tuples(st.just("votes"), st.fixed_dictionaries({"userId": st.sampled_from(["u1", "u2", "u3"]),
                                                       "action": st.sampled_from(["approve", "reject"])})),
    st.tuples(st.just("message"), st.fixed_dictionaries({"messageId": st.sampled_from(["m1", "m2", "m3"]),
                                                         "role": st.just("user"), "content": st.text(max_size=2)})),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["c1", "c2", "c3"]), WRITES), max_size=40))
def test_the_store_agrees_with_the_spec_functions(writes):
    store, expected, reducers = ChannelStore(), {}, {}
    for channel, (reducer, value) in writes:
        reducer = reducers.setdefault(channel, reducer)  # a channel keeps its first reducer; wrong inputs are refused
        try:
            store.write(channel, value, reducer)
        except ReducerError:
            continue
        expected[channel] = reference(reducer, expected.get(channel), value)
    assert store.snapshot() == expected


def ttl_reference(reducer, writes, declaration):
    """The spec's TTL rule taken literally: before each append drop every stamped entry older than now - ttlMs, then
    the reducer, then maxSize from the oldest end."""
    ttl, limit = declaration["ttlMs"], declaration.get("maxSize")
    entries = list(declaration.get("default", []))
    for value, ts in writes:
        entries = [e for e in entries if not (isinstance(e, dict) and "_ts" in e and e["_ts"] < ts - ttl)]
        if reducer == "votes":
            entries = [e for e in entries if not isinstance(e, dict) or e.get("value", {}).get("userId") != value["userId"]]
        entries.append({"value": value, "_ts": ts})
        if limit is not None:
            entries = entries[max(0, len(entries) - limit):]
    return entries


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["append", "votes", "feedback"]),
       st.lists(st.tuples(st.sampled_from(["u1", "u2", "u3"]), st.integers(0, 400)), max_size=25),
       st.integers(1, 150), st.none() | st.integers(0, 6), st.booleans())
def test_ttl_channels_agree_with_the_spec_rule_whatever_order_the_timestamps_come_in(reducer, writes, ttl, limit,
                                                                                    seeded):
    values = [{"userId": user, "action": "approve", "feedback": user} for user, _ in writes]
    declaration = {"ttlMs": ttl, **({"maxSize": limit} if limit is not None else {}),
                   **({"default": ["seed"]} if seeded else {})}
    store = ChannelStore()
    for value, (_, ts) in zip(values, writes):
        store.write("c", value, reducer, ts=ts, declaration=declaration)
    expected = ttl_reference(reducer, list(zip(values, (ts for _, ts in writes))), declaration)
    assert store.value("c", declaration.get("default", [])) == expected
