"""`wop diff` and the RFC 0054 diff: the four conformance scenarios, exclusions, alignment, OpenWOP logs."""

import sys
import textwrap
from itertools import zip_longest

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.diff import diff_runs
from openwop_cli.format.reader import CaptureReader
from tests.conftest import FIXTURES, run_wop, write_capture

PROGRAM = """
    import os
    import openwop_cli as wop

    @wop.tool
    def lookup(order_id):
        return {"id": order_id, "status": os.environ.get("STATUS", "shipped")}

    lookup("A-1")
    wop.randint(0, 10**6, key="pick")
    wop.state.write("ticket", {"status": lookup("A-2")["status"]}, "merge")
"""


def capture(tmp_path, name, env=None):
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(PROGRAM))
    out = tmp_path / name
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(program), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return out


def diff_json(a, b, *options):
    """`wop diff --json` (run_wop checks the RFC 0054 schema) and, with --detail, wop's extra fields."""
    done = run_wop("diff", str(a), str(b), "--json", *options)
    return done, orjson.loads(done.stdout) if done.stdout.startswith("{") else None


def test_identical_runs_have_no_divergence_even_against_a_replay(tmp_path):
    source = capture(tmp_path, "source")
    done, result = diff_json(source, source)
    assert done.returncode == 0
    assert result["divergedAtSeq"] is None and result["eventDiffs"] == [] and result["truncated"] is False
    assert run_wop("replay", str(source), "--out", str(tmp_path / "replay"), cwd=tmp_path).returncode == 0
    done, result = diff_json(source, tmp_path / "replay")
    assert done.returncode == 0, result["eventDiffs"][:2]
    assert result["divergedAtSeq"] is None


def test_a_fork_diverging_at_n_reports_n_as_the_first_diff(tmp_path):
    source = capture(tmp_path, "source")
    pick_seq = next(e["seq"] for e in map(orjson.loads, (source / "events.jsonl").read_bytes().splitlines())
                    if e["type"] == "nondeterministic")
    forked = run_wop("fork", str(source), "--from-seq", str(pick_seq), "--set", "pick=-1",
                     "--out", str(tmp_path / "fork"), cwd=tmp_path)
    assert forked.returncode == 0, forked.stderr
    done, result = diff_json(source, tmp_path / "fork", "--detail")
    assert done.returncode == 1
    assert result["divergedAtSeq"] == pick_seq == result["eventDiffs"][0]["seq"]
    assert result["eventDiffs"][0]["op"] == "changed" and result["eventDiffs"][0]["paths"] == ["$.value", "$.valueHash"]


def test_the_state_diff_has_status_variables_and_channels(tmp_path):
    a = capture(tmp_path, "a")
    b = capture(tmp_path, "b", env={"STATUS": "lost"})
    done, result = diff_json(a, b, "--detail")
    assert done.returncode == 1
    state = result["stateDiff"]
    assert state["status"] == {"a": "ok", "b": "ok", "changed": False}
    assert state["channels"]["changed"]["ticket"]["a"] == {"status": "shipped"}
    assert state["channels"]["changed"]["ticket"]["b"] == {"status": "lost"}
    assert state["channels"]["changed"]["ticket"]["paths"] == ["$.status"]
    assert set(state["variables"]) == {"added", "removed", "changed"}
    changed_result = next(d for d in result["eventDiffs"] if d["aEvent"]["type"] == "tool_result")
    assert changed_result["paths"] == ["$.result.status"]


@pytest.mark.parametrize("a, b, code, message", [
    ("no-such-capture", "fixtures/support-agent", 2, "no capture"),
    ("fixtures/support-agent", "fixtures", 2, "not a capture"),
])
def test_bad_references_are_exit_2_with_a_clear_message(a, b, code, message):
    done = run_wop("diff", a, b)
    assert done.returncode == code and message in done.stderr and "Traceback" not in done.stderr


def test_a_corrupt_capture_is_exit_3(tmp_path):
    broken = write_capture(tmp_path / "broken", [("run_start", {"argv": ["x"]})])
    (broken / "events.jsonl").write_bytes(b"not json at all\n")
    done = run_wop("diff", str(FIXTURES / "support-agent"), str(broken))
    assert done.returncode == 3 and "cannot diff" in done.stderr


def events(*datas, kind="tool_result"):
    return [{"seq": index, "ts": 1000 + index, "type": kind, "data": data, "captureId": f"c{index}", "runId": "r",
             "origin": {"pid": index}} for index, data in enumerate(datas)]


def test_the_rfc_exclusions_never_cause_a_diff_and_run_metadata_only_when_asked():
    a = events({"eventId": "e1", "runId": "r1", "causationId": "c1", "correlationId": "k1", "traceparent": "00-a",
                "ok": True, "result": 1, "headers": {"date": "x"}, "callId": "t1", "writtenAt": "t", "durationMs": 5})
    b = events({"eventId": "e9", "runId": "r9", "causationId": "c9", "correlationId": "k9", "traceparent": "00-b",
                "ok": True, "result": 1, "headers": {"date": "y"}, "callId": "p9.t7", "writtenAt": "u", "durationMs": 9})
    b[0].update(ts=99, captureId="other", runId="other", origin={"pid": 77}, sourceSeq=3)
    assert diff_runs(a, b, a="a", b="b", ignore_run_metadata=True)["divergedAtSeq"] is None
    compared = diff_runs(a, b, a="a", b="b")
    assert compared["divergedAtSeq"] == 0 and compared["eventDiffs"][0]["paths"] == ["$.callId", "$.durationMs",
                                                                                        "$.writtenAt"]


def test_two_runs_from_two_shells_are_identical_unless_run_metadata_is_compared(tmp_path):
    """Run metadata is not behaviour: the environment's variable names (an exported PS1), the platform, hostname, the
    working directory and Python of run_start describe where a run happened, not what it did. Left out by default
    for captures; --compare-run-metadata compares them (and wop's recorder bookkeeping)."""
    program = tmp_path / "steady.py"
    program.write_text("import openwop_cli as wop\n\n@wop.tool\ndef lookup(order_id):\n    return {'id': order_id}\n\n"
                       "lookup('A-1')\nwop.state.write('seen', 'A-1', 'append')\n")

    def capture_in(name, env):
        done = run_wop("capture", "--out", str(tmp_path / name), "--", sys.executable, str(program), env=env,
                       cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return tmp_path / name

    plain, shell = capture_in("plain", None), capture_in("shell", {"PS1": "$ ", "WOP_TEST_EXPORTED": "1"})
    done, result = diff_json(plain, shell, "--detail")
    assert done.returncode == 0, result["eventDiffs"][:1]
    assert {"run_start.env", "run_start.platform", "run_start.hostname", "run_start.cwd",
            "run_start.python"} <= set(result["excluded"])
    assert run_wop("diff", str(plain), str(shell)).returncode == 0
    done, result = diff_json(plain, shell, "--detail", "--compare-run-metadata")
    assert done.returncode == 1 and result["divergedAtSeq"] == 0
    assert {path.partition("[")[0] for path in result["eventDiffs"][0]["paths"]} == {"$.env"}


def test_run_metadata_of_run_start_only_is_left_out():
    """The run_start keys are left out of run_start alone: a tool result's own `env` or `cwd` is behaviour."""
    def run(env, cwd):
        return [{"seq": 0, "ts": 1, "type": "run_start", "data": {"argv": ["a.py"], "env": env, "cwd": cwd,
                                                                   "platform": cwd, "python": cwd, "hostname": cwd}},
                {"seq": 1, "ts": 2, "type": "tool_result", "data": {"callId": "t", "ok": True,
                                                                     "result": None, "env": env, "cwd": cwd}}]

    result = diff_runs(run(["HOME"], "/a"), run(["HOME", "PS1"], "/b"), a="a", b="b", ignore_run_metadata=True)
    assert [(item["seq"], item["paths"]) for item in result["eventDiffs"]] == [(1, ["$.cwd", "$.env[1]"])]
    argv = diff_runs([{"seq": 0, "ts": 1, "type": "run_start", "data": {"argv": ["a.py", "--fast"]}}],
                     [{"seq": 0, "ts": 1, "type": "run_start", "data": {"argv": ["a.py"]}}], a="a", b="b",
                     ignore_run_metadata=True)
    assert argv["divergedAtSeq"] == 0, "the command line is the program's input: always compared"


def test_ignore_paths_and_max_diffs():
    a = events({"response": {"id": "r1", "text": "same"}}, {"n": 1}, {"n": 2}, {"n": 3})
    b = events({"response": {"id": "r2", "text": "same"}}, {"n": 9}, {"n": 8}, {"n": 7})
    result = diff_runs(a, b, a="a", b="b", ignore=["$.response.id"], max_diffs=2, status_a="ok", status_b="ok")
    assert result["divergedAtSeq"] == 1 and [d["seq"] for d in result["eventDiffs"]] == [1, 2]
    assert result["truncated"] is False, "truncated means an in-flight run, not a shortened list"
    assert result["counts"]["changed"] == 3 and result["omittedEventDiffs"] == 1


def test_max_diffs_bounds_a_content_aligned_list_too():
    base = [{"step": index} for index in range(20)]
    inserted = base[:3] + [{"step": "new"}] + base[3:9] + [{"step": "newer"}] + base[9:]
    result = diff_runs(events(*base), events(*inserted), a="a", b="b", align="content", max_diffs=1)
    assert [(d["op"], d["seq"]) for d in result["eventDiffs"]] == [("added", 3)]
    assert result["counts"]["added"] == 2 and result["omittedEventDiffs"] == 1


def test_content_alignment_reports_one_inserted_event_as_one_added():
    base = [{"step": index} for index in range(20)]
    inserted = base[:7] + [{"step": "new"}] + base[7:]
    by_content = diff_runs(events(*base), events(*inserted), a="a", b="b", align="content")
    assert [(d["op"], d["seq"]) for d in by_content["eventDiffs"]] == [("added", 7)]
    dropped = diff_runs(events(*inserted), events(*base), a="a", b="b", align="content")
    assert [(d["op"], d["seq"]) for d in dropped["eventDiffs"]] == [("removed", 7)]
    by_seq = diff_runs(events(*base), events(*inserted), a="a", b="b")
    assert by_seq["counts"]["changed"] == 13 and by_seq["counts"]["added"] == 1


def test_openwop_run_event_logs_are_read_by_diff_and_show(tmp_path):
    record = {"eventId": "e1", "runId": "run_1", "sequence": 0, "type": "channel.written",
              "payload": {"channel": "votes", "value": {"userId": "u1", "action": "approve"}, "reducer": "votes"},
              "timestamp": "2026-05-01T10:00:00Z"}
    (tmp_path / "a.jsonl").write_bytes(orjson.dumps(record) + b"\n")
    other = {**record, "eventId": "e9", "runId": "run_2",
             "payload": {**record["payload"], "value": {"userId": "u1", "action": "reject"}}}
    (tmp_path / "b.json").write_bytes(orjson.dumps([other]))
    done, result = diff_json(tmp_path / "a.jsonl", tmp_path / "b.json", "--detail")
    assert done.returncode == 1 and result["a"] == "run_1" and result["b"] == "run_2"
    assert result["eventDiffs"][0]["paths"] == ["$.value.action"]
    assert result["stateDiff"]["channels"]["changed"]["votes"]["b"] == [{"userId": "u1", "action": "reject"}]
    shown = run_wop("show", str(tmp_path / "a.jsonl"))
    assert shown.returncode == 0 and "channel.written" in shown.stdout


def test_a_secret_in_an_openwop_host_log_never_reaches_the_output(tmp_path):
    """A host's log is data wop did not record, so nothing redacted it: diff (its eventDiffs and stateDiff), state and
    show pass what they read through the one redactor, as a capture's events were on the way to disk."""
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2

    def log(name, value):
        record = {"eventId": f"{name}-1", "runId": name, "sequence": 0, "type": "channel.written",
                  "payload": {"channel": "config", "value": value, "reducer": "merge"},
                  "timestamp": "2026-05-01T10:00:00Z"}
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(orjson.dumps(record) + b"\n")
        return path

    a, b = log("a", {"model": "m1", "note": f"key {secret}"}), log("b", {"model": "m2", "api_key": secret})
    outputs = [run_wop("diff", str(a), str(b), "--json"), run_wop("diff", str(a), str(b), "--json", "--detail"),
               run_wop("diff", str(a), str(b)), run_wop("state", str(b), "--json"), run_wop("state", str(b)),
               run_wop("show", str(a), "--seq", "0", "--json"), run_wop("show", str(b))]
    for done in outputs:
        assert done.returncode in (0, 1), done.stderr
        assert secret not in done.stdout and secret[:20] not in done.stdout, done.args
    changed = orjson.loads(outputs[0].stdout)["stateDiff"]["channels"]["changed"]["config"]
    assert changed["b"] == {"model": "m2", "api_key": "***REDACTED***"} and changed["a"]["note"] == "key ***REDACTED***"


def test_run_logs_whose_sequences_skip_numbers_are_aligned_by_seq_not_by_position(tmp_path):
    def log(name, sequences):
        records = [{"eventId": f"{name}{seq}", "runId": name, "sequence": seq, "type": "step.done",
                    "payload": {"step": seq}, "timestamp": "2026-05-01T10:00:00Z"} for seq in sequences]
        (tmp_path / f"{name}.jsonl").write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
        return tmp_path / f"{name}.jsonl"

    done, result = diff_json(log("a", [0, 2, 4, 6]), log("b", [0, 4, 6, 8]), "--detail")
    assert done.returncode == 1, done.stderr
    assert [(item["seq"], item["op"]) for item in result["eventDiffs"]] == [(2, "removed"), (8, "added")]
    assert result["divergedAtSeq"] == 2


def test_the_human_report_names_the_alignment_and_the_first_divergence():
    done = run_wop("diff", str(FIXTURES / "support-agent"), str(FIXTURES / "support-agent-changed"))
    assert done.returncode == 1
    assert "diverged at seq 0" in done.stdout and "aligned by seq" in done.stdout and "$.argv" in done.stdout


def state_writes(count, *, late_value=1):
    """A state-heavy run: appends, counters, merges and variables, with one different counter write near its end."""
    writes = [("run_start", {"argv": ["agent.py"], "channels": {"log": {"reducer": "append", "maxSize": 50}}})]
    for index in range(count):
        kind = index % 4
        if kind == 0:
            data = {"kind": "channel", "channel": "log", "value": {"step": index}, "reducer": "append"}
        elif kind == 1:
            value = late_value if index == count - 7 else 1
            data = {"kind": "channel", "channel": "cost", "value": value, "reducer": "counter"}
        elif kind == 2:
            data = {"kind": "channel", "channel": "profile", "value": {f"k{index % 7}": index}, "reducer": "merge"}
        else:
            data = {"kind": "variable", "key": f"v{index % 5}", "value": index}
        writes.append(("state_mutation", data))
    return [*writes, ("run_end", {"exitCode": 0, "status": "ok"})]


def test_a_state_heavy_diff_with_a_late_difference_reports_the_state_that_differs(tmp_path):
    a = write_capture(tmp_path / "a", state_writes(4_000))
    b = write_capture(tmp_path / "b", state_writes(4_000, late_value=5))
    done, result = diff_json(a, b, "--detail")
    assert done.returncode == 1
    late = 1 + 4_000 - 7
    assert [(item["seq"], item["op"], item["paths"]) for item in result["eventDiffs"]] == [(late, "changed", ["$.value"])]
    state = result["stateDiff"]
    assert state["channels"]["changed"] == {"cost": {"a": 1_000, "b": 1_004, "paths": ["$"]}}
    assert state["variables"] == {"added": {}, "removed": {}, "changed": {}}
    assert state["channels"]["added"] == state["channels"]["removed"] == {}


def test_the_state_diff_lists_names_in_the_same_order_whatever_the_hash_seed(tmp_path):
    def run(offset):
        writes = [("state_mutation", {"kind": "variable", "key": f"var{(index * 7) % 23}", "value": index + offset})
                  for index in range(23)]
        writes += [("state_mutation", {"kind": "variable", "key": f"only{offset}-{index}", "value": index})
                   for index in range(9)]
        return [("run_start", {"argv": ["agent.py"]}), *writes, ("run_end", {"exitCode": 0, "status": "ok"})]

    a, b = write_capture(tmp_path / "a", run(0)), write_capture(tmp_path / "b", run(1))
    outputs = {run_wop("diff", "--json", str(a), str(b), env={"PYTHONHASHSEED": seed}).stdout for seed in "0123"}
    assert len(outputs) == 1
    variables = orjson.loads(outputs.pop())["stateDiff"]["variables"]
    assert list(variables["changed"]) == sorted(variables["changed"]) and len(variables["changed"]) == 23
    assert list(variables["added"]) == sorted(variables["added"]) and len(variables["removed"]) == 9


WRITE = st.one_of(
    st.builds(lambda value: {"kind": "channel", "channel": "log", "value": value, "reducer": "append"},
              st.integers(0, 3)),
    st.builds(lambda value: {"kind": "channel", "channel": "cost", "value": value, "reducer": "counter"},
              st.integers(0, 3)),
    st.builds(lambda key, value: {"kind": "channel", "channel": "fresh", "value": {key: value}, "reducer": "append"},
              st.sampled_from("ab"), st.integers(0, 3)),
    st.builds(lambda key, value: {"kind": "variable", "key": key, "value": value}, st.sampled_from("xy"),
              st.integers(0, 3)),
    st.builds(lambda value: {"kind": "channel", "channel": "notes", "value": value, "reducer": "merge"},
              st.dictionaries(st.sampled_from("pq"), st.integers(0, 3), max_size=2)),
    st.builds(lambda value: {"kind": "declare", "channel": "cost", "declaration": {"reducer": "counter",
                                                                                  "default": value}},
              st.integers(0, 3)),
)
DECLARED = {"log": {"reducer": "append", "maxSize": 3}, "fresh": {"reducer": "append", "ttlMs": 5}}


def stamped(writes, times):
    run = [{"seq": 0, "ts": 0, "type": "run_start", "data": {"channels": DECLARED}}]
    for index, (data, ts) in enumerate(zip(writes, times), 1):
        run.append({"seq": index, "ts": ts, "type": "state_mutation", "data": data})
    return run


@settings(max_examples=300, deadline=None)
@given(st.lists(WRITE, max_size=25), st.data())
def test_folding_a_shared_prefix_once_gives_the_same_state_diff_as_folding_both_runs(writes, data):
    """Whatever two runs share and wherever they part (a changed write, a write at another time on a TTL channel,
    a changed declaration, a shorter run), and whatever they go on writing alike after, the diff's state is what
    folding each run on its own gives."""
    from openwop_cli.channels.fold import fold_events
    from openwop_cli.diff import state_diff

    other = list(writes)
    for index in data.draw(st.lists(st.integers(0, max(len(other) - 1, 0)), max_size=3)):
        if other:
            other[index] = data.draw(WRITE)
    other = other[:data.draw(st.integers(0, len(other)))] if data.draw(st.booleans()) else other
    times_a = sorted(data.draw(st.lists(st.integers(1, 40), min_size=len(writes), max_size=len(writes))))
    times_b = [ts + data.draw(st.sampled_from([0, 0, 3, 9])) for ts in times_a[:len(other)]]
    run_a, run_b = stamped(writes, times_a), stamped(other, times_b)
    alone = state_diff(fold_events(run_a).snapshot(), fold_events(run_b).snapshot(), "ok", "ok")
    for align in ("seq", "content"):
        result = diff_runs(run_a, run_b, a="a", b="b", status_a="ok", status_b="ok", align=align)
        assert result["stateDiff"] == alone


def test_runs_that_parted_fold_a_declaration_they_share_before_the_writes_they_share():
    """After the runs part (x), both declare `cost` alike and write it alike (shared), then apart: the state diff
    shows `cost` as each run folds it on its own, its declared default included."""
    from openwop_cli.channels.fold import fold_events
    from openwop_cli.diff import state_diff

    def run(x: int, last: int) -> list[dict]:
        return stamped([{"kind": "variable", "key": "x", "value": x},
                        {"kind": "declare", "channel": "cost", "declaration": {"reducer": "counter", "default": 2}},
                        {"kind": "channel", "channel": "cost", "value": 1, "reducer": "counter"},
                        {"kind": "channel", "channel": "cost", "value": last, "reducer": "counter"}], [1, 2, 3, 4])

    run_a, run_b = run(1, 1), run(2, 5)
    result = diff_runs(run_a, run_b, a="a", b="b", status_a="ok", status_b="ok")
    assert result["stateDiff"]["channels"]["changed"]["cost"] == {"a": 4, "b": 8, "paths": ["$"]}
    assert result["stateDiff"] == state_diff(fold_events(run_a).snapshot(), fold_events(run_b).snapshot(), "ok", "ok")


def test_runs_that_parted_share_each_channel_until_it_differs_and_fold_it_apart_after():
    """After a variable parts the runs: `log` (append, maxSize 3: its value depends on the order of its writes) is
    written alike and then differs late; `fresh` (ttlMs 5) gets equal writes, one of them at two times, which parts it
    from there on; `cost` gets 1 and 1.0 (one JCS number, two byte forms), then the same writes. Each channel ends as
    folding that run alone leaves it; only what differs is listed."""
    from openwop_cli.channels.fold import fold_events
    from openwop_cli.diff import state_diff

    def run(x, late, fresh_ts, first_cost):
        writes = [{"kind": "variable", "key": "x", "value": x},
                  _write("log", "p", "append"),
                  _write("fresh", 1, "append"),
                  _write("fresh", 2, "append"),
                  _write("log", "q", "append"),
                  _write("cost", first_cost, "counter"),
                  _write("cost", 2, "counter"),
                  {"kind": "declare", "channel": "other", "declaration": {"reducer": "append"}},
                  _write("log", late, "append"),
                  _write("log", "r", "append"),
                  _write("fresh", 3, "append"),
                  _write("cost", 4, "counter")]
        return stamped(writes, [1, 1, 1, fresh_ts, 2, 2, 2, 2, 3, 3, 3, 3])

    run_a, run_b = run(1, "late", 2, 1), run(2, "LATE", 4, 1.0)
    result = diff_runs(run_a, run_b, a="a", b="b", status_a="ok", status_b="ok")
    assert [item["seq"] for item in result["eventDiffs"]] == [1, 9]  # 1 and 1.0 are one number; times are not compared
    state = result["stateDiff"]
    assert state == state_diff(fold_events(run_a).snapshot(), fold_events(run_b).snapshot(), "ok", "ok")
    assert state["channels"]["changed"] == {
        "fresh": {"a": [{"value": 1, "_ts": 1}, {"value": 2, "_ts": 2}, {"value": 3, "_ts": 3}],
                  "b": [{"value": 1, "_ts": 1}, {"value": 2, "_ts": 4}, {"value": 3, "_ts": 3}], "paths": ["$[1]._ts"]},
        "log": {"a": ["q", "late", "r"], "b": ["q", "LATE", "r"], "paths": ["$[1]"]}}
    assert state["variables"]["changed"] == {"x": {"a": 1, "b": 2, "paths": ["$"]}}


def test_true_and_1_are_different_json_values_in_events_and_in_the_state(tmp_path):
    """Python says True == 1; JSON (and JCS) does not. A run that writes true where the other wrote 1 differs: the
    counter refuses true (validation_error), so only b's counter holds 1; each run's append channel keeps its own."""
    def run(value):
        return [("run_start", {"argv": ["agent.py"]}),
                ("state_mutation", {"kind": "channel", "channel": "cost", "value": value, "reducer": "counter"}),
                ("state_mutation", {"kind": "channel", "channel": "flag", "value": value, "reducer": "replace"}),
                ("state_mutation", {"kind": "channel", "channel": "log", "value": value, "reducer": "append"}),
                ("run_end", {"exitCode": 0, "status": "ok"})]

    a, b = write_capture(tmp_path / "a", run(True)), write_capture(tmp_path / "b", run(1))
    done, result = diff_json(a, b, "--detail")
    assert done.returncode == 1
    assert [(item["seq"], item["paths"]) for item in result["eventDiffs"]] == [(1, ["$.value"]), (2, ["$.value"]),
                                                                               (3, ["$.value"])]
    channels = result["stateDiff"]["channels"]
    assert channels["added"] == {"cost": 1} and channels["removed"] == {}
    assert channels["changed"] == {"flag": {"a": True, "b": 1, "paths": ["$"]},
                                   "log": {"a": [True], "b": [1], "paths": ["$[0]"]}}
    for align in ("seq", "content"):
        result = diff_runs(events({"v": True}, {"v": 2}), events({"v": 1}, {"v": 2}), a="a", b="b", align=align)
        assert result["counts"]["changed"] + result["counts"]["added"] >= 1, align


def test_1_and_1_0_are_one_number_as_rfc_0054_compares_jcs_forms(tmp_path):
    """RFC 0054 compares (seq, type, JCS(payload)); JCS writes 1.0 as 1 (and -0.0 as 0), so those runs are identical,
    in the events and in the folded state, whichever way they are aligned; a value that differs still differs, and its
    path is the only one listed."""
    def run(x, y):
        return [("run_start", {"argv": ["agent.py"]}),
                ("state_mutation", {"kind": "channel", "channel": "cost", "value": x, "reducer": "counter"}),
                ("tool_result", {"callId": "t1", "ok": True, "result": {"x": x, "y": y, "zero": 0.0 if y else -0.0}}),
                ("run_end", {"exitCode": 0, "status": "ok"})]

    a, b = write_capture(tmp_path / "a", run(1, 2)), write_capture(tmp_path / "b", run(1.0, 2.0))
    for align in ("seq", "content"):
        done, result = diff_json(a, b, "--detail", "--align", align)
        assert done.returncode == 0 and result["divergedAtSeq"] is None and result["eventDiffs"] == [], align
        assert result["stateDiff"]["channels"]["changed"] == {}
    c = write_capture(tmp_path / "c", run(1.0, 3))
    done, result = diff_json(a, c, "--detail")
    assert done.returncode == 1 and [(item["seq"], item["paths"]) for item in result["eventDiffs"]] == [
        (2, ["$.result.y"])]
    for align in ("seq", "content"):
        assert diff_runs(events({"x": 1}), events({"x": 1.0}), a="a", b="b", align=align)["divergedAtSeq"] is None
    record = {"eventId": "e1", "runId": "r", "sequence": 0, "type": "step.done", "payload": {"x": 1}}
    one, one_point_zero = tmp_path / "one.jsonl", tmp_path / "one-point-zero.jsonl"
    one.write_bytes(orjson.dumps(record) + b"\n")
    one_point_zero.write_bytes(orjson.dumps(record).replace(b'"x":1', b'"x":1.0') + b"\n")
    assert run_wop("diff", str(one), str(one_point_zero)).returncode == 0


def test_the_state_diff_folds_each_run_with_the_channels_of_the_workflow_it_pinned(tmp_path):
    """Channels declared only by the pinned workflow (`wop capture --workflow`): the diff folds each run with its own
    workflow's declarations (maxSize, a default), as `wop state` and the program itself do."""
    program = tmp_path / "agent.py"
    program.write_text("import os\nimport openwop_cli as wop\n"
                       "for step in range(4):\n"
                       "    wop.state.write('log', os.environ['WORD'] + str(step))\n"
                       "    wop.state.write('budget', -1)\n")

    def capture_with(name, word, max_size):
        workflow = tmp_path / f"{name}.json"
        workflow.write_text(orjson.dumps({"name": "triage", "channels": {
            "log": {"reducer": "append", "maxSize": max_size}, "budget": {"reducer": "counter", "default": 100}}}).decode())
        out = tmp_path / name
        done = run_wop("capture", "--workflow", str(workflow), "--out", str(out), "--", sys.executable, str(program),
                       env={"WORD": word}, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return out

    a, b, c = capture_with("a", "yes", 2), capture_with("b", "no", 2), capture_with("c", "yes", 3)
    done, result = diff_json(a, b)
    assert done.returncode == 1
    assert result["stateDiff"]["channels"]["changed"] == {"log": {"a": ["yes2", "yes3"], "b": ["no2", "no3"],
                                                                  "paths": ["$[0]", "$[1]"]}}
    for side in (a, b):
        assert orjson.loads(run_wop("state", str(side), "--json").stdout)["channels"]["budget"] == 96
    done, result = diff_json(a, c)
    assert result["eventDiffs"] == []
    assert result["stateDiff"]["channels"]["changed"] == {"log": {"a": ["yes2", "yes3"], "b": ["yes1", "yes2", "yes3"],
                                                                  "paths": ["$[0]", "$[1]", "$[2]"]}}
    shown = run_wop("diff", str(a), str(c))
    assert "same events, but their end states differ" in shown.stdout and "identical" not in shown.stdout


def _write(name, value, reducer):
    return {"kind": "channel", "channel": name, "value": value, "reducer": reducer}


NAME = st.sampled_from(["log", "cost", "7", "m"])
VALUE = st.sampled_from([0, 1, 2, True, 1.0, "a", None])
ANY_EVENT = st.one_of(
    st.builds(_write, NAME, VALUE, st.sampled_from(["append", "counter", "replace"])),
    st.builds(lambda name, key, value: _write(name, {key: value}, "merge"), NAME, st.sampled_from("ab"), VALUE),
    st.builds(lambda name, user, action: _write(name, {"userId": user, "action": action}, "votes"), NAME,
              st.sampled_from("uw"), st.sampled_from("yn")),
    st.builds(lambda name, mid, role: _write(name, {"messageId": mid, "role": role, "content": "c"}, "message"), NAME,
              st.sampled_from("pq"), st.sampled_from(["user", "bot"])),
    st.builds(lambda name, value, ts: _write(name, {"value": value, "_ts": ts}, "append"), NAME, VALUE,
              st.integers(0, 45)),
    st.builds(lambda name, value: {"kind": "variable", "key": name, "value": value}, NAME, VALUE),
    st.builds(lambda name, value: {"kind": "channel", "channel": name, "value": value}, st.sampled_from([7, None]),
              VALUE),
    st.builds(lambda name, declaration: {"kind": "declare", "channel": name, "declaration": declaration}, NAME,
              st.one_of(st.fixed_dictionaries({}, optional={
                  "reducer": st.sampled_from(["append", "votes", "counter", "message"]), "ttlMs": st.sampled_from([0, 3]),
                  "maxSize": st.integers(0, 2), "default": st.sampled_from([5, [1], "x"])}), st.sampled_from([None, [1]]))),
    st.builds(lambda value: ("tool_call", {"name": "t", "v": value}), VALUE),
    st.just(("run_end", {"status": "error", "exitCode": 1})),
    st.builds(lambda name, value: ("channel.written", {"channel": name, "value": value, "reducer": "append"}), NAME,
              VALUE),
)
PINNED = st.sampled_from([None, {"log": {"reducer": "append", "maxSize": 1}},
                          {"cost": {"reducer": "counter", "default": 5}, "m": {"reducer": "append", "ttlMs": 3}}])


def jcs_numbers(value):
    """value with every integral float an int, as JCS writes it (1.0 is 1)."""
    if type(value) is float and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: jcs_numbers(child) for key, child in value.items()}
    if isinstance(value, list):
        return [jcs_numbers(child) for child in value]
    return value


@settings(max_examples=150, deadline=None)
@given(st.lists(ANY_EVENT, max_size=16), st.data())
def test_the_state_diff_is_each_run_folded_on_its_own_whatever_the_runs_do(events_a, data):
    """Two runs that share a prefix and then differ (a write changed, inserted or dropped, true for 1, a shorter run,
    other times on TTL channels, another pinned workflow): the diff's stateDiff, by seq or by content, is byte for byte
    the state diff of each run folded alone (`wop state` of each), and it finds a divergence exactly when the runs'
    events are not the same JSON."""
    from openwop_cli.channels.fold import fold_events
    from openwop_cli.diff import state_diff

    events_b = list(events_a)
    for index in data.draw(st.lists(st.integers(0, 15), max_size=3)):
        index = min(index, len(events_b))
        change = data.draw(st.sampled_from(["replace", "insert", "delete", "retype"]))
        if change == "insert" or index == len(events_b):
            events_b.insert(index, data.draw(ANY_EVENT))
        elif change == "replace":
            events_b[index] = data.draw(ANY_EVENT)
        elif change == "delete":
            del events_b[index]
        elif isinstance(events_b[index], dict):  # the same write of a value Python calls equal
            value = events_b[index].get("value")
            retyped = int(value) if type(value) is bool else True if value == 1 else float(value) \
                if type(value) is int else True
            events_b[index] = {**events_b[index], "value": retyped}
    if data.draw(st.booleans()):
        events_b = events_b[:data.draw(st.integers(0, len(events_b)))]
    times_a = sorted(data.draw(st.lists(st.integers(1, 40), min_size=len(events_a), max_size=len(events_a))))
    times_b = [ts + data.draw(st.sampled_from([0, 0, 3])) for ts in [*times_a, *[41] * len(events_b)][:len(events_b)]]

    def run(writes, times):
        stamped_run = [{"seq": 0, "ts": 0, "type": "run_start", "data": {"channels": {"log": {"reducer": "append"}}}}]
        for seq, (event, ts) in enumerate(zip(writes, times), 1):
            event_type, event_data = event if isinstance(event, tuple) else ("state_mutation", event)
            stamped_run.append({"seq": seq, "ts": ts, "type": event_type, "data": event_data})
        return stamped_run

    run_a, run_b = run(events_a, times_a), run(events_b, times_b)
    pinned_a = data.draw(PINNED)
    pinned_b = data.draw(st.sampled_from([pinned_a, None]))
    fold_a, fold_b = fold_events(run_a, declarations=pinned_a), fold_events(run_b, declarations=pinned_b)
    alone = orjson.dumps(state_diff(fold_a.snapshot(), fold_b.snapshot(), fold_a.status, fold_b.status),
                         option=orjson.OPT_SORT_KEYS)
    as_json = [[orjson.dumps([event["type"], jcs_numbers(event["data"])], option=orjson.OPT_SORT_KEYS)
                for event in run] for run in (run_a, run_b)]
    parted_at = next((seq for seq, (left, right) in enumerate(zip_longest(*as_json)) if left != right), None)
    for align in ("seq", "content"):
        result = diff_runs(run_a, run_b, a="a", b="b", align=align, declarations_a=pinned_a, declarations_b=pinned_b)
        assert orjson.dumps(result["stateDiff"], option=orjson.OPT_SORT_KEYS) == alone, align
        assert result["divergedAtSeq"] == parted_at if align == "seq" else \
            (result["divergedAtSeq"] is None) == (parted_at is None)


def test_ignore_paths_are_parsed_as_json_paths_relative_to_an_events_data():
    from openwop_cli.diff import parse_path

    assert parse_path("$.response.choices[0].id") == ["response", "choices", 0, "id"]
    assert parse_path("  $.a[*].b  ") == ["a", "*", "b"]
    assert parse_path("response.id") == ["response", "id"]
    assert parse_path("$['my key'][\"other\"][-1]") == ["my key", "other", -1]
    assert parse_path("$.a..b[x]") == ["a", "b", "x"]
    assert parse_path("$") == [] and parse_path("") == []
    assert parse_path("$.a[0") == ["a", "[0"] and parse_path("$[X5]") == ["X5"] and parse_path("$['X']") == ["X"]


def test_ignored_paths_leave_out_keys_and_items_wherever_a_star_says():
    from openwop_cli.diff import comparable, parse_path

    def kept(data, *paths):
        return comparable({"type": "t", "data": data}, [parse_path(path) for path in paths])["data"]

    data = {"response": {"id": "r", "choices": [{"id": 1, "text": "a"}, {"id": 2, "text": "b"}]}, "n": [1, 2, 3]}
    assert kept(data, "$.response.id") == {"response": {"choices": data["response"]["choices"]}, "n": [1, 2, 3]}
    assert kept(data, "$.response.choices[*].id") == {
        "response": {"id": "r", "choices": [{"text": "a"}, {"text": "b"}]}, "n": [1, 2, 3]}
    assert kept(data, "$.response.choices[1].text")["response"]["choices"] == [{"id": 1, "text": "a"}, {"id": 2}]
    assert kept(data, "$.n[0]", "$.n[-1]")["n"] == [2]
    assert kept(data, "$.n[-3]")["n"] == [2, 3]
    assert kept(data, "$.n[*]")["n"] == [] and kept(data, "$.*") == {}
    assert kept(data, "$.n[3]", "$.n[-4]", "$.n.x", "$.missing", "$.response.id.deeper", "$.n[x]") == data
    assert kept(data, "$.response.choices[*]")["response"] == {"id": "r", "choices": []}
    assert kept(data, "$.*.id") == {"response": {"choices": data["response"]["choices"]}, "n": [1, 2, 3]}
    assert data["response"]["id"] == "r" and len(data["n"]) == 3, "the event itself is never changed"
    assert comparable({"type": "t", "data": "text"}, [["x"]]) == {"type": "t", "data": "text"}


def test_the_rfc_result_keeps_the_rfc_0054_fields_only():
    from openwop_cli.diff import rfc_result

    result = diff_runs(events({"n": 1}, {"n": 2}), events({"n": 1}), a="run-a", b="run-b", status_a="ok",
                       status_b="ok")
    rfc = rfc_result(result)
    assert list(rfc) == ["a", "b", "divergedAtSeq", "eventDiffs", "stateDiff", "truncated"]
    assert (rfc["a"], rfc["b"], rfc["divergedAtSeq"], rfc["truncated"]) == ("run-a", "run-b", 1, False)
    assert rfc["eventDiffs"] == [{"seq": 1, "op": "removed", "aEvent": result["eventDiffs"][0]["aEvent"]}]
    assert "paths" in diff_runs(events({"n": 1}), events({"n": 2}), a="a", b="b")["eventDiffs"][0]
    assert "paths" not in rfc_result(diff_runs(events({"n": 1}), events({"n": 2}), a="a", b="b"))["eventDiffs"][0]


def test_content_alignment_reports_the_longer_runs_tail_event_by_event():
    base = [{"step": index} for index in range(5)]
    longer = events(*base, {"step": "x"}, {"step": "y"})
    removed = diff_runs(longer, events(*base), a="a", b="b", align="content")
    assert [(d["op"], d["seq"], d.get("aEvent"), d.get("bEvent")) for d in removed["eventDiffs"]] == [
        ("removed", 5, longer[5], None), ("removed", 6, longer[6], None)]
    added = diff_runs(events(*base), longer, a="a", b="b", align="content")
    assert [(d["op"], d["seq"], d.get("aEvent"), d.get("bEvent")) for d in added["eventDiffs"]] == [
        ("added", 5, None, longer[5]), ("added", 6, None, longer[6])]


def test_content_alignment_leaves_out_ignored_paths_and_run_metadata():
    a = events({"n": 1, "id": "r1", "callId": "t1"}, {"n": 2, "id": "r2", "callId": "t2"})
    b = events({"n": 1, "id": "r9", "callId": "p1.t1"}, {"n": 2, "id": "r8", "callId": "p1.t2"})
    same = diff_runs(a, b, a="a", b="b", align="content", ignore=["$.id"], ignore_run_metadata=True)
    assert same["divergedAtSeq"] is None and same["eventDiffs"] == []
    compared = diff_runs(a, b, a="a", b="b", align="content", ignore=["$.id"])
    assert compared["counts"]["changed"] == 2 and compared["eventDiffs"][0]["paths"] == ["$.callId"]


def test_the_diff_of_two_run_logs_names_each_kind_of_difference_and_the_end_states():
    def run(*steps, end="run.completed"):
        return [{"seq": seq, "ts": seq, "type": kind, "data": data} for seq, kind, data in steps] + (
            [{"seq": 99, "ts": 99, "type": end, "data": {}}] if end else [])

    write = "channel.written"
    a = run((0, write, {"channel": "kept", "value": 1}), (2, write, {"channel": "gone", "value": 1}),
            (4, "tool_call", {"name": "f"}), (6, write, {"channel": "c", "value": {"x": 1, "y": [1]}}))
    b = run((0, write, {"channel": "kept", "value": 1}), (3, write, {"channel": "new", "value": 2}),
            (4, "llm_request", {"name": "f"}), (6, write, {"channel": "c", "value": {"x": 2, "y": [1, 2]}}),
            end="run.failed")
    result = diff_runs(a, b, a="a", b="b")
    assert [(d["seq"], d["op"], d.get("paths")) for d in result["eventDiffs"]] == [
        (2, "removed", None), (3, "added", None), (4, "changed", ["$.type"]), (6, "changed", ["$.value.x",
                                                                                               "$.value.y[1]"]),
        (99, "changed", ["$.type"])]
    assert (result["divergedAtSeq"], result["counts"], result["omittedEventDiffs"]) == (
        2, {"added": 1, "removed": 1, "changed": 3}, 0)
    assert result["truncated"] is False and result["excluded"] == sorted(
        ["eventId", "runId", "causationId", "correlationId", "ts", "traceparent", "tracestate", "headers"])
    assert result["stateDiff"] == {
        "status": {"a": "completed", "b": "failed", "changed": True},
        "variables": {"added": {}, "removed": {}, "changed": {}},
        "channels": {"added": {"new": 2}, "removed": {"gone": 1},
                     "changed": {"c": {"a": {"x": 1, "y": [1]}, "b": {"x": 2, "y": [1, 2]},
                                       "paths": ["$.x", "$.y[1]"]}}}}
    assert diff_runs(a, a, a="a", b="b")["stateDiff"]["status"] == {"a": "completed", "b": "completed",
                                                                     "changed": False}


def test_a_run_with_no_terminal_event_or_an_incomplete_capture_is_truncated():
    done = [{"seq": 0, "ts": 0, "type": "run_end", "data": {"status": "ok"}}]
    assert diff_runs(done, done, a="a", b="b")["truncated"] is False
    assert diff_runs(done, [], a="a", b="b")["truncated"] is True
    assert diff_runs([], done, a="a", b="b")["truncated"] is True
    assert diff_runs(done, done, a="a", b="b", status_b="incomplete")["truncated"] is True
    assert diff_runs(done, done, a="a", b="b", status_a="incomplete")["truncated"] is True
    result = diff_runs(done, done, a="a", b="b", status_a="error", status_b="ok")
    assert result["stateDiff"]["status"] == {"a": "error", "b": "ok", "changed": True}
    excluded = diff_runs(done, done, a="a", b="b", ignore_run_metadata=True)["excluded"]
    assert {"callId", "run_start.env", "ts"} <= set(excluded) and excluded == sorted(excluded)


def test_content_aligned_differences_carry_each_runs_whole_events():
    """What content alignment compares is an event's type and data less the excluded fields; what it lists is the
    event itself, seq, time and ids included, for added, removed and changed alike."""
    base = [{"step": index} for index in range(6)]
    a = events(*base[:2], {"step": "a only"}, *base[2:4], {"step": "mine"}, *base[4:])
    b = events(*base[:4], {"step": "theirs"}, base[4], {"step": "b only"}, base[5])
    result = diff_runs(a, b, a="a", b="b", align="content")
    listed = [(item["op"], item.get("aEvent"), item.get("bEvent")) for item in result["eventDiffs"]]
    assert listed == [("removed", a[2], None), ("changed", a[5], b[4]), ("added", None, b[6])]
    assert result["eventDiffs"][1]["paths"] == ["$.step"]


def test_an_event_moved_one_place_is_listed_where_b_has_it_first():
    """A tie (A's next event is as far ahead in B as B's next is in A) lists B's events first, as added: one rule, so
    the same two runs always give the same list."""
    a, b = events({"step": "p"}, {"step": "q"}, {"step": "r"}), events({"step": "q"}, {"step": "p"}, {"step": "r"})
    result = diff_runs(a, b, a="a", b="b", align="content")
    assert [(item["op"], item["seq"]) for item in result["eventDiffs"]] == [("added", 0), ("removed", 1)]
    assert result["eventDiffs"][0]["bEvent"] == b[0] and result["eventDiffs"][1]["aEvent"] == a[1]


@pytest.mark.parametrize("second", [1.0, 1])
def test_a_state_write_of_one_value_written_two_ways_folds_in_both_runs(second):
    """1 and 1.0 are one JCS value: no event differs, and each run's state holds its own write (were one left
    unfolded, its run would lack the variable and the counter's first step)."""
    def run(value):
        writes = [{"kind": "variable", "key": "x", "value": value},
                  {"kind": "channel", "channel": "cost", "value": value, "reducer": "counter"},
                  {"kind": "variable", "key": "y", "value": 2}]
        return [{"seq": 0, "ts": 1, "type": "run_start", "data": {"argv": ["a.py"]}},
                *({"seq": seq, "ts": 1 + seq, "type": "state_mutation", "data": data}
                  for seq, data in enumerate(writes, 1))]

    first = 1 if second == 1.0 else 1.0
    result = diff_runs(run(first), run(second), a="a", b="b")
    assert result["eventDiffs"] == [] and result["divergedAtSeq"] is None
    for part in ("variables", "channels"):
        assert result["stateDiff"][part] == {"added": {}, "removed": {}, "changed": {}}
    lonely = diff_runs(run(first)[:2], run(second)[:1], a="a", b="b")
    assert lonely["stateDiff"]["variables"]["removed"] == {"x": first}, "the test's runs do write state"


@pytest.mark.parametrize("declared", ["b", "a"])
def test_a_run_that_declares_a_channel_the_other_does_not_folds_with_its_own_declaration(declared):
    """Only one run's pinned workflow declares the channel (a bound and a default): each run's end state is folded
    with its own declarations, so the same writes leave different states."""
    declaration = {"log": {"reducer": "append", "maxSize": 1, "default": []}, "idle": {"default": "none"}}
    writes = [{"seq": 0, "ts": 1, "type": "run_start", "data": {"argv": ["a.py"]}}]
    writes += [{"seq": seq, "ts": 1 + seq, "type": "state_mutation",
                "data": {"kind": "channel", "channel": "log", "value": seq, "reducer": "append"}} for seq in (1, 2, 3)]
    declarations = {"declarations_a": declaration} if declared == "a" else {"declarations_b": declaration}
    result = diff_runs(writes, writes, a="a", b="b", **declarations)
    assert result["eventDiffs"] == []
    bounded, unbounded = ("b", "a") if declared == "b" else ("a", "b")
    changed = result["stateDiff"]["channels"]["changed"]
    assert list(changed) == ["log"] and changed["log"][bounded] == [3] and changed["log"][unbounded] == [1, 2, 3]
    added_or_removed = "added" if declared == "b" else "removed"
    assert result["stateDiff"]["channels"][added_or_removed] == {"idle": "none"}


def test_a_capture_diffed_with_a_run_log_that_skips_seqs_is_aligned_by_seq(tmp_path):
    """A capture's seqs run 0, 1, 2…; a run log's may skip. Paired by seq, the log's missing seq is one removed event;
    paired by position (right for two captures only), every later event would be changed."""
    capture = write_capture(tmp_path / "a", [("run_start", {"argv": ["a.py"]}),
                                             *(("tool_result", {"callId": f"c{n}", "ok": True, "result": n})
                                               for n in range(4))])
    run_log = [event for event in CaptureReader(capture) if event["seq"] != 2]
    result = diff_runs(CaptureReader(capture), run_log, a="a", b="b")
    assert [(item["seq"], item["op"]) for item in result["eventDiffs"]] == [(2, "removed")]
