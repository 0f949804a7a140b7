"""run-diff-rfc0054.md, requirement by requirement: the response schema, determinism, the four conformance
scenarios, in-flight runs, the pinned exclusion list. Every `wop diff --json` here is schema-checked (run_wop)."""

from pathlib import Path

import orjson
import pytest

from tests.conformance.runs import capture, diff, events, run_log
from tests.conformance.spec import requirement
from tests.conftest import adopt_signing_key, assert_run_diff_schema, keep_signing_key, run_wop

SPEC = "run-diff-rfc0054.md"

PROGRAM = """
    import os
    import openwop_cli as wop

    @wop.tool
    def lookup(order_id):
        return {"id": order_id, "status": os.environ.get("STATUS", "shipped")}

    lookup("A-1")
    pick = wop.randint(0, 10**6, key="pick")
    wop.state.write("ticket", {"status": lookup("A-2")["status"]}, "merge")
    wop.state.set("_loopbackCount:review", 1)
"""


@pytest.fixture(scope="module")
def recorded_runs(tmp_path_factory, isolation) -> tuple[Path, Path, Path]:
    """PROGRAM captured once as it is (a) and once with a lost order (b), for the module's tests, which diff, replay
    and fork them (into their own tmp_path, never into a or b); and the recorder's signing key."""
    directory = tmp_path_factory.mktemp("runs")
    with isolation():
        a = capture(directory, PROGRAM, out="a")
        b = capture(directory, PROGRAM, out="b", env={"STATUS": "lost"})
        return a, b, keep_signing_key(directory / "key")


@pytest.fixture
def runs(recorded_runs) -> tuple[Path, Path]:
    """recorded_runs' a and b, recorded by this test's user."""
    a, b, key = recorded_runs
    adopt_signing_key(key)
    return a, b


def record(run_id: str, sequence: int, event_type: str, payload: dict, **envelope) -> dict:
    return {"eventId": f"{run_id}-e{sequence}", "runId": run_id, "sequence": sequence, "type": event_type,
            "payload": payload, "timestamp": f"2026-05-01T10:00:0{sequence}Z", **envelope}


def host_log(tmp_path, name: str, run_id: str, terminal: str | None, vote: str = "approve") -> object:
    records = [record(run_id, 0, "run.started", {"workflowId": "wf"}),
               record(run_id, 1, "channel.written", {"channel": "votes", "reducer": "votes",
                                                     "value": {"userId": "u1", "action": vote},
                                                     "writtenAt": "2026-05-01T10:00:01Z"})]
    if terminal is not None:
        records.append(record(run_id, 2, terminal, {}))
    return run_log(tmp_path / name, records)


@requirement(SPEC, "§B run-diff-response.schema.json",
             "the response validates against run-diff-response.schema.json as published (additionalProperties: false)")
def test_run_diff_schema_validates(tmp_path, runs):
    a, b = runs
    for left, right in ((a, a), (a, b), (host_log(tmp_path, "x.jsonl", "r1", "run.completed"),
                                          host_log(tmp_path, "y.jsonl", "r2", None, "reject"))):
        for extra in ((), ("--align", "content"), ("--max-diffs", "1")):
            code, result = diff(left, right, *extra)
            assert set(result) <= {"a", "b", "divergedAtSeq", "eventDiffs", "stateDiff", "truncated"}
            assert all(set(item) <= {"seq", "op", "aEvent", "bEvent"} for item in result["eventDiffs"])
    detailed = run_wop("diff", str(a), str(b), "--json", "--detail")
    extended = orjson.loads(detailed.stdout)
    assert {"paths", "op"} <= set(extended["eventDiffs"][0]) and {"align", "counts", "omittedEventDiffs"} <= set(extended)
    assert_run_diff_schema({key: extended[key] for key in ("a", "b", "divergedAtSeq", "stateDiff", "truncated")}
                           | {"eventDiffs": [{k: v for k, v in item.items() if k != "paths"}
                                             for item in extended["eventDiffs"]]})


@requirement(SPEC, "§C Determinism",
             "the diff is a pure function of the two event logs: the same logs give the same divergedAtSeq and the "
             "same ordered eventDiffs")
def test_run_diff_determinism_pure_function(tmp_path, runs):
    a, b = runs
    first = run_wop("diff", str(a), str(b), "--json")
    second = run_wop("diff", str(a), str(b), "--json")
    assert first.returncode == second.returncode == 1 and first.stdout == second.stdout
    for options in ((), ("--align", "content")):
        _, result = diff(a, b, *options)
        seqs = [item["seq"] for item in result["eventDiffs"]]
        assert len(seqs) > 1 and seqs == sorted(seqs) and result["divergedAtSeq"] == seqs[0], (options, seqs)
    skipping = [run_log(tmp_path / f"{name}.jsonl", [record(name, seq, "step.done", {"step": seq, "run": name})
                                                     for seq in sequences])
                for name, sequences in (("x", [0, 2, 5, 9]), ("y", [0, 3, 5, 8]))]
    _, result = diff(*skipping)
    assert [(item["seq"], item["op"]) for item in result["eventDiffs"]] == [
        (0, "changed"), (2, "removed"), (3, "added"), (5, "changed"), (8, "added"), (9, "removed")]


@requirement(SPEC, "Conformance",
             "run-diff-identical: a run against itself, or against an identical replay, has divergedAtSeq null and "
             "empty eventDiffs")
def test_run_diff_conformance_identical(tmp_path, runs):
    source, _ = runs
    code, result = diff(source, source)
    assert code == 0 and result["divergedAtSeq"] is None and result["eventDiffs"] == []
    assert run_wop("replay", str(source), "--out", str(tmp_path / "replay"), cwd=tmp_path).returncode == 0
    code, result = diff(source, tmp_path / "replay")
    assert code == 0 and result["divergedAtSeq"] is None and result["eventDiffs"] == []


@requirement(SPEC, "Conformance",
             "run-diff-fork-divergence: fork a run and force divergence after seq N: divergedAtSeq === N and "
             "eventDiffs start at N")
def test_run_diff_conformance_fork_divergence(tmp_path, runs):
    source, _ = runs
    pick = next(e["seq"] for e in events(source) if e["type"] == "nondeterministic")
    forked = run_wop("fork", str(source), "--from-seq", str(pick), "--set", "pick=-1", "--out", str(tmp_path / "fork"),
                     cwd=tmp_path)
    assert forked.returncode == 0, forked.stderr
    code, result = diff(source, tmp_path / "fork")
    assert code == 1 and result["divergedAtSeq"] == pick == result["eventDiffs"][0]["seq"]


@requirement(SPEC, "Conformance",
             "run-diff-state-shape: stateDiff reflects terminal-state differences (status, variables, channels) and "
             "is redaction-safe")
def test_run_diff_conformance_state_shape(tmp_path):
    secret = "sk-proj-" + "Wm4" * 12
    script = PROGRAM + "\n    wop.state.write('config', {'key': os.environ['OPENAI_API_KEY']})\n"
    a = capture(tmp_path, script, out="a", env={"OPENAI_API_KEY": secret})
    b = capture(tmp_path, script + "\n    raise SystemExit(2)\n", out="b", expect=2,
                env={"STATUS": "lost", "OPENAI_API_KEY": secret})
    code, result = diff(a, b)
    state = result["stateDiff"]
    assert code == 1 and state["status"] == {"a": "ok", "b": "error", "changed": True}
    assert state["channels"]["changed"]["ticket"]["b"] == {"status": "lost"}
    assert set(state["variables"]) == {"added", "removed", "changed"}
    assert secret not in orjson.dumps(result).decode()


@requirement(SPEC, "Conformance",
             "run-diff-state-shape for OpenWOP logs: status follows the terminal event — run.failed vs run.completed, "
             "run.cancelled")
def test_run_diff_conformance_run_log_terminal_status(tmp_path):
    completed = host_log(tmp_path, "completed.jsonl", "r1", "run.completed")
    failed = host_log(tmp_path, "failed.jsonl", "r2", "run.failed")
    cancelled = host_log(tmp_path, "cancelled.jsonl", "r3", "run.cancelled")
    code, result = diff(completed, failed)
    assert code == 1 and result["stateDiff"]["status"] == {"a": "completed", "b": "failed", "changed": True}
    code, result = diff(completed, cancelled)
    assert code == 1 and result["stateDiff"]["status"]["b"] == "cancelled" and result["truncated"] is False
    code, result = diff(completed, completed)
    assert code == 0 and result["stateDiff"]["status"]["changed"] is False


@requirement(SPEC, "§A Endpoint",
             "both runs are terminal, or in-flight prefixes are diffed and marked truncated: true")
def test_run_diff_endpoint_in_flight_prefix_is_truncated(tmp_path):
    done = host_log(tmp_path, "done.jsonl", "r1", "run.completed")
    running = host_log(tmp_path, "running.jsonl", "r2", None)
    code, result = diff(done, running)
    assert result["truncated"] is True and result["stateDiff"]["status"]["b"] is None


@requirement(SPEC, "§B run-diff-response.schema.json",
             "truncated means an in-flight run whose prefix was compared — never a shortened list of diffs")
def test_run_diff_schema_truncated_only_for_in_flight_runs(runs):
    a, b = runs
    code, full = diff(a, b)
    code, cut = diff(a, b, "--max-diffs", "1")
    assert len(full["eventDiffs"]) > 1 and len(cut["eventDiffs"]) == 1 and cut["truncated"] is False
    detailed = orjson.loads(run_wop("diff", str(a), str(b), "--json", "--detail", "--max-diffs", "1").stdout)
    assert detailed["omittedEventDiffs"] == len(full["eventDiffs"]) - 1


@requirement(SPEC, "Resolution (2026-05-26, at Active promotion)",
             "the comparison excludes exactly eventId, runId, causationId, correlationId, wall-clock ts and transport "
             "metadata (traceparent, delivery headers); payload fields such as callId, writtenAt, durationMs, "
             "captureId and run-scoped ids (memoryId, childRunId) are compared as-is")
def test_run_diff_resolution_excluded_fields(tmp_path):
    def log(name, run_id, **payload):
        return run_log(tmp_path / name, [record(run_id, 0, "node.completed", {"node": "n1", **payload},
                                                causationId=f"c-{run_id}", correlationId=f"k-{run_id}"),
                                         record(run_id, 1, "run.completed", {})])

    base = dict(eventId="x", runId="x", causationId="x", correlationId="x", ts=1, traceparent="00-a-b-01",
                tracestate="a=1", headers={"x-delivery": "1"})
    same = dict(eventId="y", runId="y", causationId="y", correlationId="y", ts=2, traceparent="00-c-d-01",
                tracestate="b=2", headers={"x-delivery": "2"})
    code, result = diff(log("a.jsonl", "ra", **base), log("b.jsonl", "rb", **same))
    assert code == 0 and result["divergedAtSeq"] is None
    for field, left, right in (("callId", "c1", "c2"), ("writtenAt", "t1", "t2"), ("durationMs", 1, 2),
                               ("captureId", "p", "q"), ("memoryId", "m1", "m2"), ("childRunId", "r1", "r2")):
        code, result = diff(log(f"{field}-a.jsonl", "ra", **{field: left}), log(f"{field}-b.jsonl", "rb", **{field: right}))
        assert code == 1 and result["divergedAtSeq"] == 0, field
    ignored = run_wop("diff", str(tmp_path / "callId-a.jsonl"), str(tmp_path / "callId-b.jsonl"), "--json",
                      "--ignore-run-metadata")
    assert ignored.returncode == 0, "--ignore-run-metadata leaves wop's bookkeeping out"


@requirement(SPEC, "Conformance",
             "run-diff-authz (access boundary): a missing `against` run is refused, an unknown run is not found")
def test_run_diff_conformance_access_boundary(runs):
    source, _ = runs
    missing = run_wop("diff", str(source))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    unknown = run_wop("diff", str(source), "no-such-run")
    assert unknown.returncode == 2 and "no capture" in unknown.stderr
