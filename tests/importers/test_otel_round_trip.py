"""`wop export otel` then `wop import otel`: a LangGraph agent (langchain-openai against the fake provider over HTTP)
captured, exported to an OTLP JSON file and to a real Phoenix, imported back, replays exactly, every event as it was
recorded."""

import shutil
import sys
import textwrap
import time
import uuid
from pathlib import Path

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import adopt_signing_key, keep_signing_key, requires, run_wop
from tests.fake_provider import FakeProvider
from tests.importers.agents import LANGGRAPH_AGENT

requires("langgraph")
requires("langchain_openai")
requires("opentelemetry.exporter.otlp.proto.http")

EXPECTED = 'human: Where is order A-1? | ai:  | tool: {"id": "A-1", "status": "shipped"} | ai: answer to Where is order A-1?'


@pytest.fixture(scope="module")
def recorded_agent(tmp_path_factory, isolation) -> tuple[Path, str, Path]:
    """The LangGraph agent captured by wop once for the module's tests, against the fake provider (stopped
    afterwards), in a directory of its own: that directory (agent.py, the capture in captured/), the base URL and the
    recorder's signing key. A LangGraph capture costs seconds; the tests only read it, and write under their tmp_path."""
    directory = tmp_path_factory.mktemp("langgraph")
    program = directory / "agent.py"
    program.write_text(textwrap.dedent(LANGGRAPH_AGENT))
    with isolation(), FakeProvider() as provider:
        done = run_wop("capture", "--name", "langgraph", "--out", str(directory / "captured"), "--", sys.executable,
                       str(program), env={"BASE": provider.url}, cwd=directory)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0] == EXPECTED
        assert len(provider.requests) == 2
        return directory, provider.url, keep_signing_key(directory.with_suffix(".key"))


def captured_agent(recorded_agent: tuple[Path, str, Path]) -> tuple[Path, str, Path]:
    """The shared LangGraph capture, recorded by this test's user (tests only read it and its agent); the capture, the
    base URL (its provider gone since) and the agent."""
    directory, base, key = recorded_agent
    adopt_signing_key(key)
    return directory / "captured", base, directory / "agent.py"


def assert_same_events(original: Path, imported: Path) -> None:
    """Every event of the imported capture is the original's: type, data, time and the origin that made it."""
    def comparable(capture: Path) -> list[dict]:
        return [{key: event.get(key) for key in ("seq", "ts", "type", "data", "origin")}
                for event in CaptureReader(capture, resolve_blobs=True)]

    assert comparable(imported) == comparable(original)


def assert_replays_exactly(imported: Path, base: str, tmp_path: Path) -> None:
    done = run_wop("replay", str(imported), "--json", "--out", str(tmp_path / f"replay-{uuid.uuid4().hex[:6]}"),
                   env={"BASE": base}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = orjson.loads(done.stdout)
    assert report["divergences"] == [] and report["score"]["score"] == 1.0 and report["liveValues"] == []
    assert EXPECTED in done.stderr.splitlines()
    changed = run_wop("replay", str(imported), "--json", "--out", str(tmp_path / f"replay-{uuid.uuid4().hex[:6]}"),
                      env={"BASE": base, "PROMPT": "Where is order B-2?"}, cwd=tmp_path)
    assert changed.returncode == 1
    first = orjson.loads(changed.stdout)["divergences"][0]
    assert first["jsonPath"] == "$.messages[0].content" and first["observedValue"] == "Where is order B-2?"


def test_a_langgraph_capture_exported_to_a_file_and_imported_replays_exactly(tmp_path, recorded_agent):
    captured, base, agent = captured_agent(recorded_agent)
    trace = tmp_path / "trace.jsonl"
    exported = run_wop("export", "otel", str(captured), "--file", str(trace), "--json")
    assert exported.returncode == 0, exported.stderr
    program = [sys.executable, str(agent)]
    done = run_wop("import", "otel", str(trace), "--out", str(tmp_path / "imported"), "--json", "--", *program)
    assert done.returncode == 0, done.stderr
    [summary] = orjson.loads(done.stdout)
    assert summary["traceId"] == orjson.loads(exported.stdout)[0]["traceId"] and summary["llmCalls"] == 2
    manifest = orjson.loads((tmp_path / "imported" / "manifest.json").read_bytes())
    original = orjson.loads((captured / "manifest.json").read_bytes())
    assert manifest["imported"]["capturedFrom"] == original["captureId"] and manifest["name"] == "langgraph"
    assert manifest["program"]["argv"] == original["program"]["argv"] == manifest["imported"]["command"]
    assert manifest["program"]["script"] == original["program"]["script"]  # the pinned copy came along
    assert_same_events(captured, tmp_path / "imported")
    assert_replays_exactly(tmp_path / "imported", base, tmp_path)
    # the command a trace names is never run: without one given, a replay asks for it
    assert run_wop("import", "otel", str(trace), "--out", str(tmp_path / "no-command")).returncode == 0
    assert orjson.loads((tmp_path / "no-command" / "manifest.json").read_bytes())["program"]["argv"] == []
    refused = run_wop("replay", str(tmp_path / "no-command"), "--out", str(tmp_path / "never"), env={"BASE": base})
    assert refused.returncode == 2 and "give it after --" in refused.stderr


def test_a_langgraph_capture_exported_to_phoenix_and_imported_replays_exactly(tmp_path, recorded_agent, phoenix):
    captured, base, agent = captured_agent(recorded_agent)
    project = f"wop-round-{uuid.uuid4().hex[:8]}"
    exported = run_wop("export", "otel", str(captured), "--endpoint", phoenix, "--project", project, "--json")
    assert exported.returncode == 0, exported.stderr
    spans = orjson.loads(exported.stdout)[0]["spans"]
    deadline = time.monotonic() + 60
    while True:
        done = run_wop("import", "otel", "--phoenix", phoenix, "--project", project, "--out",
                       str(tmp_path / "imported"), "--json", "--", sys.executable, str(agent))
        if done.returncode == 0 and orjson.loads(done.stdout)[0]["spans"] == spans:
            break
        assert time.monotonic() < deadline, done.stdout + done.stderr
        shutil.rmtree(tmp_path / "imported", ignore_errors=True)
        time.sleep(1)
    assert_same_events(captured, tmp_path / "imported")
    assert_replays_exactly(tmp_path / "imported", base, tmp_path)


def test_a_wop_trace_whose_events_were_cut_short_is_refused(tmp_path, recorded_agent):
    captured, _, _ = captured_agent(recorded_agent)
    trace = tmp_path / "trace.jsonl"
    assert run_wop("export", "otel", str(captured), "--file", str(trace)).returncode == 0
    document = orjson.loads(trace.read_bytes())
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    for attribute in span["attributes"]:
        if attribute["key"] == "wop.request_event":
            attribute["value"]["stringValue"] = attribute["value"]["stringValue"][:100]
    trace.write_bytes(orjson.dumps(document) + b"\n")
    done = run_wop("import", "otel", str(trace), "--out", str(tmp_path / "imported"))
    assert done.returncode == 2 and "carries a wop event that is not whole" in done.stderr
    assert not (tmp_path / "imported").exists()
