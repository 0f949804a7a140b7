"""`wop diff` and the RFC 0054 diff: the four conformance scenarios, exclusions, alignment, OpenWOP logs."""

import sys
import textwrap

import orjson
import pytest

from openwop_cli.diff import diff_runs
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


def test_ignore_paths_and_max_diffs():
    a = events({"response": {"id": "r1", "text": "same"}}, {"n": 1}, {"n": 2}, {"n": 3})
    b = events({"response": {"id": "r2", "text": "same"}}, {"n": 9}, {"n": 8}, {"n": 7})
    result = diff_runs(a, b, a="a", b="b", ignore=["$.response.id"], max_diffs=2, status_a="ok", status_b="ok")
    assert result["divergedAtSeq"] == 1 and [d["seq"] for d in result["eventDiffs"]] == [1, 2]
    assert result["truncated"] is False, "truncated means an in-flight run, not a shortened list"
    assert result["counts"]["changed"] == 3 and result["omittedEventDiffs"] == 1


def test_content_alignment_reports_one_inserted_event_as_one_added():
    base = [{"step": index} for index in range(20)]
    inserted = base[:7] + [{"step": "new"}] + base[7:]
    by_content = diff_runs(events(*base), events(*inserted), a="a", b="b", align="content")
    assert [(d["op"], d["seq"]) for d in by_content["eventDiffs"]] == [("added", 7)]
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


def test_the_human_report_names_the_alignment_and_the_first_divergence():
    done = run_wop("diff", str(FIXTURES / "support-agent"), str(FIXTURES / "support-agent-changed"))
    assert done.returncode == 1
    assert "diverged at seq 0" in done.stdout and "aligned by seq" in done.stdout and "$.argv" in done.stdout
