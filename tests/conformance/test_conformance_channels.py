"""openwop-channels.md, requirement by requirement: declarations, naming, access, schema migration, cross-engine
writes, append ordering, reducers, the channel.written shape, legacy prefixes, channel-aware mode, snapshots, TTL.

The SDK (`wop.state`) and the fold (`wop state`) must agree: what one refuses the other refuses."""

import json

import pytest

import openwop_cli as wop
from tests.conformance.runs import capture, events, replay, run_log, state
from tests.conformance.spec import requirement

SPEC = "openwop-channels.md"

SIX_THREADS = """
    import json, sys, threading
    import openwop_cli as wop

    wop.state.declare("log", "append")

    def worker(n):
        for i in range(300):
            wop.state.write("log", f"{n}-{i}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    [thread.start() for thread in threads]
    [thread.join() for thread in threads]
    with open(sys.argv[1] if len(sys.argv) > 1 else "seen.json", "w") as seen:
        json.dump(wop.state.get("log"), seen)
"""


def written(capture_dir, kind="channel"):
    return [e for e in events(capture_dir) if e["type"] == "state_mutation" and e["data"].get("kind") == kind]


def in_process(tmp_path, body, name="run"):
    """Run body() under a library capture (the real runtime in this process); the capture's directory."""
    with wop.capture(name=name, out=tmp_path / name):
        body()
    return tmp_path / name


@requirement(SPEC, "Append ordering",
             "re-folding the channel from the event log produces the identical array contents and ordering as the "
             "original execution: six threads appending 300 items each")
def test_channels_append_ordering_refold(tmp_path):
    source = capture(tmp_path, SIX_THREADS)
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert len(seen) == 1800 and state(source)["channels"]["log"] == seen
    assert [e["data"]["value"] for e in written(source)] == seen, "seq order is the order the SDK reduced"


@requirement(SPEC, "Append ordering",
             "replay determinism: a strict replay of the unchanged concurrent program passes, run after run")
def test_channels_append_ordering_strict_replay_five_times(tmp_path):
    source = capture(tmp_path, SIX_THREADS)
    for attempt in range(5):
        done, report = replay(tmp_path, source, "--strict", out=f"replay-{attempt}")
        assert done.returncode == 0, (attempt, report and report["divergences"][:2])
        assert report["score"]["score"] == 1.0
        seen = json.loads((tmp_path / "seen.json").read_text())
        assert state(tmp_path / f"replay-{attempt}")["channels"]["log"] == seen


@requirement(SPEC, "Append ordering",
             "replay still catches a real change among concurrent writes: exactly the changed write diverges")
def test_channels_append_ordering_replay_catches_a_changed_write(tmp_path):
    source = capture(tmp_path, SIX_THREADS)
    (tmp_path / "agent.py").write_text((tmp_path / "agent.py").read_text().replace(
        'f"{n}-{i}")', 'f"{n}-{i}" + ("!" if (n, i) == (2, 17) else ""))'))
    done, report = replay(tmp_path, source, "--lenient")
    assert done.returncode == 1
    assert [(d["jsonPath"], d["expectedValue"], d["observedValue"]) for d in report["divergences"]] == [
        ("$.value", "2-17", "2-17!")]


@requirement(SPEC, "Canonical reducers",
             "replace, append, merge, counter, votes (revote replaces), feedback and message (idempotent on messageId) "
             "fold the same in the SDK and from the log")
def test_channels_canonical_reducers(tmp_path):
    returned = {}

    def body():
        returned["replace"] = [wop.state.write("r", v) for v in (1, 2)][-1]
        returned["append"] = [wop.state.write("a", v, "append") for v in ("x", "y")][-1]
        returned["merge"] = [wop.state.write("m", v, "merge") for v in ({"a": 1, "b": 1}, {"b": 2})][-1]
        returned["counter"] = [wop.state.write("c", v, "counter") for v in (5, -2)][-1]
        votes = [{"userId": "u1", "action": "approve", "timestamp": "t1"},
                 {"userId": "u2", "action": "reject", "timestamp": "t2"},
                 {"userId": "u1", "action": "reject", "timestamp": "t3"}]
        returned["votes"] = [wop.state.write("v", vote, "votes") for vote in votes][-1]
        returned["feedback"] = wop.state.write("f", {"feedback": "shorter", "timestamp": "t", "iteration": 1},
                                               "feedback")
        message = {"messageId": "m1", "role": "user", "content": "hi", "timestamp": "t"}
        wop.state.write("msgs", message, "message")
        returned["message"] = wop.state.write("msgs", message, "message")

    folded = state(in_process(tmp_path, body))["channels"]
    assert returned["replace"] == folded["r"] == 2 and returned["append"] == folded["a"] == ["x", "y"]
    assert returned["merge"] == folded["m"] == {"a": 1, "b": 2} and returned["counter"] == folded["c"] == 3
    assert [v["userId"] + v["action"] for v in folded["v"]] == ["u2reject", "u1reject"] == \
        [v["userId"] + v["action"] for v in returned["votes"]]
    assert returned["feedback"] == folded["f"] and len(folded["msgs"]) == len(returned["message"]) == 1


@requirement(SPEC, "Custom reducers",
             "an unknown (vendor.*) reducer is treated as replace and the operator is warned — by the SDK and the fold")
def test_channels_custom_reducers(tmp_path, capsys):
    def body():
        assert wop.state.write("d", [1], "vendor.acme.dedupe") == [1]
        assert wop.state.write("d", [2], "vendor.acme.dedupe") == [2]

    source = in_process(tmp_path, body)
    assert capsys.readouterr().err.count("vendor.acme.dedupe") == 1
    folded = state(source)
    assert folded["channels"]["d"] == [2] and [f["code"] for f in folded["findings"]] == ["unknown_reducer"]


@requirement(SPEC, "Channel declaration",
             "declared default is the value before any write; maxSize drops the oldest entries of list reducers and "
             "rejects oversized values of the others with validation_error")
def test_channels_channel_declaration_default_and_max_size(tmp_path):
    def body():
        wop.state.declare("recent", "append", max_size=2, default=[])
        wop.state.declare("tags", "merge", max_size=2, default={"a": 1})
        assert wop.state.get("recent") == [] and wop.state.get("tags") == {"a": 1}
        for item in ("x", "y", "z"):
            wop.state.write("recent", item)
        wop.state.write("tags", {"b": 2})
        with pytest.raises(ValueError):
            wop.state.write("tags", {"c": 3})

    folded = state(in_process(tmp_path, body))
    assert folded["channels"] == {"recent": ["y", "z"], "tags": {"a": 1, "b": 2}}
    assert folded["findings"] == []


@requirement(SPEC, "Channel declaration",
             "writes are validated against the channel's JSON Schema; the SDK refuses what the fold refuses")
def test_channels_channel_declaration_schema_validation(tmp_path):
    def body():
        wop.state.declare("score", "replace", schema={"type": "integer", "minimum": 0})
        wop.state.write("score", 3)
        with pytest.raises(wop.ChannelError) as refused:
            wop.state.write("score", -1)
        assert refused.value.code == "validation_error"
        assert wop.state.get("score") == 3

    source = in_process(tmp_path, body)
    assert state(source)["channels"]["score"] == 3
    hand_written = run_log(tmp_path / "log.jsonl", [
        {"sequence": 0, "type": "channel.written", "payload": {"channel": "score", "value": "high", "reducer": "replace"}}])
    declarations = tmp_path / "declarations.json"
    declarations.write_text(json.dumps({"score": {"reducer": "replace", "schema": {"type": "integer"}}}))
    assert [f["code"] for f in state(hand_written, "--declarations", str(declarations))["findings"]] == [
        "validation_error"]


@requirement(SPEC, "Channel naming", "servers MUST accept any string as a channel name")
def test_channels_channel_naming_any_string(tmp_path):
    names = ["approvalVotes:approval-1", "with space", "ünïcode ✓", "", "a.b[0]"]

    def body():
        for name in names:
            wop.state.write(name, name)

    folded = state(in_process(tmp_path, body))["channels"]
    assert folded == {name: name for name in names}


@requirement(SPEC, "Channel access control",
             "public/absent allows, private denies, {writers} allowlists match nodeId exactly or typeId by dotted "
             "wildcard; a denied write is channel_access_denied — in the SDK and in the fold")
def test_channels_channel_access_control(tmp_path):
    def body():
        wop.state.declare("votes", "votes", access={"writers": ["vote-collector", "core.ai.*"]})
        wop.state.declare("secret", "replace", access="private")
        wop.state.write("votes", {"userId": "u", "action": "approve"}, node_id="vote-collector")
        wop.state.write("votes", {"userId": "v", "action": "approve"}, node_id="n7", type_id="core.ai.callPrompt")
        for channel, value in (("votes", {"userId": "w", "action": "reject"}), ("secret", "s")):
            with pytest.raises(wop.ChannelError) as refused:
                wop.state.write(channel, value, node_id="vote-tally", type_id="vendor.acme.tally")
            assert refused.value.code == "channel_access_denied"

    folded = state(in_process(tmp_path, body))
    assert [vote["userId"] for vote in folded["channels"]["votes"]] == ["u", "v"] and folded["channels"]["secret"] is None
    host = run_log(tmp_path / "host.jsonl", [
        {"sequence": 0, "type": "channel.written", "payload": {"channel": "secret", "value": 1, "reducer": "replace"}}])
    declarations = tmp_path / "declarations.json"
    declarations.write_text(json.dumps({"secret": {"reducer": "replace", "access": "private"}}))
    assert [f["code"] for f in state(host, "--declarations", str(declarations))["findings"]] == ["channel_access_denied"]


@requirement(SPEC, "Channel access control",
             "tooling SHOULD warn when a sensitive-looking channel has no access restriction (never enforced)")
def test_channels_channel_access_control_sensitive_names_warn(tmp_path):
    def body():
        wop.state.declare("userPassword", "replace")
        wop.state.write("userPassword", "hunter2-hash")

    folded = state(in_process(tmp_path, body))
    assert folded["channels"]["userPassword"] == "hunter2-hash"
    assert [f["code"] for f in folded["findings"]] == ["sensitive_channel_unrestricted"]


@requirement(SPEC, "Channel schema migration",
             "fold table: current version validates; an older version in compatibleWith that passes the current "
             "schema folds, one that fails it or is not listed is channel_schema_breaking_change; a newer one folds")
def test_channels_channel_schema_migration_fold_table(tmp_path):
    schema = {"type": "object", "required": ["text", "author"]}
    declarations = tmp_path / "declarations.json"
    declarations.write_text(json.dumps({"fb": {"reducer": "append", "schema": schema, "schemaVersion": 3,
                                               "compatibleWith": [2]}}))

    def write(sequence, value, version):
        return {"sequence": sequence, "type": "channel.written",
                "payload": {"channel": "fb", "value": value, "reducer": "append", "schemaVersion": version}}

    host = run_log(tmp_path / "host.jsonl", [
        write(0, {"text": "v1"}, 1),                         # not in compatibleWith
        write(1, {"text": "v2 ok", "author": "a"}, 2),       # compatible and valid under v3
        write(2, {"text": "v2 old shape"}, 2),               # compatible but fails v3: breaking, not validation_error
        write(3, {"text": "v3", "author": "a"}, 3),          # current
        write(4, {"anything": True}, 4),                     # newer: folded permissively
    ])
    folded = state(host, "--declarations", str(declarations))
    assert [entry.get("text", "v4") for entry in folded["channels"]["fb"]] == ["v2 ok", "v3", "v4"]
    assert [(f["code"], f["seq"]) for f in folded["findings"]] == [("channel_schema_breaking_change", 0),
                                                                     ("channel_schema_breaking_change", 2)]


@requirement(SPEC, "Channel schema migration",
             "each channel.written records the schemaVersion live at write time; the SDK refuses a breaking old write")
def test_channels_channel_schema_migration_records_and_refuses(tmp_path):
    def body():
        wop.state.declare("fb", "append", schema={"type": "string"}, schema_version=3, compatible_with=[2])
        wop.state.write("fb", "current")
        wop.state.write("fb", "older but fine", schema_version=2)
        for version, value in ((1, "not listed"), (2, 42)):
            with pytest.raises(wop.ChannelError) as refused:
                wop.state.write("fb", value, schema_version=version)
            assert refused.value.code == "channel_schema_breaking_change"

    source = in_process(tmp_path, body)
    assert [e["data"]["schemaVersion"] for e in written(source)] == [3, 2]
    assert state(source)["channels"]["fb"] == ["current", "older but fine"]


@requirement(SPEC, "Distributed reducers and cross-engine writes",
             "cross-engine writes (sourceEngineId) to replace/merge are channel_cross_engine_write_forbidden; "
             "append, votes, feedback and counter accept them")
def test_channels_cross_engine_writes(tmp_path):
    def write(sequence, channel, reducer, value):
        return {"sequence": sequence, "type": "channel.written",
                "payload": {"channel": channel, "value": value, "reducer": reducer, "sourceEngineId": "child-7",
                            "sourceRunId": "run_xyz"}}

    host = run_log(tmp_path / "host.jsonl", [write(0, "decision", "replace", "yes"), write(1, "cfg", "merge", {"a": 1}),
                                             write(2, "log", "append", "entry"), write(3, "n", "counter", 2)])
    folded = state(host)
    assert folded["channels"] == {"log": ["entry"], "n": 2}
    assert [f["code"] for f in folded["findings"]] == ["channel_cross_engine_write_forbidden"] * 2


@requirement(SPEC, "Wire surface",
             "a channel write is recorded as channel.written {channel, value (the write input, not the reduced value), "
             "reducer, nodeId?, writtenAt}")
def test_channels_wire_surface_channel_written_payload(tmp_path):
    def body():
        wop.state.write("n", 2, "counter", node_id="counter-node")
        wop.state.write("n", 3, "counter")

    payloads = [e["data"] for e in written(in_process(tmp_path, body))]
    assert [(p["channel"], p["value"], p["reducer"]) for p in payloads] == [("n", 2, "counter"), ("n", 3, "counter")]
    assert payloads[0]["nodeId"] == "counter-node" and "nodeId" not in payloads[1]
    assert all(p["writtenAt"].endswith("+00:00") for p in payloads)


@requirement(SPEC, "Wire surface", "ctx.channels.get returns the current reduced value; write goes through the reducer")
def test_channels_wire_surface_channel_read(tmp_path):
    def body():
        wop.state.declare("n", "counter", default=10)
        assert wop.state.get("n") == 10
        assert wop.state.write("n", 5) == 15 and wop.state.get("n") == 15

    assert state(in_process(tmp_path, body))["channels"]["n"] == 15


@requirement(SPEC, "Migration from variable-prefix conventions",
             "legacy mode: writes to the legacy map emit channel.written with the prefix-derived channel name and the "
             "inferred reducer")
def test_channels_migration_legacy_mode(tmp_path):
    def body():
        wop.state.set("_approvalVotes:gate", {"userId": "u1", "action": "approve"})
        wop.state.set("_loopbackCount:review", 1)
        assert wop.state.set("_loopbackCount:review", 2) == 3
        wop.state.set("plain", "x")

    source = in_process(tmp_path, body)
    payloads = [e["data"] for e in written(source, "variable")]
    assert [(p["channel"], p["reducer"], p.get("nodeId")) for p in payloads] == [
        ("_approvalVotes:gate", "votes", "gate"), ("_loopbackCount:review", "counter", "review"),
        ("_loopbackCount:review", "counter", "review"), ("plain", "replace", None)]
    assert all("writtenAt" in p for p in payloads)
    assert state(source)["variables"]["_loopbackCount:review"] == 3


@requirement(SPEC, "Migration from variable-prefix conventions",
             "channel-aware mode: a write to run.variables[k] where k is a declared channel is refused with "
             "validation_error; undeclared keys are still accepted")
def test_channels_migration_channel_aware_mode(tmp_path):
    def body():
        wop.state.declare("approvalVotes:gate", "votes")
        with pytest.raises(wop.ChannelError) as refused:
            wop.state.set("approvalVotes:gate", {"userId": "u1", "action": "approve"})
        assert refused.value.code == "validation_error"
        wop.state.set("undeclared", 1)

    folded = state(in_process(tmp_path, body))
    assert folded["variables"] == {"undeclared": 1} and folded["findings"] == []
    host = run_log(tmp_path / "host.jsonl", [
        {"sequence": 0, "type": "state_mutation", "payload": {"kind": "variable", "key": "votes", "value": 1}}])
    declarations = tmp_path / "declarations.json"
    declarations.write_text(json.dumps({"votes": {"reducer": "votes"}}))
    assert [f["code"] for f in state(host, "--declarations", str(declarations))["findings"]] == ["validation_error"]


@requirement(SPEC, "Replay determinism",
             "reconstruction uses the reducer-at-write-time stored on each channel.written event, even when the "
             "declared reducer has changed since")
def test_channels_replay_determinism_reducer_at_write_time(tmp_path):
    def body():
        wop.state.write("log", "a", "append")
        wop.state.write("log", "b", "append")

    source = in_process(tmp_path, body)
    declarations = tmp_path / "declarations.json"
    declarations.write_text(json.dumps({"log": {"reducer": "replace"}}))
    assert state(source, "--declarations", str(declarations))["channels"]["log"] == ["a", "b"]


@requirement(SPEC, "Channel snapshot in values stream mode",
             "the snapshot carries the post-reduction value of every declared channel, and the legacy variables")
def test_channels_snapshot_every_declared_channel(tmp_path):
    def body():
        wop.state.declare("untouched", "append", default=[])
        wop.state.declare("undefaulted", "votes")
        wop.state.declare("count", "counter")
        wop.state.write("count", 2)
        wop.state.set("_loopbackIteration:n", 4)

    source = in_process(tmp_path, body)
    folded = state(source)
    assert folded["channels"] == {"untouched": [], "undefaulted": None, "count": 2}, \
        "a declared channel nobody wrote and with no default is in the snapshot, as null (ctx.channels.get: undefined)"
    assert folded["variables"] == {"_loopbackIteration:n": 4} and set(folded) >= {"atSeq", "channels", "variables"}
    declared = next(e["seq"] for e in events(source) if e["data"].get("channel") == "undefaulted")
    assert state(source, "--at", str(declared))["channels"] == {"untouched": [], "undefaulted": None}


@requirement(SPEC, "Channel TTL",
             "entries of a TTL channel have the shape {value, _ts} in the state and in channel.written payloads; _ts "
             "agrees with the event's timestamp")
def test_channels_channel_ttl_entry_shape(tmp_path):
    def body():
        wop.state.declare("recent", "append", ttl_ms=86_400_000)
        returned = wop.state.write("recent", "a")
        assert returned == [{"value": "a", "_ts": returned[0]["_ts"]}]

    source = in_process(tmp_path, body)
    event = written(source)[0]
    assert event["data"]["value"] == {"value": "a", "_ts": event["ts"]}
    assert state(source)["channels"]["recent"] == [{"value": "a", "_ts": event["ts"]}]


@requirement(SPEC, "Channel TTL",
             "pruning happens at write time against the event's own time (never the replay's clock); ttlMs applies "
             "before maxSize")
def test_channels_channel_ttl_pruning(tmp_path):
    def written_at(sequence, ts, value):
        return {"sequence": sequence, "type": "channel.written", "timestamp": ts,
                "payload": {"channel": "recent", "value": {"value": value, "_ts": ts}, "reducer": "append"}}

    declarations = tmp_path / "declarations.json"
    declarations.write_text(json.dumps({"recent": {"reducer": "append", "ttlMs": 100, "maxSize": 2}}))
    host = run_log(tmp_path / "host.jsonl", [written_at(0, 1_000, "a"), written_at(1, 1_050, "b"),
                                              written_at(2, 1_140, "c"), written_at(3, 1_141, "d")])
    folded = state(host, "--declarations", str(declarations))
    assert [entry["value"] for entry in folded["channels"]["recent"]] == ["c", "d"] and folded["findings"] == []
    script = """
        import os, time
        import openwop_cli as wop
        wop.state.declare("recent", "append", ttl_ms=150)
        wop.state.write("recent", "old")
        time.sleep(float(os.environ.get("PAUSE", "0")))
        print([entry["value"] for entry in wop.state.write("recent", "new")])
    """
    source = capture(tmp_path, script, out="ttl", env={"PAUSE": "0.3"})
    done, report = replay(tmp_path, source, env={"PAUSE": "0"})
    assert done.returncode == 0 and done.stderr.strip() == "['new']", \
        "the replay (which does not pause) prunes by the recorded times, never by its own clock"


@requirement(SPEC, "Channel TTL",
             "every prior entry whose _ts < now - ttlMs is removed (not only the oldest), a declared default "
             "included; then maxSize bounds the remainder — with timestamps out of order and with a default")
def test_channels_channel_ttl_with_max_size_and_timestamps_out_of_order(tmp_path):
    def written_at(sequence, ts, value, channel="recent"):
        return {"sequence": sequence, "type": "channel.written", "timestamp": ts,
                "payload": {"channel": channel, "value": {"value": value, "_ts": ts}, "reducer": "append"}}

    declarations = tmp_path / "declarations.json"
    declarations.write_text(json.dumps({"recent": {"reducer": "append", "ttlMs": 50, "maxSize": 2},
                                        "seeded": {"reducer": "append", "ttlMs": 100, "default": ["seed"]}}))
    host = run_log(tmp_path / "host.jsonl", [
        written_at(0, 100, "late"), written_at(1, 0, "early"), written_at(2, 120, "new"),  # a clock stepped back
        written_at(3, 0, "a", "seeded"), written_at(4, 50, "b", "seeded"), written_at(5, 500, "c", "seeded")])
    folded = state(host, "--declarations", str(declarations))
    assert [entry["value"] for entry in folded["channels"]["recent"]] == ["late", "new"], \
        "ttlMs first drops the expired 'early' (0 < 120-50); maxSize first would have dropped the fresh 'late'"
    assert folded["channels"]["seeded"] == ["seed", {"value": "c", "_ts": 500}], "a default does not stop pruning"
    assert folded["findings"] == []


@requirement(SPEC, "Channel TTL", "range 1 ≤ ttlMs ≤ one year, 0 means no TTL; a declaration out of range is refused")
def test_channels_channel_ttl_range(tmp_path):
    def body():
        wop.state.declare("ok", "append", ttl_ms=365 * 24 * 60 * 60 * 1000)
        wop.state.declare("none", "append", ttl_ms=0)
        for bad in (-1, 365 * 24 * 60 * 60 * 1000 + 1):
            with pytest.raises(wop.ChannelError) as refused:
                wop.state.declare("bad", "append", ttl_ms=bad)
            assert refused.value.code == "validation_error"
        assert wop.state.write("none", "x") == ["x"]

    in_process(tmp_path, body)
    declarations = tmp_path / "declarations.json"
    declarations.write_text(json.dumps({"bad": {"reducer": "append", "ttlMs": 10**12}}))
    host = run_log(tmp_path / "host.jsonl", [{"sequence": 0, "type": "channel.written",
                                              "payload": {"channel": "bad", "value": 1, "reducer": "append"}}])
    assert [f["code"] for f in state(host, "--declarations", str(declarations))["findings"]] == ["validation_error"]
