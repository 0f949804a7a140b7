"""Folding a capture's writes: declarations, legacy variables, findings, any seq, and the `wop state` command."""

import copy

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.channels.fold import StateFold, fold_events, writer_allowed
from tests.conftest import run_wop, write_capture


def write(seq, channel, value, reducer="replace", ts=None, **extra):
    return {"seq": seq, "ts": ts if ts is not None else seq, "type": "state_mutation",
            "data": {"kind": "channel", "channel": channel, "value": value, "reducer": reducer, **extra}}


def variable(seq, key, value):
    return {"seq": seq, "ts": seq, "type": "state_mutation", "data": {"kind": "variable", "key": key, "value": value}}


def test_channels_and_legacy_variables_fold_with_their_reducers():
    events = [write(0, "ticket", {"a": 1}, "merge"), write(1, "ticket", {"b": 2}, "merge"),
              variable(2, "_loopbackCount:review", 1), variable(3, "_loopbackCount:review", 2),
              variable(4, "_approvalVotes:gate", {"userId": "u1", "action": "approve"}),
              variable(5, "plain", "x"), variable(6, "plain", "y")]
    snapshot = fold_events(events).snapshot()
    assert snapshot == {"atSeq": 6, "channels": {"ticket": {"a": 1, "b": 2}},
                        "variables": {"_loopbackCount:review": 3,
                                      "_approvalVotes:gate": [{"userId": "u1", "action": "approve"}], "plain": "y"}}


def test_a_vendor_reducer_folds_as_replace_with_one_warning_per_channel():
    declare = {"seq": 2, "ts": 2, "type": "state_mutation",
               "data": {"kind": "declare", "channel": "other", "declaration": {"reducer": "append"}}}
    fold = fold_events([write(0, "c", 1, "vendor.acme.dedupe"), write(1, "c", 2, "vendor.acme.dedupe"), declare,
                        write(3, "c", 3, "vendor.acme.dedupe")])
    assert fold.snapshot()["channels"] == {"c": 3, "other": None}
    assert [f.to_json() for f in fold.findings] == [{
        "code": "unknown_reducer", "seq": 0, "channel": "c",
        "message": "channel 'c' uses reducer 'vendor.acme.dedupe', folded as replace"}]


def test_access_is_checked_per_declaration_and_denied_writes_are_findings():
    declarations = {"votes": {"reducer": "votes", "access": {"writers": ["vote-collector", "core.ai.*"]}},
                    "secret": {"reducer": "replace", "access": "private"}}
    vote = {"userId": "u", "action": "approve"}
    events = [write(0, "votes", vote, "votes", nodeId="vote-collector"),
              write(1, "votes", {**vote, "userId": "v"}, "votes", nodeId="n7", typeId="core.ai.callPrompt"),
              write(2, "votes", {**vote, "userId": "w"}, "votes", nodeId="vote-tally", typeId="vendor.acme.tally"),
              write(3, "secret", "s", nodeId="anyone")]
    fold = fold_events(events, declarations=declarations)
    assert [v["userId"] for v in fold.snapshot()["channels"]["votes"]] == ["u", "v"]
    assert [(f.code, f.seq) for f in fold.findings] == [("channel_access_denied", 2), ("channel_access_denied", 3)]
    assert writer_allowed({"writers": ["*"]}, "x", "any.type") and writer_allowed({"readers": []}, "x", None)


def test_a_star_writer_entry_admits_a_node_known_only_by_its_node_id():
    """Spec (Channel access control): `*` alone matches all nodes, so a write that carries a nodeId and no typeId is
    allowed; a dotted wildcard still needs a typeId to match."""
    declarations = {"log": {"reducer": "append", "access": {"writers": ["*"]}},
                    "ai": {"reducer": "append", "access": {"writers": ["core.ai.*"]}}}
    fold = fold_events([write(0, "log", "x", "append", nodeId="collector-1"), write(1, "ai", "y", "append",
                                                                                    nodeId="collector-1")],
                       declarations=declarations)
    assert fold.snapshot()["channels"]["log"] == ["x"]
    assert [(f.code, f.seq) for f in fold.findings] == [("channel_access_denied", 1)]
    assert writer_allowed({"writers": ["*"]}, "n1", None) and writer_allowed({"writers": ["*"]}, None, None)
    assert not writer_allowed({"writers": ["core.ai.*"]}, "core.ai.x", None), "a nodeId is never matched by wildcard"


def test_cross_engine_writes_to_replace_and_merge_are_forbidden_but_append_is_fine():
    events = [write(0, "decision", "yes", sourceEngineId="child-7", sourceRunId="r"),
              write(1, "log", "entry", "append", sourceEngineId="child-7")]
    fold = fold_events(events)
    assert fold.snapshot()["channels"] == {"log": ["entry"]}
    assert [(f.code, f.channel) for f in fold.findings] == [("channel_cross_engine_write_forbidden", "decision")]


def test_a_write_older_than_its_undeclared_channels_first_schema_is_refused():
    """A write carries its own schemaVersion: against a channel that declares none (version 1), version 0 is older and
    not listed in compatibleWith."""
    fold = fold_events([write(0, "loose", "old", schemaVersion=0), write(1, "loose", "new", schemaVersion=1)])
    assert fold.snapshot()["channels"] == {"loose": "new"}
    assert [(f.code, f.seq, f.channel) for f in fold.findings] == [("channel_schema_breaking_change", 0, "loose")]


def test_schema_versions_are_kept_and_breaking_old_writes_are_refused():
    declarations = {"fb": {"reducer": "append", "schemaVersion": 3, "compatibleWith": [2]}}
    events = [write(0, "fb", "v1 write", "append", schemaVersion=1), write(1, "fb", "v2 write", "append", schemaVersion=2),
              write(2, "fb", "v3 write", "append", schemaVersion=3)]
    fold = fold_events(events, declarations=declarations)
    assert fold.snapshot()["channels"]["fb"] == ["v2 write", "v3 write"]
    assert [(f.code, f.seq) for f in fold.findings] == [("channel_schema_breaking_change", 0)]
    assert fold.meta["fb"]["schemaVersion"] == 3


def test_ttl_uses_event_timestamps_never_the_wall_clock():
    declarations = {"recent": {"reducer": "append", "ttlMs": 100}}
    events = [write(0, "recent", "a", "append", ts=1_000), write(1, "recent", "b", "append", ts=1_050),
              write(2, "recent", "c", "append", ts=1_140)]
    assert fold_events(events, declarations=declarations).snapshot()["channels"]["recent"] == [
        {"value": "b", "_ts": 1_050}, {"value": "c", "_ts": 1_140}]


def test_declarations_come_from_the_run_itself():
    events = [{"seq": 0, "ts": 0, "type": "run_start", "data": {"channels": {"n": {"reducer": "counter", "default": 5}}}},
              {"seq": 1, "ts": 1, "type": "state_mutation", "data": {"kind": "declare", "channel": "log",
                                                                     "declaration": {"reducer": "append", "maxSize": 1}}},
              write(2, "n", 2, None), write(3, "log", "a", None), write(4, "log", "b", None)]
    assert fold_events(events).snapshot()["channels"] == {"n": 7, "log": ["b"]}


def test_the_snapshot_holds_every_declared_channel_with_or_without_a_default():
    declarations = {"quiet": {"reducer": "append"}, "seeded": {"reducer": "counter", "default": 3},
                    "written": {"reducer": "replace"}}
    fold = fold_events([write(0, "written", "x", None), write(1, "loose", 1), write(2, "bare", [1], None),
                        write(3, "bare", [2], None)], declarations=declarations)
    assert fold.snapshot()["channels"] == {"quiet": None, "seeded": 3, "written": "x", "loose": 1, "bare": [2]}
    assert fold.findings == [] and fold.meta["bare"]["reducer"] == "replace", "no reducer anywhere: replace, quietly"


WRITE_EVENTS = st.lists(st.one_of(
    st.builds(lambda c, v: ("append", c, v), st.sampled_from("xyz"), st.integers()),
    st.builds(lambda c, v: ("merge", c, {"k" + str(v % 3): v}), st.sampled_from("xyz"), st.integers()),
    st.builds(lambda c, v: ("counter", c, v), st.sampled_from("xyz"), st.integers(-3, 3)),
), max_size=30)


@settings(max_examples=150, deadline=None)
@given(WRITE_EVENTS, st.integers(0, 30))
def test_folding_to_n_then_continuing_equals_folding_everything(writes, cut):
    events = [write(seq, f"{reducer}-{channel}", value, reducer) for seq, (reducer, channel, value) in enumerate(writes)]
    partial = StateFold()
    for event in events[:cut]:
        partial.apply(event)
    at_cut = partial.snapshot()
    frozen = copy.deepcopy(at_cut)
    for event in events[cut:]:
        partial.apply(event)
    assert at_cut == frozen, "a snapshot must not change when the fold goes on"
    assert partial.snapshot() == fold_events(events).snapshot()
    if events:
        assert fold_events(events, at=min(cut, len(events)) - 1).snapshot()["channels"] == frozen["channels"]


def test_wop_state_command_folds_a_real_capture(tmp_path):
    capture = write_capture(tmp_path / "c", [
        ("run_start", {"argv": ["x"], "channels": {"log": {"reducer": "append", "maxSize": 2}}}),
        ("state_mutation", {"kind": "channel", "channel": "log", "value": 1, "reducer": "append"}),
        ("state_mutation", {"kind": "channel", "channel": "log", "value": 2, "reducer": "append"}),
        ("state_mutation", {"kind": "channel", "channel": "log", "value": 3, "reducer": "append"}),
        ("state_mutation", {"kind": "variable", "key": "_loopbackCount:n", "value": 4}),
    ])
    done = run_wop("state", str(capture), "--json")
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["channels"] == {"log": [2, 3]}
    at = orjson.loads(run_wop("state", str(capture), "--at", "2", "--json", "--channel", "log").stdout)
    assert at == {"captureId": at["captureId"], "atSeq": 2, "channels": {"log": [1, 2]}, "findings": []}
    human = run_wop("state", str(capture))
    assert "log" in human.stdout and "append, 3 writes" in human.stdout and "_loopbackCount:n" in human.stdout
    bad = run_wop("state", str(capture), "--at", "40")
    assert bad.returncode == 2 and "seq 0..4" in bad.stderr
    missing = run_wop("state", str(capture), "--channel", "nope")
    assert missing.returncode == 2 and "known: _loopbackCount:n, log" in missing.stderr
    shown = orjson.loads(run_wop("show", str(capture), "--seq", "3", "--state", "--json").stdout)
    assert shown["event"]["seq"] == 3 and shown["state"]["channels"]["log"] == [2, 3]


def test_the_pinned_workflows_channel_declarations_are_used(tmp_path):
    import sys

    workflow = tmp_path / "flow.json"
    workflow.write_text('{"name": "wf", "channels": {"log": {"reducer": "append", "maxSize": 1}}}')
    program = tmp_path / "program.py"
    program.write_text('import openwop_cli as wop\nwop.state.write("log", "a", "append")\nwop.state.write("log", "b", "append")\n')
    out = tmp_path / "c"
    assert run_wop("capture", "--workflow", str(workflow), "--out", str(out), "--", sys.executable, str(program),
                   cwd=tmp_path).returncode == 0
    assert orjson.loads(run_wop("state", str(out), "--json").stdout)["channels"] == {"log": ["b"]}


def test_writes_are_checked_against_the_channels_json_schema():
    import pytest

    pytest.importorskip("jsonschema")
    declarations = {"score": {"reducer": "replace", "schema": {"type": "integer", "minimum": 0}}}
    fold = fold_events([write(0, "score", 3), write(1, "score", -1), write(2, "score", "high")], declarations=declarations)
    assert fold.snapshot()["channels"] == {"score": 3}
    assert [(f.code, f.seq) for f in fold.findings] == [("validation_error", 1), ("validation_error", 2)]


def test_without_jsonschema_schemas_are_skipped_with_one_notice(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_jsonschema(name, *args, **kwargs):
        if name == "jsonschema":
            raise ImportError("not installed")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jsonschema)
    declarations = {"score": {"reducer": "replace", "schema": {"type": "integer"}}}
    fold = fold_events([write(0, "score", "a"), write(1, "score", "b")], declarations=declarations)
    assert fold.snapshot()["channels"] == {"score": "b"}
    assert [f.to_json() for f in fold.findings] == [{
        "code": "schema_validation_skipped", "seq": 0, "channel": None,
        "message": "channel schemas were not checked: install jsonschema (pip install jsonschema)"}]
    twin = fold.fork()
    twin.apply(write(2, "score", "c"))
    assert len(twin.findings) == 1, "a forked fold knows the notice was given"


def test_list_channels_holding_other_shapes_fold_without_a_crash(tmp_path):
    """A channel whose entries are not what its latest reducer writes (a message write trimming a number appended
    before; a `_ts` that is not a time, in an entry written before ttlMs was declared or in a declared default) folds:
    an entry without a numeric `_ts` never expires. `wop state` and `wop diff` of such captures exit 0/1, never 70."""
    def channel(name, value, reducer="append"):
        return "state_mutation", {"kind": "channel", "channel": name, "value": value, "reducer": reducer}

    message = {"messageId": "m1", "role": "user", "content": "hi"}
    capture = write_capture(tmp_path / "odd", [
        ("run_start", {"argv": ["agent.py"], "channels": {"log": {"reducer": "append", "maxSize": 1},
                                                          "seen": {"reducer": "append", "ttlMs": 5,
                                                                   "default": [{"_ts": None}]}}}),
        channel("log", 0), channel("log", message, "message"), channel("notes", {"_ts": "x", "n": 1}),
        ("state_mutation", {"kind": "declare", "channel": "notes", "declaration": {"reducer": "append", "ttlMs": 5}}),
        channel("notes", 2), channel("seen", 3), ("run_end", {"exitCode": 0, "status": "ok"})])
    done = run_wop("state", str(capture), "--json")
    assert done.returncode == 0, done.stderr
    channels = orjson.loads(done.stdout)["channels"]
    assert channels["log"] == [message]
    assert [entry.get("value") for entry in channels["notes"]] == [None, 2] and channels["notes"][0]["_ts"] == "x"
    assert [entry.get("value") for entry in channels["seen"]] == [None, 3]
    assert run_wop("diff", str(capture), str(capture)).returncode == 0


def test_declarations_of_the_wrong_shape_are_findings_never_a_crash(tmp_path):
    """access whose writers are not a list, compatibleWith that is not a list, a schema that is not a valid JSON Schema
    (a bad type, a bad regex) or whose $ref cannot be resolved: `wop state` and `wop diff` name the problem in a
    finding and go on (exit 0), they never crash (exit 70). A declaration an engine refuses is not used (its channel's
    write folds as undeclared); a write to a channel whose schema cannot be checked is refused."""
    def declare(name, declaration):
        return "state_mutation", {"kind": "declare", "channel": name, "declaration": declaration}

    def channel(name, value, **extra):
        return "state_mutation", {"kind": "channel", "channel": name, "value": value, **extra}

    capture = write_capture(tmp_path / "odd", [
        ("run_start", {"argv": ["agent.py"]}),
        declare("gate", {"access": {"writers": 5}}), channel("gate", 1, nodeId="n"),
        declare("compat", {"schemaVersion": 3, "compatibleWith": 5}), channel("compat", 1, schemaVersion=1),
        declare("typed", {"schema": {"type": 12}}), channel("typed", 1),
        declare("pattern", {"schema": {"pattern": "("}}), channel("pattern", "a"),
        declare("linked", {"schema": {"$ref": "#/$defs/missing"}}), channel("linked", 1),
        channel("plain", 1), ("run_end", {"exitCode": 0, "status": "ok"})])
    done = run_wop("state", str(capture), "--json")
    assert done.returncode == 0, done.stderr
    state = orjson.loads(done.stdout)
    assert state["channels"] == {"gate": 1, "compat": 1, "plain": 1, "typed": None, "pattern": None, "linked": None}
    problems = {finding["channel"]: finding["message"] for finding in state["findings"]}
    assert set(problems) == {"gate", "compat", "typed", "pattern", "linked"}
    assert "writers" in problems["gate"] and "compatibleWith" in problems["compat"]
    assert all("schema" in problems[name] for name in ("typed", "pattern", "linked"))
    assert run_wop("diff", str(capture), str(capture)).returncode == 0


def test_a_ttl_entry_written_as_the_spec_shapes_it_folds_by_its_own_ts():
    """Spec (Channel TTL): a write may carry the entry `{value, _ts}`; its _ts and the event's timestamp must agree,
    and where they do not the entry's _ts is used, with a finding."""
    declarations = {"recent": {"reducer": "append", "ttlMs": 100}}
    events = [write(0, "recent", {"value": "a", "_ts": 1_000}, "append", ts=1_000),
              write(1, "recent", {"value": "b", "_ts": 1_050}, "append", ts=2_000),
              write(2, "recent", "c", "append", ts=1_140)]
    fold = fold_events(events, declarations=declarations)
    assert fold.snapshot()["channels"]["recent"] == [{"value": "b", "_ts": 1_050}, {"value": "c", "_ts": 1_140}]
    assert [finding.to_json() for finding in fold.findings] == [{
        "code": "ttl_timestamp_mismatch", "seq": 1, "channel": "recent",
        "message": "the entry written to 'recent' says _ts 1050, its event 2000; the entry's _ts is used"}]


def test_an_openwop_run_logs_channel_writes_and_terminal_events_fold():
    for terminal, status in (("run.completed", "completed"), ("run.failed", "failed"), ("run.cancelled", "cancelled")):
        fold = fold_events([{"seq": 1, "ts": 1, "type": "channel.written",
                             "data": {"channel": "log", "value": "x", "reducer": "append"}},
                            {"seq": 4, "ts": 2, "type": terminal, "data": {}}])
        assert (fold.snapshot(), fold.status) == ({"atSeq": 4, "channels": {"log": ["x"]}, "variables": {}}, status)
    assert fold_events([{"seq": 0, "ts": 0, "type": "run_end", "data": {"exitCode": 0}}]).status == "ok"
    assert fold_events([{"seq": 0, "ts": 0, "type": "run_end", "data": {"status": "error"}}]).status == "error"
    assert StateFold().status is None and StateFold().snapshot() == {"atSeq": -1, "channels": {}, "variables": {}}


def test_each_write_is_counted_with_its_last_seq_and_reducer():
    fold = fold_events([write(0, "c", "a", "append"), write(3, "c", "b", "append", schemaVersion=1),
                        write(4, "other", 1, "counter")])
    assert fold.meta == {"c": {"writes": 2, "lastSeq": 3, "reducer": "append", "schemaVersion": 1},
                         "other": {"writes": 1, "lastSeq": 4, "reducer": "counter"}}


def test_a_write_its_reducer_refuses_is_a_finding_and_changes_nothing():
    fold = fold_events([write(0, "n", 1, "counter"), write(1, "n", "many", "counter"),
                        variable(2, "_loopbackCount:x", "one")])
    assert fold.snapshot()["channels"] == {"n": 1} and fold.snapshot()["variables"] == {}
    assert [finding.to_json() for finding in fold.findings] == [
        {"code": "validation_error", "seq": 1, "channel": "n",
         "message": "write to 'n' not applied: counter takes a number to add, got str"},
        {"code": "validation_error", "seq": 2, "channel": "_loopbackCount:x",
         "message": "write to variable '_loopbackCount:x' not applied: counter takes a number to add, got str"}]


def test_a_variable_written_under_a_declared_channels_name_is_refused():
    fold = fold_events([variable(0, "log", "x"), variable(1, "free", "y")], declarations={"log": {"reducer": "append"}})
    assert fold.snapshot()["variables"] == {"free": "y"}
    assert [(finding.code, finding.channel) for finding in fold.findings] == [("validation_error", "log")]
    assert fold.findings[0].message.endswith("(write not applied)")


def test_a_variables_recorded_reducer_wins_over_its_prefix():
    events = [{"seq": 0, "ts": 0, "type": "state_mutation",
               "data": {"kind": "variable", "key": "_loopbackCount:x", "value": 2, "reducer": "replace"}},
              {"seq": 1, "ts": 1, "type": "state_mutation",
               "data": {"kind": "variable", "key": "_loopbackCount:x", "value": 3, "reducer": "replace"}},
              variable(2, "_loopbackCount:y", 2), variable(3, "_loopbackCount:y", 3),
              *({"seq": seq, "ts": seq, "type": "state_mutation",
                 "data": {"kind": "variable", "key": "log", "value": value, "reducer": "append"}}
                for seq, value in ((4, "a"), (5, "b")))]
    assert fold_events(events).snapshot()["variables"] == {"_loopbackCount:x": 3, "_loopbackCount:y": 5,
                                                           "log": ["a", "b"]}


def test_a_refused_declaration_is_a_finding_and_is_not_used():
    fold = StateFold({"bad": {"reducer": "append", "ttlMs": -1}, "ok": {"reducer": "append"}})
    assert set(fold.declarations) == {"ok"}
    assert [(finding.code, finding.channel, finding.seq) for finding in fold.findings] == [
        ("validation_error", "bad", -1)]
    assert fold.findings[0].message == ("channel 'bad': ttlMs must be an integer from 1 to 31536000000 (one year), or 0 "
                                        "for none; got -1 (declaration not used)")


def test_a_counter_beyond_64_bits_folds_to_the_recorded_big_integer_form():
    """A capture writes an integer beyond 64 bits as {"$bigint": digits} (wire.jsonable); the fold keeps such a total
    in that form, channels and legacy counter variables alike."""
    big = 2**64 - 1
    fold = fold_events([write(0, "n", big, "counter"), write(1, "n", 1, "counter"), variable(2, "_loopbackCount:x", big),
                        variable(3, "_loopbackCount:x", 1)])
    assert fold.snapshot()["channels"] == {"n": {"$bigint": str(big + 1)}}
    assert fold.snapshot()["variables"] == {"_loopbackCount:x": {"$bigint": str(big + 1)}}


def test_a_sensitive_looking_channel_without_access_is_warned_about():
    fold = StateFold({"api_password": {"reducer": "replace"}, "my_secret": {"reducer": "replace", "access": "private"},
                      "notes": {"reducer": "replace"}})
    assert [finding.to_json() for finding in fold.findings] == [{
        "code": "sensitive_channel_unrestricted", "seq": -1, "channel": "api_password",
        "message": "channel 'api_password' looks sensitive but declares no access restriction"}]


def test_a_declaration_made_later_changes_how_later_writes_fold():
    events = [write(0, "n", 2, None), write(1, "n", 3, None),
              {"seq": 2, "ts": 2, "type": "state_mutation",
               "data": {"kind": "declare", "channel": "n", "declaration": {"reducer": "counter"}}},
              write(3, "n", 4, None)]
    assert fold_events(events).snapshot()["channels"]["n"] == 7
    events = [write(0, "n", 2, "vendor.x"), write(1, "n", 3, "vendor.x"), write(2, "m", 3, "vendor.x")]
    assert [finding.channel for finding in fold_events(events).findings] == ["n", "m"]


def test_channel_and_variable_names_that_are_not_strings_fold_under_their_text():
    events = [write(0, 7, "x"), variable(1, 8, "y")]
    fold = fold_events(events)
    assert fold.snapshot()["channels"] == {"7": "x"} and fold.snapshot()["variables"] == {"8": "y"}
    assert [fold.target(event) for event in events] == [("channels", "7"), ("variables", "8")]


def test_the_target_of_each_event_is_the_one_channel_or_variable_it_writes():
    fold = StateFold()
    assert fold.target(write(0, "c", 1)) == ("channels", "c")
    assert fold.target({"seq": 0, "type": "channel.written", "data": {"channel": "c", "value": 1}}) == ("channels", "c")
    assert fold.target(variable(0, "v", 1)) == ("variables", "v")
    for event in ({"seq": 0, "type": "state_mutation", "data": {"kind": "declare", "channel": "c"}},
                  {"seq": 0, "type": "run_start", "data": {}}, {"seq": 0, "type": "tool_call", "data": {"name": "c"}}):
        assert fold.target(event) is None


def test_a_write_uses_its_time_only_on_a_ttl_channel_or_as_a_ttl_entry():
    fold = StateFold({"recent": {"reducer": "append", "ttlMs": 100}, "plain": {"reducer": "append"}})
    assert fold.uses_time(write(0, "recent", "x", "append"))
    assert fold.uses_time({"seq": 0, "type": "channel.written", "data": {"channel": "recent", "value": "x"}})
    assert fold.uses_time(write(0, "plain", {"value": "x", "_ts": 4}, "append"))
    assert not fold.uses_time(write(0, "plain", "x", "append")) and not fold.uses_time(write(0, "loose", "x"))
    assert not fold.uses_time(variable(0, "recent", "x"))
    assert not fold.uses_time(variable(0, "plain", {"value": "x", "_ts": 4}))
    assert not fold.uses_time({"seq": 0, "type": "state_mutation",
                               "data": {"kind": "declare", "channel": "recent", "declaration": {"ttlMs": 5}}})
    assert StateFold({"7": {"reducer": "append", "ttlMs": 100}}).uses_time(write(0, 7, "x", "append"))
    assert not fold.uses_time({"seq": 0, "type": "run_start", "data": {"channels": {}}})
    for value in ({"value": "x", "ts": 4}, {"a": 1}, 5, None):  # not a TTL entry: two keys or not, or no object
        assert not fold.uses_time(write(0, "plain", value, "merge")), value


def test_a_channel_reads_time_while_its_declaration_in_force_has_a_ttl():
    """uses_time follows the declaration in force: one declared later, one declared again without ttlMs, one the
    spec refuses (the one before stays), each fold's own after a fork."""
    def declare(seq, declaration):
        return {"seq": seq, "ts": seq, "type": "state_mutation",
                "data": {"kind": "declare", "channel": "recent", "declaration": declaration}}

    fold, written = StateFold(), write(9, "recent", "x", "append")
    assert not fold.uses_time(written)
    fold.apply(declare(0, {"reducer": "append", "ttlMs": 100}))
    assert fold.uses_time(written)
    twin = fold.fork()
    fold.apply(declare(1, {"reducer": "append"}))
    assert not fold.uses_time(written) and twin.uses_time(written)
    fold.apply(declare(2, {"reducer": "append", "ttlMs": -1}))  # refused: the declaration without ttlMs stays
    twin.apply(declare(2, {"reducer": "append", "ttlMs": -1}))
    assert not fold.uses_time(written) and twin.uses_time(written)
    assert fold.uses_time(write(9, "recent", {"value": "x", "_ts": 4}, "append"))


def test_a_forked_fold_goes_on_apart_and_adopts_one_channel_back():
    fold = fold_events([write(0, "log", "a", "append"), write(1, "n", 1, "counter"), variable(2, "v", 1),
                        write(3, "c", 1, "vendor.x")], declarations={"log": {"reducer": "append"}})
    twin = fold.fork()
    for event in (write(4, "log", "b", "append"), write(5, "n", 5, "counter"), variable(6, "v", 2),
                  write(7, "c", 2, "vendor.x"), {"seq": 8, "ts": 8, "type": "run_end", "data": {"status": "ok"}}):
        twin.apply(event)
    assert fold.snapshot() == {"atSeq": 3, "channels": {"log": ["a"], "n": 1, "c": 1}, "variables": {"v": 1}}
    assert twin.snapshot() == {"atSeq": 8, "channels": {"log": ["a", "b"], "n": 6, "c": 2}, "variables": {"v": 2}}
    assert (fold.status, twin.status) == (None, "ok") and len(twin.findings) == len(fold.findings) == 1
    twin.apply(write(9, "d", 1, "vendor.x"))
    twin.apply(write(10, "c", 3, "vendor.x"))
    assert [finding.channel for finding in twin.findings] == ["c", "d"] and len(fold.findings) == 1
    assert fold.meta["log"]["writes"] == 1 and twin.meta["log"]["writes"] == 2
    assert twin.declarations == fold.declarations
    fold.adopt(twin, ("channels", "log"))
    fold.adopt(twin, ("variables", "v"))
    assert fold.snapshot()["channels"] == {"log": ["a", "b"], "n": 1, "c": 1} and fold.snapshot()["variables"] == {
        "v": 2}
    assert fold.meta["log"] == twin.meta["log"] and fold.meta["log"] is not twin.meta["log"]
    fold.adopt(StateFold(), ("channels", "n"))
    assert "n" not in fold.snapshot()["channels"] and fold.meta["n"]["writes"] == 1


def test_a_schema_that_is_not_valid_or_cannot_resolve_is_named_in_the_finding():
    import pytest

    pytest.importorskip("jsonschema")
    declarations = {"typed": {"reducer": "replace", "schema": {"type": 12}},
                    "linked": {"reducer": "replace", "schema": {"$ref": "#/$defs/missing"}},
                    "fine": {"reducer": "replace", "schema": {"type": "string"}}}
    fold = fold_events([write(0, "typed", 1), write(1, "linked", 1), write(2, "typed", 2), write(3, "fine", "x"),
                        write(4, "fine", 3)], declarations=declarations)
    assert fold.snapshot()["channels"] == {"typed": None, "linked": None, "fine": "x"}
    messages = [finding.message for finding in fold.findings]
    assert messages[0].startswith("write to 'typed' fails its schema: its schema is not a valid JSON Schema (")
    assert messages[1].startswith("write to 'linked' fails its schema: its schema has a $ref that cannot be resolved")
    assert messages[2] == messages[0]
    assert messages[3] == "write to 'fine' fails its schema: 3 is not of type 'string' (write not applied)"


def test_folding_up_to_a_seq_stops_after_it():
    events = [write(0, "c", "a"), write(2, "c", "b"), write(5, "c", "c")]
    assert [fold_events(events, at=at).snapshot()["channels"] for at in (-1, 0, 1, 2, 4, 5)] == [
        {}, {"c": "a"}, {"c": "a"}, {"c": "b"}, {"c": "b"}, {"c": "c"}]


def test_an_openwop_channel_written_event_is_pruned_by_its_own_time():
    declarations = {"recent": {"reducer": "append", "ttlMs": 100}}
    events = [{"seq": seq, "ts": ts, "type": "channel.written", "data": {"channel": "recent", "value": value}}
              for seq, (ts, value) in enumerate([(1_000, "a"), (1_050, "b"), (1_140, "c")])]
    assert fold_events(events, declarations=declarations).snapshot()["channels"]["recent"] == [
        {"value": "b", "_ts": 1_050}, {"value": "c", "_ts": 1_140}]
