"""openwop-replay-and-fork.md, requirement by requirement: the two modes, determinism guarantees, failure surfaces,
the LLM cache-key recipe, refusal divergence, observable-state determinism, the timeline view and scoring."""

import hashlib
import sys
from pathlib import Path

import orjson
import pytest
import rfc8785

from openwop_cli.channels.fold import fold_events
from tests.conformance.runs import AGENT, assert_not_on_disk, capture, events, manifest, replay
from tests.conformance.spec import requirement
from tests.conftest import ROOT, adopt_signing_key, keep_signing_key, run_wop
from tests.fake_provider import FakeProvider

SPEC = "openwop-replay-and-fork.md"

STEPS = """
    import os
    import openwop_cli as wop

    @wop.tool
    def step(name):
        with open("ran.txt", "a") as ran:
            ran.write(name + "\\n")
        return name.upper()

    first = step("one")
    pick = wop.randint(0, 10**6, key="pick")
    branch = wop.version("new-pricing", 1, int(os.environ.get("MAX_VERSION", "2")))
    second = step(os.environ.get("SECOND", "two"))
    wop.state.write("log", [first, second, pick, branch], "replace")
    print(first, second, pick, branch, wop.now().isoformat())
"""


@pytest.fixture(scope="module")
def recorded_steps(tmp_path_factory, isolation) -> tuple[Path, Path]:
    """STEPS captured once as it is, for the module's tests that replay, fork or show it into their own tmp_path
    (never changing its program or its capture), and the recorder's signing key."""
    directory = tmp_path_factory.mktemp("steps")
    with isolation():
        return capture(directory, STEPS), keep_signing_key(directory / "key")


@pytest.fixture
def steps(recorded_steps) -> Path:
    """recorded_steps' capture, recorded by this test's user."""
    source, key = recorded_steps
    adopt_signing_key(key)
    return source


def seq_of(capture_dir, event_type, **data):
    return next(e["seq"] for e in events(capture_dir)
                if e["type"] == event_type and all(e["data"].get(k) == v for k, v in data.items()))


@requirement(SPEC, "Two modes",
             "replay: events < fromSeq are fixed history; events >= fromSeq are re-executed and checked, a divergence "
             "pinpoints the regression")
def test_replay_fork_two_modes_replay_from_seq(tmp_path, steps):
    source = steps
    second = seq_of(source, "tool_call", name="step", args={"name": "two"})
    done, report = replay(tmp_path, source, "--from-seq", str(second + 1), env={"SECOND": "changed"}, out="later")
    assert done.returncode == 0 and report["fromSeq"] == second + 1, "a change before fromSeq is fixed history"
    done, report = replay(tmp_path, source, "--from-seq", str(second), env={"SECOND": "changed"}, out="at")
    assert done.returncode == 1 and report["divergences"][0]["eventSeq"] == second


@requirement(SPEC, "Two modes",
             "branch: the projected state at fromSeq starts a new, independent run (new runId) with caller overrides; "
             "the original run is unmodified")
def test_replay_fork_two_modes_branch(tmp_path):
    source = capture(tmp_path, STEPS)
    (tmp_path / "ran.txt").unlink()
    before = {path: path.read_bytes() for path in source.rglob("*") if path.is_file()}
    pick = seq_of(source, "nondeterministic", key="pick")
    done = run_wop("fork", str(source), "--from-seq", str(pick), "--set", "pick=7", "--json", "--out",
                   str(tmp_path / "fork"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    forked = manifest(tmp_path / "fork")
    assert forked["runId"] != manifest(source)["runId"] and forked["source"]["mode"] == "branch"
    assert " 7 " in done.stderr and report["mode"] == "branch", "the Response's mode: branch, never fork"
    assert (report["runId"], report["sourceRunId"], report["fromSeq"]) == (forked["runId"], manifest(source)["runId"],
                                                                           pick), "the Response's fields, at its top"
    assert (tmp_path / "ran.txt").read_text().splitlines() == ["two"], "history was served, the step after it ran"
    assert {path: path.read_bytes() for path in source.rglob("*") if path.is_file()} == before


@requirement(SPEC, "Replay-mode defaults",
             "replay: fromSeq is optional and defaults to 0; branch: fromSeq MUST be supplied")
def test_replay_fork_replay_mode_defaults(tmp_path, steps):
    source = steps
    done, report = replay(tmp_path, source)
    assert done.returncode == 0 and report["fromSeq"] == 0 and report["score"]["fromSeq"] == 0
    assert (report["mode"], report["runId"], report["sourceRunId"]) == (
        "replay", manifest(tmp_path / "replay")["runId"], manifest(source)["runId"])
    fork = run_wop("fork", str(source), cwd=tmp_path)
    assert fork.returncode == 2 and "--from-seq" in fork.stderr


@requirement(SPEC, "Response", "invalid fromSeq (out of range) is refused (the 400/422 of the endpoint)")
def test_replay_fork_response_invalid_from_seq_is_refused(tmp_path, steps):
    source = steps
    count = manifest(source)["eventCount"]
    for command in (("replay", str(source), "--from-seq", str(count)), ("fork", str(source), "--from-seq", "-1")):
        done = run_wop(*command, cwd=tmp_path)
        assert done.returncode == 2 and "--from-seq" in done.stderr and "Traceback" not in done.stderr


@requirement(SPEC, "Determinism guarantees",
             "side-effecting nodes consult the durable log: on replay the cached response is returned and the "
             "external system is NOT called twice")
def test_replay_fork_determinism_guarantees_side_effects_served_from_the_log(tmp_path):
    with FakeProvider() as provider:
        source = capture(tmp_path, AGENT, env={"PROVIDER_URL": provider.url})
        (tmp_path / "tool-ran.txt").unlink()
        served = len(provider.requests)
        done, _ = replay(tmp_path, source, env={"PROVIDER_URL": provider.url})
        assert len(provider.requests) == served
    assert done.returncode == 0 and not (tmp_path / "tool-ran.txt").exists()


@requirement(SPEC, "Determinism guarantees",
             "getVersion(changeId, min, max): the pinned value of the original run is preserved")
def test_replay_fork_determinism_guarantees_get_version_pinned(tmp_path):
    source = capture(tmp_path, STEPS, env={"MAX_VERSION": "2"})
    done, report = replay(tmp_path, source, env={"MAX_VERSION": "3"})
    assert done.returncode == 0 and done.stderr.split()[3] == "2", "the replay takes the recorded branch"


@requirement(SPEC, "Determinism guarantees",
             "getVersion: a recorded version outside today's min..max is a divergence, never a silent recorded value")
def test_replay_fork_determinism_guarantees_get_version_out_of_range(tmp_path):
    source = capture(tmp_path, STEPS, env={"MAX_VERSION": "2"})
    script = STEPS.replace('wop.version("new-pricing", 1,', 'wop.version("new-pricing", 3,').replace(
        'int(os.environ.get("MAX_VERSION", "2"))', "4")
    (tmp_path / "agent.py").write_text(script.replace("\n    ", "\n"))
    done, report = replay(tmp_path, source, "--lenient")
    divergence = report["divergences"][0]
    assert done.returncode == 1 and divergence["code"] == "event_payload_mismatch"
    assert divergence["jsonPath"] == "$.value" and divergence["expectedValue"] == 2
    assert divergence["observedValue"] == {"min": 3, "max": 4} and done.stderr.split()[3] == "3"
    strict, _ = replay(tmp_path, source, out="strict")
    assert strict.returncode == 1 and "ReplayDivergenceError" in strict.stderr


@requirement(SPEC, "Determinism guarantees", "time is consumed through the engine's logical clock (ctx.now()): "
                                             "a replay gets the recorded time")
def test_replay_fork_determinism_guarantees_clock(tmp_path, steps):
    source = steps
    recorded = next(e["data"]["value"] for e in events(source) if e["data"].get("source") == "clock")
    done, _ = replay(tmp_path, source)
    assert done.stderr.split()[-1] == recorded


@requirement(SPEC, "Failure surfaces",
             "a diverging replay continues and emits replay.diverged {originalEventId, replayEventId, divergencePoint}")
def test_replay_fork_failure_surfaces_replay_diverged_event(tmp_path, steps):
    source = steps
    done, report = replay(tmp_path, source, "--lenient", env={"SECOND": "changed"})
    assert done.returncode == 1 and report["replay"]["exitCode"] == 0, "the replay continued to completion"
    diverged = [e["data"] for e in events(tmp_path / "replay") if e["type"] == "replay_diverged"]
    run_id = manifest(source)["runId"]
    assert diverged and diverged[0]["originalEventId"] == f"{run_id}:{diverged[0]['divergencePoint']}"
    assert diverged[0]["replayEventId"].startswith(manifest(tmp_path / "replay")["runId"] + ":")


RECIPE_REQUEST = {
    "model": "gpt-4o", "temperature": 0.2, "max_tokens": 99, "stream": False, "user": "u-7", "seed": 3,
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "function": {"name": "zeta", "parameters": {"type": "object", "properties": {
        "b": {"type": "string"}, "a": {"type": "integer"}}}}},
              {"type": "function", "function": {"name": "alpha", "description": "A", "parameters": {"type": "object"}}}],
}


def independent_key(request: dict) -> str:
    """The recipe computed here, from the spec's words: closed field set, tools sorted by name, JCS, SHA-256."""
    tools = sorted(({"name": t["function"]["name"], **({"description": t["function"]["description"]}
                                                        if "description" in t["function"] else {}),
                     "parameters": t["function"]["parameters"]} for t in request["tools"]), key=lambda t: t["name"])
    canonical = {"provider": "openai", "model": request["model"], "messages": request["messages"], "tools": tools,
                 "temperature": request["temperature"]}
    return hashlib.sha256(rfc8785.dumps(canonical)).hexdigest()


def recorded_key(tmp_path, request: dict, name: str) -> str:
    script = f"""
        import openwop_cli as wop
        wop.llm_call("openai", "gpt-4o", {request!r}, lambda: {{"choices": []}})
    """
    source = capture(tmp_path, script, out=name)
    return next(e["data"]["cacheKey"] for e in events(source) if e["type"] == "llm_request")


@requirement(SPEC, "LLM cache-key recipe",
             "§A/§B: the key is SHA-256 (lowercase hex) of the JCS bytes of the closed field set, tools sorted by name, "
             "absent options omitted")
def test_replay_fork_cache_key_recipe_matches_an_independent_computation(tmp_path):
    key = recorded_key(tmp_path, RECIPE_REQUEST, "recipe")
    assert key == independent_key(RECIPE_REQUEST) and key == key.lower() and len(key) == 64


@requirement(SPEC, "LLM cache-key recipe",
             "§A: fields outside the set (max_tokens, stop, stream, metadata, user, seed) MUST NOT influence the key; "
             "messages order is significant")
def test_replay_fork_cache_key_recipe_closed_field_set(tmp_path):
    base = recorded_key(tmp_path, RECIPE_REQUEST, "base")
    noisy = {**RECIPE_REQUEST, "max_tokens": 5, "stop": ["x"], "stream": True, "metadata": {"a": 1}, "user": "other",
             "seed": 9, "tools": list(reversed(RECIPE_REQUEST["tools"])),
             "messages": [{**message, "id": f"msg_{index}", "cache_control": {"type": "ephemeral"}}
                          for index, message in enumerate(RECIPE_REQUEST["messages"])]}
    assert recorded_key(tmp_path, noisy, "noisy") == base, "a message's id and cache_control are outside the set too"
    recipe = {"provider": "openai", "model": "gpt-4o", "messages": noisy["messages"]}
    printed = run_wop("cache-key", "-", input=orjson.dumps(recipe).decode())
    closed = run_wop("cache-key", "-", input=orjson.dumps({**recipe, "messages": RECIPE_REQUEST["messages"]}).decode())
    assert printed.returncode == 0 and printed.stdout == closed.stdout, "`wop cache-key` keys the same closed set"
    swapped = {**RECIPE_REQUEST, "messages": list(reversed(RECIPE_REQUEST["messages"]))}
    assert recorded_key(tmp_path, swapped, "swapped") != base


@requirement(SPEC, "LLM cache-key recipe",
             "§D: two hosts computing the key of the same request agree (the recorded key equals `wop cache-key`)")
def test_replay_fork_cache_key_portable(tmp_path):
    recorded = recorded_key(tmp_path, RECIPE_REQUEST, "portable")
    recipe_input = {"provider": "openai", "model": "gpt-4o", "messages": RECIPE_REQUEST["messages"],
                    "temperature": 0.2,
                    "tools": [{"name": "zeta", "parameters": RECIPE_REQUEST["tools"][0]["function"]["parameters"]},
                              {"name": "alpha", "description": "A", "parameters": {"type": "object"}}]}
    done = run_wop("cache-key", "-", input=orjson.dumps(recipe_input).decode())
    assert done.returncode == 0 and done.stdout.strip() == recorded


EXTRA_FIELDS_AND_BIG_INTS = """
    import os
    import openai

    client = openai.OpenAI(base_url=os.environ["PROVIDER_URL"] + "/v1", api_key="sk-test-0123456789abcdef",
                           max_retries=0)
    bounds = {"type": "integer", "maximum": 2**53 + 1, "minimum": -(2**70)}
    reply = client.chat.completions.create(
        model="fake-gpt", user="u-7", metadata={"trace": "t-1"}, max_tokens=50,
        messages=[{"role": "system", "content": "Be brief.", "name": "policy"},
                  {"role": "user", "content": "count to three", "id": "msg_1"}],
        tools=[{"type": "function", "function": {"name": "count", "description": "Count",
                                                 "parameters": {"type": "object", "properties": {"n": bounds}}}}])
    print(reply.choices[0].message.tool_calls[0].function.name)
"""


@requirement(SPEC, "LLM cache-key recipe",
             "§A/§B through a real SDK: a request with fields outside the set (a message id, metadata, user) and "
             "integers beyond 2^53 in a tool schema gets a key — the independent recipe's, and `wop cache-key`'s — "
             "and replays strictly")
def test_replay_fork_cache_key_extra_fields_and_big_integers(tmp_path):
    with FakeProvider() as provider:
        source = capture(tmp_path, EXTRA_FIELDS_AND_BIG_INTS, env={"PROVIDER_URL": provider.url})
        done, report = replay(tmp_path, source, "--strict", env={"PROVIDER_URL": provider.url})
    assert done.returncode == 0 and done.stderr.strip() == "count", report and report["divergences"][:1]
    recorded = next(e["data"]["cacheKey"] for e in events(source) if e["type"] == "llm_request")
    bounds = {"type": "integer", "maximum": float(2**53 + 1), "minimum": float(-(2**70))}  # I-JSON numbers
    recipe = {"provider": "openai", "model": "fake-gpt",
              "messages": [{"role": "system", "content": "Be brief.", "name": "policy"},
                           {"role": "user", "content": "count to three"}],
              "tools": [{"name": "count", "description": "Count",
                         "parameters": {"type": "object", "properties": {"n": bounds}}}]}
    assert recorded == hashlib.sha256(rfc8785.dumps(recipe)).hexdigest()
    as_sent = {**recipe, "messages": [*recipe["messages"][:1], {**recipe["messages"][1], "id": "msg_1"}],
               "user": "u-7", "metadata": {"trace": "t-1"}}
    text = orjson.dumps(as_sent).decode().replace("9007199254740992.0", str(2**53 + 1)).replace(
        "-1.1805916207174113e+21", str(-(2**70)))
    assert str(2**53 + 1) in text and str(-(2**70)) in text
    printed = run_wop("cache-key", "-", input=text)
    assert printed.returncode == 0 and printed.stdout.strip() == recorded


@requirement(SPEC, "Replay determinism under nondeterministic models",
             "§B: a refusal where the original got a valid envelope, and the reverse, is never silently substituted: "
             "replay_diverged_at_refusal in both directions")
def test_replay_fork_nondeterministic_models_refusal_divergence(tmp_path):
    with FakeProvider() as provider:
        source = capture(tmp_path, AGENT, env={"PROVIDER_URL": provider.url})
    with FakeProvider(refuse=True) as refusing:
        done = run_wop("fork", str(source), "--from-seq", "1", "--json", "--out", str(tmp_path / "fork"),
                       env={"PROVIDER_URL": refusing.url}, cwd=tmp_path)
    assert done.returncode == 1
    refusal = [d for d in orjson.loads(done.stdout)["divergences"] if d["code"] == "replay_diverged_at_refusal"]
    assert (refusal[0]["expectedValue"], refusal[0]["observedValue"]) == ("valid", "refusal")
    assert refusal[0]["expected"]["type"] == "llm_response"
    with FakeProvider(refuse=True) as refusing:
        refused = capture(tmp_path, AGENT, env={"PROVIDER_URL": refusing.url}, out="refused")
    with FakeProvider() as provider:
        done = run_wop("fork", str(refused), "--from-seq", "1", "--json", "--out", str(tmp_path / "answered"),
                       env={"PROVIDER_URL": provider.url}, cwd=tmp_path)
    assert done.returncode == 1, "the other direction: refused in the original, answered today"
    refusal = [d for d in orjson.loads(done.stdout)["divergences"] if d["code"] == "replay_diverged_at_refusal"]
    assert [(d["expectedValue"], d["observedValue"]) for d in refusal] == [("refusal", "valid")]
    with FakeProvider(refuse=True) as refusing:
        done = run_wop("fork", str(refused), "--from-seq", "1", "--json", "--out", str(tmp_path / "still-refused"),
                       env={"PROVIDER_URL": refusing.url}, cwd=tmp_path)
    assert done.returncode == 0 and orjson.loads(done.stdout)["divergences"] == [], "refused both times: no shift"


STATEFUL = """
    import openwop_cli as wop

    wop.state.declare("log", "append", max_size=3)
    wop.state.declare("tally", "counter")
    for i in range(6):
        wop.state.write("log", f"entry {i}")
        wop.state.write("tally", i)
        wop.state.set("_approvalVotes:gate", {"userId": f"u{i % 2}", "action": "approve" if i % 3 else "reject"})
        wop.state.write("ticket", {f"k{i}": wop.randint(0, 9, key="k")}, "merge")
"""


@requirement(SPEC, "Replay determinism under nondeterministic models",
             "§C: RunSnapshot.variables and RunSnapshot.channels at each event-log index are byte-equivalent across "
             "original and replay")
def test_replay_fork_nondeterministic_models_observable_state_at_each_index(tmp_path):
    source = capture(tmp_path, STATEFUL)
    done, report = replay(tmp_path, source)
    assert done.returncode == 0 and report["score"]["score"] == 1.0
    original, replayed = events(source), events(tmp_path / "replay")
    assert [e["type"] for e in original] == [e["type"] for e in replayed]
    for seq in range(len(original)):
        before, after = fold_events(original, at=seq).snapshot(), fold_events(replayed, at=seq).snapshot()
        assert orjson.dumps({k: before[k] for k in ("channels", "variables")}, option=orjson.OPT_SORT_KEYS) == \
            orjson.dumps({k: after[k] for k in ("channels", "variables")}, option=orjson.OPT_SORT_KEYS), seq


@requirement(SPEC, "Run Timeline View",
             "payload inspection as a JSON tree, filters by event type, the state at each event")
def test_replay_fork_run_timeline_view(steps):
    source = steps
    timeline = run_wop("show", str(source), "--type", "tool")
    assert timeline.returncode == 0 and "step" in timeline.stdout and "nondeterministic" not in timeline.stdout
    write = seq_of(source, "state_mutation", channel="log")
    one = run_wop("show", str(source), "--seq", str(write), "--json")
    shown = orjson.loads(one.stdout)
    assert one.returncode == 0 and shown["type"] == "state_mutation"
    tree = run_wop("show", str(source), "--seq", str(write))
    assert "log" in tree.stdout and "ONE" in tree.stdout


@requirement(SPEC, "Privacy and replay",
             "the same redaction rules apply to replayed events as to the original run")
def test_replay_fork_privacy_and_replay(tmp_path):
    secret = "sk-ant-" + "Zq9" * 14
    script = """
        import os
        import openwop_cli as wop

        @wop.tool
        def use(key):
            return {"used": True}

        use(os.environ["ANTHROPIC_API_KEY"])
    """
    source = capture(tmp_path, script, env={"ANTHROPIC_API_KEY": secret})
    done, report = replay(tmp_path, source, env={"ANTHROPIC_API_KEY": secret})
    assert done.returncode == 0, report and report["divergences"]
    assert_not_on_disk(secret, tmp_path / "replay")


@requirement(SPEC, "Determinism scoring",
             "a report has sourceRunId, replayRunId, fromSeq, matchedEvents, comparedEvents, firstDivergenceSeq and "
             "score = matchedEvents / comparedEvents in 0..1")
def test_replay_fork_determinism_scoring_fields(tmp_path, steps):
    source = steps
    done, report = replay(tmp_path, source, "--lenient", env={"SECOND": "changed"})
    score = report["score"]
    assert set(score) == {"sourceRunId", "replayRunId", "fromSeq", "matchedEvents", "comparedEvents",
                          "firstDivergenceSeq", "score"}
    assert score["sourceRunId"] == manifest(source)["runId"] and score["replayRunId"] == manifest(tmp_path / "replay")["runId"]
    assert score["score"] == round(score["matchedEvents"] / score["comparedEvents"], 6) and 0 <= score["score"] < 1
    assert score["firstDivergenceSeq"] == seq_of(source, "tool_call", args={"name": "two"})
    assert manifest(tmp_path / "replay")["score"] == score


@pytest.mark.parametrize("change", ["underflow", "exit-code-only"])
@requirement(SPEC, "Determinism scoring",
             "a replay that diverged never scores 1.0 (not even with nothing compared), and firstDivergenceSeq is set "
             "for every divergence, nondeterministic_underflow included")
def test_replay_fork_determinism_scoring_a_diverged_replay_scores_below_one(tmp_path, change):
    script = """
        import os, sys
        import openwop_cli as wop
        if os.environ.get("CHANGE") == "underflow":
            wop.random(key="r")
            wop.random(key="r")
        elif not os.environ.get("CHANGE"):
            wop.random(key="r")
        sys.exit(3 if os.environ.get("CHANGE") == "exit-code-only" else 0)
    """ if change == "underflow" else """
        import os, sys
        sys.exit(3 if os.environ.get("CHANGE") else 0)
    """
    source = capture(tmp_path, script)
    done, report = replay(tmp_path, source, "--lenient", env={"CHANGE": change})
    assert done.returncode == 1 and report["diverged"]
    assert report["score"]["score"] < 1 and report["score"]["matchedEvents"] < report["score"]["comparedEvents"]
    assert report["score"]["firstDivergenceSeq"] is not None
    human = run_wop("replay", str(source), "--lenient", "--out", str(tmp_path / "human"), env={"CHANGE": change},
                    cwd=tmp_path)
    assert "score 1.00" not in human.stdout


@requirement(SPEC, "Determinism scoring", "exact fixture replay is a pass/fail assertion (the score only adds detail)")
def test_replay_fork_determinism_scoring_exact_fixture_replay(tmp_path):
    source = tmp_path / "example"
    assert run_wop("capture", "--out", str(source), "--", sys.executable, str(ROOT / "examples" / "support_agent.py"),
                   cwd=tmp_path).returncode == 0
    done, report = replay(tmp_path, source)
    assert done.returncode == 0 and report["score"]["score"] == 1.0
    assert report["score"]["matchedEvents"] == report["score"]["comparedEvents"] > 0
