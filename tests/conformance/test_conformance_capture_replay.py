"""capture-replay-design.md, requirement by requirement: envelope, payloads, manifest, sink, source, engine,
divergences, redaction, blobs, failure modes, the four acceptance scenarios and compatibility."""

import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from openwop_cli.replay.source import ReplaySource
from tests.conformance.runs import AGENT, assert_not_on_disk, capture, events, manifest, program, replay
from tests.conformance.spec import requirement
from tests.conftest import ROOT, adopt_signing_key, keep_signing_key, run_wop, write_capture
from tests.fake_provider import FakeProvider

SPEC = "capture-replay-design.md"
EVENT_TYPES = {"run_start", "run_end", "llm_request", "llm_response", "tool_call", "tool_result", "state_mutation",
               "nondeterministic"}

TOOLS_AND_VALUES = """
    import openwop_cli as wop

    @wop.tool
    def lookup(order_id, verbose=False):
        return {"id": order_id, "status": "shipped"}

    @wop.tool
    def fail(order_id):
        raise LookupError(f"no order {order_id}")

    lookup("A-1")
    try:
        fail("A-2")
    except LookupError:
        pass
    wop.randint(0, 10, key="pick")
    wop.state.write("ticket", {"topic": "shipping"}, "merge", node_id="triage")
    print(wop.llm_call("openai", "gpt-4o", {"messages": [{"role": "user", "content": "hi"}],
                       "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]},
                       lambda: {"choices": [{"message": {"role": "assistant", "content": "hello"},
                                             "finish_reason": "stop"}],
                                "usage": {"prompt_tokens": 3, "completion_tokens": 1}}))
"""


@pytest.fixture(scope="module")
def recorded_runs(tmp_path_factory, isolation) -> dict[str, Path]:
    """TOOLS_AND_VALUES and AGENT (against a fake provider, gone afterwards) captured once each for the module's
    tests that read them or replay them into their own tmp_path, never changing a program or a capture; and the
    recorder's signing key."""
    directory = tmp_path_factory.mktemp("runs")
    with isolation():
        tools_and_values = capture(tmp_path_factory.mktemp("tools"), TOOLS_AND_VALUES)
        with FakeProvider() as provider:
            agent = capture(tmp_path_factory.mktemp("agent"), AGENT, env={"PROVIDER_URL": provider.url})
        return {"tools_and_values": tools_and_values, "agent": agent, "key": keep_signing_key(directory / "key")}


@pytest.fixture
def recorded(recorded_runs) -> tuple[Path, list[dict]]:
    """The capture of TOOLS_AND_VALUES, recorded by this test's user, and its events."""
    adopt_signing_key(recorded_runs["key"])
    return recorded_runs["tools_and_values"], events(recorded_runs["tools_and_values"])


@pytest.fixture
def recorded_agent(recorded_runs) -> Path:
    """The capture of AGENT, recorded by this test's user."""
    adopt_signing_key(recorded_runs["key"])
    return recorded_runs["agent"]


@requirement(SPEC, "Capture event envelope",
             "every event is {version: 1, captureId, runId, seq, ts, type, data} with type one of the eight "
             "CaptureEventTypes; seq is monotonic per run")
def test_capture_replay_capture_event_envelope(recorded):
    source, recorded_events = recorded
    ids = manifest(source)
    for seq, event in enumerate(recorded_events):
        assert event["version"] == 1 and event["seq"] == seq
        assert (event["captureId"], event["runId"]) == (ids["captureId"], ids["runId"])
        assert isinstance(event["ts"], int) and event["type"] in EVENT_TYPES and isinstance(event["data"], dict)
    assert recorded_events[0]["type"] == "run_start" and recorded_events[-1]["type"] == "run_end"


@requirement(SPEC, "Event payload requirements",
             "llm_request: provider, model, normalized input hash, tool schema hash (if tools present)")
def test_capture_replay_event_payload_requirements_llm_request(recorded):
    import rfc8785

    _, recorded_events = recorded
    request = next(e["data"] for e in recorded_events if e["type"] == "llm_request")
    assert (request["provider"], request["model"]) == ("openai", "gpt-4o")
    assert len(request["cacheKey"]) == 64
    tools = [{"name": "lookup", "parameters": {"type": "object"}}]
    assert request["toolSchemaHash"] == hashlib.sha256(rfc8785.dumps(tools)).hexdigest()


@requirement(SPEC, "Event payload requirements", "llm_response: provider, model, stopReason, usage, response payload")
def test_capture_replay_event_payload_requirements_llm_response(recorded):
    _, recorded_events = recorded
    response = next(e["data"] for e in recorded_events if e["type"] == "llm_response")
    assert (response["provider"], response["model"], response["stopReason"]) == ("openai", "gpt-4o", "stop")
    assert response["usage"] and response["response"]["choices"][0]["message"]["content"] == "hello"


@requirement(SPEC, "Event payload requirements",
             "tool_call: tool name, normalized args, call id; tool_result: call id, success/error, normalized result")
def test_capture_replay_event_payload_requirements_tool_call_and_result(recorded):
    _, recorded_events = recorded
    calls = [e["data"] for e in recorded_events if e["type"] == "tool_call"]
    results = {e["data"]["callId"]: e["data"] for e in recorded_events if e["type"] == "tool_result"}
    assert calls[0]["name"] == "lookup" and calls[0]["args"] == {"order_id": "A-1", "verbose": False}
    assert results[calls[0]["callId"]]["ok"] is True and results[calls[0]["callId"]]["result"]["status"] == "shipped"
    failed = results[calls[1]["callId"]]
    assert failed["ok"] is False and failed["error"]["type"] == "LookupError"
    assert failed["error"]["args"] == ["no order A-2"]


@requirement(SPEC, "Event payload requirements", "nondeterministic: source, key, value hash + optional inline value")
def test_capture_replay_event_payload_requirements_nondeterministic(tmp_path, recorded):
    _, recorded_events = recorded
    value = next(e["data"] for e in recorded_events if e["type"] == "nondeterministic")
    assert (value["source"], value["key"]) == ("rng", "pick") and 0 <= value["value"] <= 10
    assert len(value["valueHash"]) == 64
    source = capture(tmp_path, """
        import openwop_cli as wop
        wop.randint(0, 10**9, key="a")
        wop.randint(0, 10**9, key="b")
        wop.uuid4()
        wop.now()
        wop.random()
    """, out="values")
    values = [e["data"] for e in events(source) if e["type"] == "nondeterministic"]
    assert len(values) == 5 and len({v["valueHash"] for v in values}) == 5, "each value hashes to its own hash"
    for found in values:
        canonical = json.dumps(found["value"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert found["valueHash"] == hashlib.sha256(canonical.encode()).hexdigest(), found


@requirement(SPEC, "Event payload requirements", "state_mutation: type (file_write/env_read/…) and normalized details")
def test_capture_replay_event_payload_requirements_state_mutation(recorded):
    _, recorded_events = recorded
    write = next(e["data"] for e in recorded_events if e["type"] == "state_mutation")
    assert write["kind"] == "channel" and write["channel"] == "ticket" and write["value"] == {"topic": "shipping"}


@requirement(SPEC, "Capture manifest",
             "manifest.json: version, captureId, runId, createdAt, completedAt, mode, model, eventCount, eventLogPath, "
             "redaction {enabled, profile}, integrity {algorithm: sha256, eventsHash}, status")
def test_capture_replay_capture_manifest(recorded):
    source, recorded_events = recorded
    found = manifest(source)
    assert found["version"] == 1 and found["mode"] == "capture" and found["status"] == "ok"
    assert found["createdAt"] <= found["completedAt"] and found["eventCount"] == len(recorded_events)
    assert found["eventLogPath"] == "events.jsonl" and found["model"] == {"provider": "openai", "model": "gpt-4o"}
    assert found["redaction"] == {"enabled": True, "profile": "default"}
    assert found["integrity"]["algorithm"] == "sha256"
    assert found["integrity"]["eventsHash"] == hashlib.sha256((source / "events.jsonl").read_bytes()).hexdigest()


@requirement(SPEC, "CaptureSink",
             "append writes events line by line in order; finalize writes the manifest with event count and hash, "
             "atomically (temp file + rename)")
def test_capture_replay_capturesink_append_and_finalize(tmp_path, recorded):
    source, _ = recorded
    lines = (source / "events.jsonl").read_bytes().splitlines()
    assert [orjson.loads(line)["seq"] for line in lines] == list(range(len(lines)))
    assert manifest(source)["eventCount"] == len(lines)
    assert sorted(path.name for path in source.iterdir() if path.name.startswith(("manifest", "."))) == ["manifest.json"]
    sink = CaptureSink(tmp_path / "sunk", redactor=Redactor("default", ()))
    sink.start({"name": "atomic"})
    seen_at_start = tmp_path / "manifest-at-start.json"
    os.link(sink.capture_dir / "manifest.json", seen_at_start)  # a reader holding the file finalize replaces
    sink.append("run_start", {"argv": ["x"]})
    sink.finalize()
    assert orjson.loads(seen_at_start.read_bytes())["status"] == "incomplete", "the old manifest was never rewritten"
    assert not os.path.samefile(seen_at_start, sink.capture_dir / "manifest.json"), "finalize renamed a new file in"
    assert manifest(sink.capture_dir)["status"] == "ok"


@requirement(SPEC, "ReplaySource",
             "strict cursor order by seq; no implicit skipping of unmatched types; remaining events surfaced")
def test_capture_replay_replaysource_cursor(recorded):
    source = ReplaySource(recorded[0])
    cursor = source.cursor()
    total = cursor.remaining()
    assert cursor.peek()["type"] == "tool_call"
    assert cursor.next("llm_request") is None and cursor.remaining() == total, "a cursor never skips a unit"
    assert cursor.next("tool_call")["data"]["name"] == "lookup" and cursor.remaining() == total - 1
    source.close()


@requirement(SPEC, "ReplayEngine", "strict mode: throw on first divergence; lenient mode: append and continue")
def test_capture_replay_replayengine_strict_and_lenient(tmp_path):
    script = """
        import os
        import openwop_cli as wop

        @wop.tool
        def step(n):
            return n

        for n in range(3):
            step(n * int(os.environ.get("FACTOR", "1")))
        print("finished")
    """
    source = capture(tmp_path, script)
    strict, report = replay(tmp_path, source, "--strict", env={"FACTOR": "5"}, out="strict")
    assert strict.returncode == 1 and len(report["divergences"]) == 1 and "finished" not in strict.stderr
    lenient, report = replay(tmp_path, source, "--lenient", env={"FACTOR": "5"}, out="lenient")
    assert lenient.returncode == 1 and len(report["divergences"]) == 2 and "finished" in lenient.stderr


@requirement(SPEC, "ReplayEngine", "all comparisons normalize object key order before hashing/comparison")
def test_capture_replay_replayengine_key_order_is_normalized(tmp_path):
    script = """
        import os
        import openwop_cli as wop

        @wop.tool
        def order(spec):
            return spec

        keys = ["a", "b", "c"] if not os.environ.get("REVERSED") else ["c", "b", "a"]
        order({key: key.upper() for key in keys})
    """
    source = capture(tmp_path, script)
    done, report = replay(tmp_path, source, env={"REVERSED": "1"})
    assert done.returncode == 0 and report["divergences"] == []


@requirement(SPEC, "Divergence report",
             "{code, expected?: CaptureEvent, observed?: {type, data}, eventSeq?, jsonPath?, detail}, with the "
             "JSON-path values beside the events")
def test_capture_replay_divergence_report_shape(tmp_path, recorded_agent):
    source = recorded_agent
    done, report = replay(tmp_path, source, env={"ORDER": "B-2"})
    divergence = report["divergences"][0]
    assert divergence["code"] == "event_payload_mismatch" and divergence["jsonPath"] == "$.args.order_id"
    expected = divergence["expected"]
    assert set(expected) >= {"version", "captureId", "runId", "seq", "ts", "type", "data"}
    assert expected["seq"] == divergence["eventSeq"] and expected["data"]["args"] == {"order_id": "A-1"}
    assert set(divergence["observed"]) == {"type", "data"} and divergence["observed"]["data"]["args"]["order_id"] == "B-2"
    assert (divergence["expectedValue"], divergence["observedValue"]) == ("A-1", "B-2")
    assert divergence["detail"]
    stored = [e["data"] for e in events(tmp_path / "replay") if e["type"] == "replay_diverged"]
    assert stored[0]["expected"]["seq"] == expected["seq"] and stored[0]["observedValue"] == "B-2"


@requirement(SPEC, "Divergence report", "the five codes: event_type_mismatch, event_payload_mismatch, event_missing, "
                                        "event_unexpected, nondeterministic_underflow")
def test_capture_replay_divergence_report_codes(tmp_path):
    script = """
        import os
        import openwop_cli as wop

        @wop.tool
        def step(name):
            return name

        @wop.tool
        def notify(name):
            return name

        changed = bool(os.environ.get("CHANGED"))
        if changed:
            try:
                wop.llm_call("openai", "m", {"messages": [{"role": "user", "content": "new"}]}, lambda: {"choices": []})
            except wop.ReplayDivergenceError as exc:
                print("no answer to serve:", exc.divergence.code)
        else:
            step("first")
        step(os.environ.get("SECOND", "second"))
        if not changed:
            step("third")
        wop.random(key="r")
        if changed:
            wop.random(key="r")
            notify("extra")
    """
    source = capture(tmp_path, script)
    done, report = replay(tmp_path, source, "--lenient", env={"CHANGED": "1"})
    assert "no answer to serve: event_type_mismatch" in done.stderr, "an LLM call with nothing to serve is catchable"
    codes = {d["code"] for d in report["divergences"]}
    assert codes >= {"event_type_mismatch", "event_missing", "event_unexpected", "nondeterministic_underflow"}
    recorded_third = next(e["seq"] for e in events(source) if e["data"].get("args") == {"name": "third"})
    missing = [d for d in report["divergences"] if d["code"] == "event_missing"]
    assert recorded_third in {d["eventSeq"] for d in missing}, "a recorded call today's run never made is missing"
    assert all(d["expected"]["type"] == "tool_call" and "observed" not in d for d in missing)
    unexpected = [d for d in report["divergences"] if d["code"] == "event_unexpected"]
    assert [d["observed"]["data"]["name"] for d in unexpected] == ["notify"], "a call the capture lacks is unexpected"
    assert all("eventSeq" not in d and "expected" not in d for d in unexpected)
    underflow = next(d for d in report["divergences"] if d["code"] == "nondeterministic_underflow")
    assert underflow["observed"]["type"] == "nondeterministic" and "eventSeq" not in underflow
    _, report = replay(tmp_path, source, env={"CHANGED": ""}, out="same")
    assert report["divergences"] == []
    _, report = replay(tmp_path, source, env={"CHANGED": "", "SECOND": "2nd"}, out="payload")
    assert [d["code"] for d in report["divergences"]] == ["event_payload_mismatch"]


@requirement(SPEC, "Redaction and data retention policy",
             "default profile: *_API_KEY, *_TOKEN, AUTHORIZATION and HTTP auth headers are redacted to "
             "\"***REDACTED***\"; raw secrets never reach the disk")
def test_capture_replay_redaction_default_profile(tmp_path):
    secret = "sk-proj-" + "Q7x" * 12
    script = """
        import os
        import openwop_cli as wop

        @wop.tool
        def call_api(config):
            return {"ok": True}

        call_api({"OPENAI_API_KEY": os.environ["OPENAI_API_KEY"], "GITHUB_TOKEN": "ghp_" + "a" * 36,
                  "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    """
    source = capture(tmp_path, script, env={"OPENAI_API_KEY": secret})
    config = next(e["data"]["args"]["config"] for e in events(source) if e["type"] == "tool_call")
    assert set(config.values()) == {"***REDACTED***"}
    assert_not_on_disk(secret, source)


@requirement(SPEC, "Redaction and data retention policy",
             "inline small payloads; hash + blob reference large payloads (sha256:<digest>)")
def test_capture_replay_redaction_payload_retention_blobs(tmp_path):
    script = """
        import openwop_cli as wop

        @wop.tool
        def big():
            return "x" * 200_000

        @wop.tool
        def small():
            return "y"

        print(len(big()), small())
    """
    source = capture(tmp_path, script)
    lines = [orjson.loads(line) for line in (source / "events.jsonl").read_bytes().splitlines()]
    results = [line["data"]["result"] for line in lines if line["type"] == "tool_result"]
    assert results[1] == "y"
    digest = results[0]["$blob"].removeprefix("sha256:")
    assert results[0]["$blob"].startswith("sha256:") and len(digest) == 64
    assert (source / "blobs" / "sha256" / digest[:2] / digest).is_file()
    done, report = replay(tmp_path, source)
    assert done.returncode == 0 and "200000 y" in done.stderr


DISK_FULL_AT = 60_000


def _small_files() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (DISK_FULL_AT, DISK_FULL_AT))


@requirement(SPEC, "Failure modes and fallback behavior",
             "capture sink I/O failure: continue the run, warn, mark the manifest status error")
def test_capture_replay_failure_modes_sink_io_failure(tmp_path):
    script = program(tmp_path, "import openwop_cli as wop\nfor i in range(2000):\n"
                               "    wop.nondeterministic('rng', 'pad', lambda: 'x' * 100)\nprint('program finished')\n")
    out = tmp_path / "capture"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          preexec_fn=_small_files, cwd=tmp_path,
                          env={**os.environ, "WOP_MODE": "capture", "WOP_CAPTURE_DIR": str(out)})
    assert done.returncode == 0 and "program finished" in done.stdout, done.stderr
    assert "wop" in done.stderr
    assert manifest(out)["status"] == "error"


@requirement(SPEC, "Failure modes and fallback behavior",
             "replay artifact missing/corrupt: hard fail replay startup with explicit diagnostics")
def test_capture_replay_failure_modes_corrupt_artifact(tmp_path):
    source = capture(tmp_path, TOOLS_AND_VALUES)
    events_file = source / "events.jsonl"
    events_file.write_bytes(events_file.read_bytes().replace(b'"A-1"', b'"A-7"'))
    done, report = replay(tmp_path, source)
    assert done.returncode == 3 and "cannot replay" in done.stderr and "Traceback" not in done.stderr
    missing = run_wop("replay", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


@requirement(SPEC, "Failure modes and fallback behavior",
             "divergence in lenient mode: continue replay and aggregate divergences in result metadata — "
             "examples/support_agent_changed.py runs to the end")
def test_capture_replay_failure_modes_lenient_runs_the_changed_example_to_the_end(tmp_path):
    source = tmp_path / "support"
    assert run_wop("capture", "--out", str(source), "--", sys.executable, str(ROOT / "examples" / "support_agent.py"),
                   cwd=tmp_path).returncode == 0
    done, report = replay(tmp_path, source, "--lenient",
                          command=(sys.executable, str(ROOT / "examples" / "support_agent_changed.py")))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert report["replay"]["exitCode"] == 0, "the program ran to its end"
    found = [(d["code"], d.get("eventSeq"), d.get("jsonPath")) for d in report["divergences"]]
    assert ("event_unexpected", None, None) in found and ("event_payload_mismatch", 6, "$.messages[0].content") in found
    unexpected = next(d for d in report["divergences"] if d["code"] == "event_unexpected")
    assert unexpected["observed"]["data"]["name"] == "loyalty_tier" and unexpected["divergencePoint"] == 6
    stored = [e["data"]["code"] for e in events(tmp_path / "replay") if e["type"] == "replay_diverged"]
    assert stored == [d["code"] for d in report["divergences"]]
    assert report["score"]["score"] < 1 and report["score"]["firstDivergenceSeq"] == 6


@requirement(SPEC, "Given/When/Then acceptance tests",
             "scenario 1: a run with one model response and one tool call is captured as manifest.json and "
             "events.jsonl with ordered llm_request, llm_response, tool_call, tool_result")
def test_capture_replay_acceptance_scenario_1_capture_baseline(recorded_agent):
    source = recorded_agent
    kinds = [e["type"] for e in events(source) if e["type"].startswith(("llm", "tool"))]
    assert kinds == ["llm_request", "llm_response", "tool_call", "tool_result"]


@requirement(SPEC, "Given/When/Then acceptance tests",
             "scenario 2: replay reproduces the final output and makes no outbound provider, network or tool call")
def test_capture_replay_acceptance_scenario_2_replay_offline(tmp_path):
    source = tmp_path / "source"
    with FakeProvider() as provider:
        captured = run_wop("capture", "--out", str(source), "--", sys.executable, str(program(tmp_path, AGENT)),
                           env={"PROVIDER_URL": provider.url}, cwd=tmp_path)
        (tmp_path / "tool-ran.txt").unlink()
        served = len(provider.requests)
        done, report = replay(tmp_path, source, env={"PROVIDER_URL": provider.url})
        assert len(provider.requests) == served, "the provider was called during the replay"
    assert done.returncode == 0 and report["score"]["score"] == 1.0
    assert captured.stdout.startswith("answer: answer to where is my order?") and done.stderr == captured.stdout
    assert not (tmp_path / "tool-ran.txt").exists(), "a recorded tool ran again"


THREADS_AND_TASKS = """
    import asyncio, os, threading
    import openai
    import openwop_cli as wop

    BASE = os.environ["PROVIDER_URL"] + "/v1"
    client = openai.OpenAI(base_url=BASE, api_key="sk-test-0123456789abcdef", max_retries=0)
    answers = {}

    @wop.tool
    def lookup(order_id):
        with open("tool-ran.txt", "a") as ran:
            ran.write(order_id + "\\n")
        return {"id": order_id, "status": "shipped"}

    @wop.tool
    async def check(order_id):
        await asyncio.sleep(0.001)
        with open("tool-ran.txt", "a") as ran:
            ran.write(order_id + "\\n")
        return {"id": order_id, "status": "packed"}

    def worker(n):
        for turn in range(3):
            text = f"thread {n} turn {turn}"
            reply = client.chat.completions.create(model="fake-gpt", messages=[{"role": "user", "content": text}])
            status = lookup(f"T{n}-{turn}")["status"]
            wop.state.write("log", text, "append")
            answers[text] = (reply.choices[0].message.content, status, wop.randint(0, 10**6, key="pick"))

    async def task(n, async_client):
        for turn in range(3):
            text = f"task {n} turn {turn}"
            reply = await async_client.chat.completions.create(model="fake-gpt",
                                                               messages=[{"role": "user", "content": text}])
            status = (await check(f"A{n}-{turn}"))["status"]
            wop.state.write("log", text, "append")
            answers[text] = (reply.choices[0].message.content, status, wop.randint(0, 10**6, key="pick"))

    async def tasks():
        async with openai.AsyncOpenAI(base_url=BASE, api_key="sk-test-0123456789abcdef", max_retries=0) as async_client:
            await asyncio.gather(*(task(n, async_client) for n in range(4)))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    [thread.start() for thread in threads]
    asyncio.run(tasks())
    [thread.join() for thread in threads]
    for text in sorted(answers):
        print(text, "|", *answers[text])
"""


@requirement(SPEC, "Given/When/Then acceptance tests",
             "scenario 2 with concurrency: four threads and four asyncio tasks, each making LLM calls (sync and async "
             "clients), tool calls (sync and async), state writes and random draws, replay strictly offline with the "
             "same output, run after run")
def test_capture_replay_acceptance_scenario_2_threads_and_asyncio_tasks(tmp_path):
    source = tmp_path / "source"
    with FakeProvider() as provider:
        captured = run_wop("capture", "--out", str(source), "--", sys.executable,
                           str(program(tmp_path, THREADS_AND_TASKS)), env={"PROVIDER_URL": provider.url}, cwd=tmp_path)
        assert captured.returncode == 0, captured.stderr
        assert len(captured.stdout.splitlines()) == 24 and "thread 3 turn 2 | answer to thread 3 turn 2 shipped" in captured.stdout
        (tmp_path / "tool-ran.txt").unlink()
        served = len(provider.requests)
        for attempt in range(3):
            done, report = replay(tmp_path, source, "--strict", env={"PROVIDER_URL": provider.url},
                                  out=f"replay-{attempt}")
            assert done.returncode == 0, (attempt, report and report["divergences"][:2])
            assert report["score"]["score"] == 1.0 and done.stderr == captured.stdout
            replayed = events(tmp_path / f"replay-{attempt}")
            assert sorted(e["data"]["value"] for e in replayed if e["data"].get("channel") == "log") == sorted(
                e["data"]["value"] for e in events(source) if e["data"].get("channel") == "log")
        assert len(provider.requests) == served, "the provider was called during a replay"
    assert not (tmp_path / "tool-ran.txt").exists(), "a recorded tool ran again"


@requirement(SPEC, "Given/When/Then acceptance tests",
             "scenario 2: tool errors come back the same offline — type (program-defined classes included), args, "
             "str and repr, printed byte for byte")
def test_capture_replay_acceptance_scenario_2_tool_errors_print_the_same(tmp_path):
    script = """
        import openwop_cli as wop

        class OrderMissing(LookupError):
            def __init__(self, order_id, shop="acme"):
                super().__init__(f"no order {order_id} at {shop}")
                self.order_id, self.shop = order_id, shop

            def __str__(self):
                return f"[{self.shop}] missing {self.order_id}"

        @wop.tool
        def lookup(order_id):
            raise KeyError(f"no order {order_id}")

        @wop.tool
        def lookup_shop(order_id):
            raise OrderMissing(order_id)

        @wop.tool
        def read(path):
            return open(path).read()

        for tool, argument in ((lookup, "A-9999"), (lookup_shop, "A-1"), (read, "/no/such/file")):
            try:
                tool(argument)
            except Exception as exc:
                print(f"cannot help: {exc}")
                print(repr(exc), type(exc).__module__, type(exc).__qualname__, exc.args, vars(exc))
    """
    path = program(tmp_path, script)
    captured = subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--out", str(tmp_path / "source"), "--",
                               sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "NO_COLOR": "1"})
    done, report = replay(tmp_path, tmp_path / "source")
    assert captured.returncode == 0 and done.returncode == 0, done.stderr
    assert "cannot help: 'no order A-9999'" in captured.stdout
    assert done.stderr == captured.stdout, "the replay printed something else"
    assert report["notes"] == []


@requirement(SPEC, "Given/When/Then acceptance tests",
             "scenario 2: an exception type the replay cannot rebuild the same is said in the report")
def test_capture_replay_acceptance_scenario_2_unrebuildable_errors_are_reported(tmp_path):
    script = """
        import os
        import openwop_cli as wop

        if not os.environ.get("REPLAYING"):
            class Vanishing(Exception):
                pass
        else:
            Vanishing = None

        @wop.tool
        def flaky():
            raise Vanishing(object())

        try:
            flaky()
        except Exception as exc:
            print("caught", type(exc).__name__)
    """
    source = capture(tmp_path, script)
    done, report = replay(tmp_path, source, env={"REPLAYING": "1"})
    assert "caught ReplayedToolError" in done.stderr
    # the program printed another thing than it did: not "replays exactly", and the note says why
    assert done.returncode == 1 and [(d["code"], d["expectedValue"], d["observedValue"])
                                     for d in report["divergences"]] == [
        ("output_mismatch", "caught Vanishing", "caught ReplayedToolError")]
    assert len(report["notes"]) == 1 and "Vanishing is not loaded" in report["notes"][0]["detail"]
    assert report["notes"][0]["code"] == "exception_not_rebuilt"
    human = run_wop("replay", str(source), "--out", str(tmp_path / "human"), env={"REPLAYING": "1"}, cwd=tmp_path)
    assert "Vanishing is not loaded" in human.stdout


@requirement(SPEC, "Given/When/Then acceptance tests",
             "scenario 3: with tool args changed, strict replay fails with event_payload_mismatch and the JSON path")
def test_capture_replay_acceptance_scenario_3_strict_divergence(tmp_path, recorded_agent):
    source = recorded_agent
    done, report = replay(tmp_path, source, "--strict", env={"ORDER": "B-2"})
    assert done.returncode == 1 and "ReplayDivergenceError" in done.stderr
    assert [(d["code"], d["eventSeq"], d["jsonPath"]) for d in report["divergences"]] == [
        ("event_payload_mismatch", 3, "$.args.order_id")]


@requirement(SPEC, "Given/When/Then acceptance tests",
             "scenario 4: with the same mismatch, lenient replay completes and aggregates the divergences")
def test_capture_replay_acceptance_scenario_4_lenient_divergence(tmp_path, recorded_agent):
    source = recorded_agent
    done, report = replay(tmp_path, source, "--lenient", env={"ORDER": "B-2", "EXTRA_PICKS": "1"})
    assert done.returncode == 1 and report["replay"]["exitCode"] == 0
    assert [d["code"] for d in report["divergences"]] == ["event_payload_mismatch", "nondeterministic_underflow"]
    stored = [e["data"] for e in events(tmp_path / "replay") if e["type"] == "replay_diverged"]
    assert [d["code"] for d in stored] == ["event_payload_mismatch", "nondeterministic_underflow"]


@requirement(SPEC, "Compatibility tests",
             "compatible older manifest versions accepted; incompatible major versions rejected with a migration hint")
def test_capture_replay_compatibility_tests(tmp_path):
    older = write_capture(tmp_path / "older", [("run_start", {"argv": ["x"]}), ("run_end", {"exitCode": 0})])
    assert run_wop("show", str(older)).returncode == 0
    newer = write_capture(tmp_path / "newer", [("run_start", {"argv": ["x"]})])
    found = manifest(newer)
    (newer / "manifest.json").write_bytes(orjson.dumps({**found, "version": 2}))
    done = run_wop("show", str(newer))
    assert done.returncode == 3 and "upgrade wop" in done.stderr and "format 2" in done.stderr


@requirement(SPEC, "Success criteria", "existing behavior is unchanged when replay is disabled")
def test_capture_replay_success_criteria_disabled_is_unchanged(tmp_path):
    path = program(tmp_path, TOOLS_AND_VALUES)
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path,
                           env={key: value for key, value in os.environ.items() if key != "WOP_MODE"})
    assert plain.returncode == 0 and "'content': 'hello'" in plain.stdout
    assert not any(path.name == "manifest.json" for path in tmp_path.rglob("*"))
