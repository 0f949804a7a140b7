"""What differing values look like: the kinds `wop replay --repeat` names and the divergence hint."""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_cli.cli.help import normalize_args
from openwop_cli.replay.nondeterminism import differing_kinds, divergence_hint, guess_kind

PLAIN_TEXT = st.text(alphabet=" .,:;!?-_/()[]{}\"'\nabcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", max_size=60)
WORDS = st.text(alphabet="ghijklmnopqrstuvwxyz ,.", max_size=30)


@given(PLAIN_TEXT)
def test_a_value_never_differs_from_itself(text):
    assert differing_kinds([text, text]) == ([], False)


@given(WORDS, WORDS, st.uuids(), st.uuids())
def test_two_texts_around_different_uuids_differ_only_in_a_uuid(prefix, suffix, first, second):
    texts = [f"{prefix} {first} {suffix}", f"{prefix} {second} {suffix}"]
    expected = ([], False) if first == second else (["uuid"], False)
    assert differing_kinds(texts) == expected


@pytest.mark.parametrize("values, kind", [
    (["Today is 2026-11-23T21:31:29.245298.", "Today is 2026-11-23T21:35:01.1."], "timestamp"),
    (["at Mon Nov 23 21:37:13 2026 ok", "at Tue Nov 24 09:01:02 2026 ok"], "timestamp"),
    (["t=1795469477.6443734", "t=1795469533.1"], "timestamp"),
    ([f"request {uuid.UUID(int=1)}", f"request {uuid.UUID(int=2**100)}"], "uuid"),
    (["id 3f2a9c1b77d0 ok", "id 9e1d00aa7c3b ok"], "hex id"),
    (["token Drmhze6EPcv0fN_81Bj-nA", "token Xu4hze6EPcv0fN_81Bj-nQ"], "random id"),
    (["temperature 0.73421", "temperature 0.12908"], "float"),
    (["You are worker 25436.", "You are worker 26078."], "number"),
    (["tags: alpha, beta, gamma", "tags: gamma, alpha, beta"], "order"),
    ([["a", "b", "c"], ["c", "a", "b"]], "order"),
    ([0.25, 0.5], "float"),
    (["Be friendly.", "Be brief."], "value"),
])
def test_guess_kind_names_what_the_differing_values_look_like(values, kind):
    assert guess_kind(values) == kind


def test_the_hint_names_the_kinds_and_the_fix_for_each_cause():
    expected = "Today is 2026-11-23T21:31:29.245298. Request 72a4babf-30c9-48df-ad41-cb2100df3107. Be formal."
    observed = "Today is 2026-11-23T21:35:01.100000. Request 12a4babf-30c9-48df-ad41-cb2100df3107. Be formal."
    off = divergence_hint(expected, observed, ambient_recorded=False, live_values=[])
    assert off["kinds"] == ["timestamp", "uuid"] and off["only"] is True
    assert "differ only in a timestamp and a uuid" in off["message"] and "--ambient off" in off["fix"]
    live = divergence_hint(expected, observed, True, [{"site": {"file": "agent.py", "line": 9, "function": "main"}}])
    assert "agent.py:9 main" in live["fix"]
    elsewhere = divergence_hint(expected, observed, True, [])
    assert "wop.nondeterministic" in elsewhere["fix"]
    mixed = divergence_hint(expected, observed.replace("formal", "brief"), False, [])
    assert mixed["only"] is False and "(and in other text)" in mixed["message"]
    assert divergence_hint("Be formal.", "Be brief.", False, []) is None
    assert divergence_hint({"n": 1}, None, False, []) is None


@pytest.mark.parametrize("args, expected", [
    (["--repeat", "last"], ["--repeat", "3", "last"]),
    (["last", "--repeat"], ["last", "--repeat", "3"]),
    (["--repeat", "5", "last"], ["--repeat", "5", "last"]),
    (["last", "--repeat", "--", "python", "a.py"], ["last", "--repeat", "3", "--", "python", "a.py"]),
    (["last", "--", "prog", "--repeat"], ["last", "--", "prog", "--repeat"]),
    (["last", "--edit", "7", "$.a=1", "--repeat"], ["last", "--edit", "7\x1f$.a=1", "--repeat", "3"]),
])
def test_repeat_without_a_count_means_three_and_edit_takes_two_words(args, expected):
    assert normalize_args(args) == expected


def _replay_capture(tmp_path, name, prompts, extra_call=False):
    """A capture of a replay: one llm_request per thread, in the order given (threads interleave differently)."""
    from openwop_cli.format.redact import Redactor
    from openwop_cli.format.sink import CaptureSink

    sink = CaptureSink(tmp_path / name, redactor=Redactor("none", ()))
    sink.start({})
    site = {"file": "agent.py", "line": 7, "function": "ask"}
    for thread, prompt in prompts:
        sink.append("llm_request", {"provider": "openai", "model": "m", "callId": f"c-{thread}",
                                    "request": {"messages": [{"role": "system", "content": prompt}],
                                                "tags": ["a", "b", "c"] if thread != "t2" or name != "r2" else ["c", "a", "b"]}},
                    origin={"pid": 100 + len(name), "thread": thread, "site": site})
    if extra_call:
        sink.append("tool_call", {"name": "lookup", "args": {"id": 1}, "callId": "x"},
                    origin={"pid": 100 + len(name), "thread": "t1"})
    sink.finalize("ok")
    return tmp_path / name


def test_replays_are_lined_up_per_thread_and_every_differing_path_is_reported(tmp_path):
    from openwop_cli.host.replay_repeat import compare_replays

    first = _replay_capture(tmp_path, "r1", [("t1", "hello"), ("t2", "pid 100")])
    second = _replay_capture(tmp_path, "r2", [("t2", "pid 200"), ("t1", "hello")], extra_call=True)
    third = _replay_capture(tmp_path, "r3", [("t1", "hello"), ("t2", "pid 300")])
    found = {(item.event_type, item.json_path): item for item in compare_replays([first, second, third])}
    assert set(found) == {("llm_request", "$.messages[0].content"), ("llm_request", "$.tags"), ("tool_call", "$")}
    pid = found["llm_request", "$.messages[0].content"]
    assert pid.values == ["pid 100", "pid 200", "pid 300"] and pid.kind == "number"
    assert pid.site == {"file": "agent.py", "line": 7, "function": "ask"}
    assert found["llm_request", "$.tags"].kind == "order" and "sort it" in found["llm_request", "$.tags"].fix
    assert found["tool_call", "$"].present == [False, True, False]
