"""`wop import otel`: traces that real instrumentations (openinference-instrumentation-openai, the OpenTelemetry
openai-v2 instrumentation) write of a real openai-SDK program, sent over OTLP to a file and to a real Phoenix,
become captures the program replays offline, with the provider stopped; a changed prompt diverges at its path;
hidden content is named; a wop capture exported and imported back replays exactly."""

import os
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import requires, run_wop
from tests.fake_provider import FakeProvider
from tests.importers.agents import LANGGRAPH_TRACED
from tests.otlp_receiver import OtlpFileReceiver

requires("openai")
requires("opentelemetry.exporter.otlp.proto.http")

AGENT = """
import json
import os

import openai
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

provider = TracerProvider(resource=Resource.create({"service.name": "agent",
                                                    "openinference.project.name": os.environ.get("PROJECT", "agent")}))
if os.environ.get("OTLP"):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=os.environ["OTLP"] + "/v1/traces")))
if os.environ.get("OTLP_LOGS"):  # GenAI events as log records
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=os.environ["OTLP_LOGS"] + "/v1/logs")))
    set_logger_provider(logs)
if os.environ["INSTRUMENT"] == "openinference":
    from openinference.instrumentation.openai import OpenAIInstrumentor
else:
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
OpenAIInstrumentor().instrument(tracer_provider=provider)

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order by id",
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]
client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-otel-0123456789abcdef", max_retries=0)
with provider.get_tracer("agent").start_as_current_span("agent"):
    messages = [{"role": "system", "content": os.environ.get("PROMPT", "Be brief.")},
                {"role": "user", "content": "where is A-1?"}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS, temperature=0.2)
    call = first.choices[0].message.tool_calls[0]
    order = {"id": json.loads(call.function.arguments)["order_id"], "status": "shipped"}
    messages += [{"role": "assistant", "tool_calls": [{"id": call.id, "type": "function", "function": {
                     "name": call.function.name, "arguments": call.function.arguments}}]},
                 {"role": "tool", "tool_call_id": call.id, "content": json.dumps(order)}]
    second = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    stream = client.chat.completions.create(model="gpt-4o-mini", stream=True,
                                            messages=[{"role": "user", "content": "and the next one?"}])
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
print(call.function.name, order["status"], "|", second.choices[0].message.content, "|", streamed.strip())
provider.shutdown()
"""
EXPECTED = "lookup_order shipped | answer to where is A-1? | answer to and the next one?"
# the GenAI instrumentation records message content on the span only when asked to
GENAI_CONTENT = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                 "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"}
INSTRUMENTS = {"openinference": {}, "genai": GENAI_CONTENT}


def instrumented(instrument: str) -> None:
    requires("openinference.instrumentation.openai" if instrument == "openinference"
             else "opentelemetry.instrumentation.openai_v2")


def run_agent(tmp_path: Path, instrument: str, base: str, **env: str) -> tuple[Path, dict[str, str]]:
    """The agent run once, plainly (not under wop), its spans sent to env OTLP; the program and its environment."""
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(AGENT))
    environment = {"BASE": base, "INSTRUMENT": instrument, **INSTRUMENTS[instrument]}
    done = _python(program, {**environment, **env})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == EXPECTED
    return program, environment


def _python(program: Path, env: dict[str, str]):
    import subprocess

    return subprocess.run([sys.executable, str(program)], cwd=program.parent, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


def import_trace(*source: str, out: Path, program: Path) -> dict:
    done = run_wop("import", "otel", *source, "--out", str(out), "--json", "--", sys.executable, str(program))
    assert done.returncode == 0, done.stderr
    [summary] = orjson.loads(done.stdout)
    return summary


def replay(capture: Path, env: dict[str, str], tmp_path: Path, *flags: str):
    out = tmp_path / f"replay-{uuid.uuid4().hex[:8]}"
    done = run_wop("replay", str(capture), "--json", "--out", str(out), *flags, env=env, cwd=tmp_path)
    return done, orjson.loads(done.stdout) if done.stdout.strip().startswith("{") else None


def assert_replays_offline(capture: Path, env: dict[str, str], tmp_path: Path) -> None:
    """A strict replay, with the provider stopped, exits 0 and the program prints what it printed when traced; the
    same program with a changed system prompt diverges at that prompt."""
    done, report = replay(capture, env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert EXPECTED in done.stderr.splitlines()  # --json: the program's output goes to stderr
    assert report["score"]["matchedEvents"] == 3 and report["divergences"] == []
    assert "ambient" in report["notInTrace"] and report["hiddenInTrace"] == []
    changed, report = replay(capture, {**env, "PROMPT": "Be warm."}, tmp_path)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    first = report["divergences"][0]
    assert first["code"] == "event_payload_mismatch" and first["jsonPath"] == "$.messages[0].content"
    assert (first["expectedValue"], first["observedValue"]) == ("Be brief.", "Be warm.")


def assert_same_capture(capture: Path, other: Path) -> None:
    """The two captures hold the same events and manifest but for their ids, times, source file and the hashes and
    signature over those: a replay of one runs as a replay of the other."""
    def comparable(path: Path) -> tuple[list[dict], dict]:
        events = [{key: value for key, value in event.items() if key not in ("captureId", "runId")}
                  for event in CaptureReader(path, resolve_blobs=True)]
        manifest = orjson.loads((path / "manifest.json").read_bytes())
        for key in ("captureId", "runId", "createdAt", "completedAt", "integrity", "signature"):
            manifest.pop(key)
        manifest["imported"].pop("source")
        return events, manifest

    assert comparable(capture) == comparable(other)


class TracedRun(NamedTuple):
    program: Path
    env: dict[str, str]  # the provider's URL in it is gone since
    collector: OtlpFileReceiver  # its files: the spans in OTLP JSON and in protobuf
    provider_requests: int


@pytest.fixture(scope="module")
def traced_runs(tmp_path_factory, isolation) -> Callable[[str], TracedRun]:
    """The agent run traced once per instrument, when a test first asks for it, its spans sent over OTLP to a
    receiver that writes them both as JSON and as protobuf: the tests of either encoding import the same run (each
    import and replay writes under its own test's tmp_path). A traced run costs seconds."""
    made: dict[str, TracedRun] = {}

    def traced(instrument: str) -> TracedRun:
        if instrument not in made:
            directory = tmp_path_factory.mktemp(instrument)
            with isolation(), FakeProvider() as provider, OtlpFileReceiver(directory / "collector") as collector:
                program, env = run_agent(directory, instrument, provider.url, OTLP=collector.url)
            made[instrument] = TracedRun(program, env, collector, len(provider.requests))
        return made[instrument]

    return traced


@pytest.mark.parametrize("instrument", ["openinference", "genai"])
@pytest.mark.parametrize("encoding", ["json", "proto"])
def test_a_traced_program_imported_from_an_otlp_file_replays_offline(tmp_path, traced_runs, instrument, encoding):
    instrumented(instrument)
    program, env, collector, provider_requests = traced_runs(instrument)
    assert provider_requests == 3
    source = collector.traces if encoding == "json" else collector.proto
    summary = import_trace(str(source), out=tmp_path / "imported", program=program)
    assert (summary["llmCalls"], summary["toolCalls"], summary["hidden"]) == (3, 0, [])

    events = list(CaptureReader(tmp_path / "imported"))
    assert [event["type"] for event in events] == ["run_start"] + ["llm_request", "llm_response"] * 3 + ["run_end"]
    first, answer = events[1]["data"], events[2]["data"]
    assert first["provider"] == "openai" and first["model"] == "gpt-4o-mini" and len(first["cacheKey"]) == 64
    assert first["request"]["messages"][1] == {"role": "user", "content": "where is A-1?"}
    assert first["request"]["temperature"] == 0.2
    assert answer["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert answer["usage"] == {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
    streamed = events[6]["data"]
    assert streamed["response"]["choices"][0]["message"]["content"].strip() == "answer to and the next one?"
    assert streamed["stream"][-1] == {"data": "[DONE]"}
    if instrument == "openinference":  # the request as the program sent it, stream flag included
        assert events[5]["data"]["request"]["stream"] is True and "tools" in events[3]["data"]["request"]
    if encoding == "json":
        assert_replays_offline(tmp_path / "imported", env, tmp_path)
    else:  # the JSON file's capture, event for event: its replays (2 s of CPU each) are the JSON case's
        import_trace(str(collector.traces), out=tmp_path / "from-json", program=program)
        assert_same_capture(tmp_path / "imported", tmp_path / "from-json")


def test_genai_events_sent_as_log_records_are_read_with_their_spans(tmp_path):
    instrumented("genai")
    with FakeProvider() as provider, OtlpFileReceiver(tmp_path / "collector") as collector:
        program, env = run_agent(tmp_path, "genai", provider.url, OTLP=collector.url, OTLP_LOGS=collector.url,
                                 OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="event_only")
    spans_only = import_trace(str(collector.traces), out=tmp_path / "spans-only", program=program)
    assert len(spans_only["hidden"]) == 3  # the messages are in the log records, not on the spans
    collector.proto.unlink()  # the directory the Collector wrote: traces.jsonl and logs.jsonl
    summary = import_trace(str(collector.directory), out=tmp_path / "imported", program=program)
    assert (summary["llmCalls"], summary["hidden"]) == (3, [])
    assert_replays_offline(tmp_path / "imported", {**env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT":
                                                   "event_only"}, tmp_path)


def test_a_trace_with_hidden_inputs_names_its_spans_and_the_replay_reports_them(tmp_path):
    instrumented("openinference")
    with FakeProvider() as provider, OtlpFileReceiver(tmp_path / "collector") as collector:
        program, env = run_agent(tmp_path, "openinference", provider.url, OTLP=collector.url,
                                 OPENINFERENCE_HIDE_INPUTS="true")
    done = run_wop("import", "otel", str(collector.traces), "--out", str(tmp_path / "imported"), "--", sys.executable,
                   str(program))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("hidden in the trace: llm span") == 3 and "input (hidden)" in done.stdout
    manifest = orjson.loads((tmp_path / "imported" / "manifest.json").read_bytes())
    hidden = manifest["imported"]["hidden"]
    assert [span["hidden"] for span in hidden] == [["input (hidden)"]] * 3
    request = list(CaptureReader(tmp_path / "imported"))[1]["data"]["request"]
    assert request["messages"].startswith("(hidden in the trace: span ") and request["messages"] != []

    done, report = replay(tmp_path / "imported", env, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert [span["spanId"] for span in report["hiddenInTrace"]] == [span["spanId"] for span in hidden]
    first = report["divergences"][0]
    assert first["jsonPath"] == "$.messages" and first["expectedValue"].startswith("(hidden in the trace")
    text = run_wop("replay", str(tmp_path / "imported"), "--lenient", "--out", str(tmp_path / "lenient"), env=env,
                   cwd=tmp_path)
    assert "the trace hid the content of 3 spans" in text.stdout
    assert EXPECTED in text.stdout.splitlines()  # lenient: the hidden calls are served by their place


def phoenix_spans(phoenix: str, project: str, expected: int) -> None:
    """Wait until Phoenix has ingested the project's spans."""
    from phoenix.client import Client

    client = Client(base_url=phoenix)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if len(client.spans.get_spans(project_identifier=project, limit=100, timeout=10)) >= expected:
                return
        except Exception:  # the project appears with its first span
            pass
        time.sleep(0.5)
    pytest.fail(f"Phoenix did not show {expected} spans of {project}")


@pytest.mark.parametrize("instrument", ["openinference", "genai"])
def test_a_traced_program_imported_from_phoenix_replays_offline(tmp_path, phoenix, instrument):
    instrumented(instrument)
    project = f"wop-{instrument}-{uuid.uuid4().hex[:8]}"
    with FakeProvider() as provider:
        program, env = run_agent(tmp_path, instrument, provider.url, OTLP=phoenix, PROJECT=project)
    phoenix_spans(phoenix, project, 4)
    summary = import_trace("--phoenix", phoenix, "--project", project, out=tmp_path / "imported", program=program)
    assert (summary["llmCalls"], summary["hidden"]) == (3, [])
    assert_replays_offline(tmp_path / "imported", env, tmp_path)


def test_unreadable_sources_are_one_line_errors(tmp_path):
    cases = {"missing": None, "garbage.jsonl": b"{not json\n", "wrong.json": b'{"resourceSpans": 5}\n',
             "badid.json": b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"00"}]}]}]}\n',
             "empty.pb": b""}
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        done = run_wop("import", "otel", str(path), "--out", str(tmp_path / f"out-{name}"))
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
        assert not (tmp_path / f"out-{name}").exists()
    assert run_wop("import", "otel").returncode == 2
    assert run_wop("import", "otel", "--phoenix", "http://127.0.0.1:9").returncode == 2


INTERNAL_API = """
import os

import httpx
import openai
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider

provider = TracerProvider()
if os.environ.get("OTLP"):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=os.environ["OTLP"] + "/v1/traces")))
OpenAIInstrumentor().instrument(tracer_provider=provider)
client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-otel-0123456789abcdef", max_retries=0)
with provider.get_tracer("agent").start_as_current_span("agent"):
    order = httpx.get(os.environ["API"] + "/orders/A-1").json()
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "user", "content": f"summarize {order['path']}"}])
print(reply.choices[0].message.content)
provider.shutdown()
"""


def test_http_the_trace_does_not_hold_runs_live_and_is_listed(tmp_path):
    instrumented("openinference")
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(INTERNAL_API))
    with FakeProvider() as provider, FakeProvider(prefix="api") as api, \
            OtlpFileReceiver(tmp_path / "collector") as collector:
        traced = _python(program, {"BASE": provider.url, "API": api.url, "OTLP": collector.url})
        assert traced.returncode == 0, traced.stderr
        base = provider.url
        summary = import_trace(str(collector.traces), out=tmp_path / "imported", program=program)
        assert summary["llmCalls"] == 1 and "http" in summary["notInTrace"]
        # the LLM provider is stopped below; the internal API the trace does not hold stays up
    with FakeProvider(prefix="api") as api:
        done, report = replay(tmp_path / "imported", {"BASE": base, "API": api.url}, tmp_path)
        assert len(api.requests) == 1  # the GET ran live
    assert done.returncode == 0, done.stdout + done.stderr
    assert traced.stdout.strip() in done.stderr.splitlines()
    [note] = [note for note in report["notes"] if note["code"] == "not_in_trace"]
    assert note["detail"].startswith("GET http://127.0.0.1:") and "/orders/A-1" in note["detail"]


def test_a_langgraph_trace_from_the_langchain_instrumentation_replays_with_its_tool_listed(tmp_path):
    requires("langgraph")
    requires("langchain_openai")
    requires("openinference.instrumentation.langchain")
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(LANGGRAPH_TRACED))
    with FakeProvider() as provider, OtlpFileReceiver(tmp_path / "collector") as collector:
        traced = _python(program, {"BASE": provider.url, "OTLP": collector.url})
        base = provider.url
    assert traced.returncode == 0, traced.stderr
    summary = import_trace(str(collector.traces), out=tmp_path / "imported", program=program)
    assert (summary["llmCalls"], summary["toolCalls"], summary["hidden"]) == (2, 1, [])
    events = list(CaptureReader(tmp_path / "imported"))
    [tool_call] = [event["data"] for event in events if event["type"] == "tool_call"]
    assert tool_call["name"] == "lookup_order" and tool_call["ifCalled"] is True
    second = [event["data"] for event in events if event["type"] == "llm_request"][1]
    # LangChain's span holds its own messages in input.value: the request is rebuilt from llm.input_messages.*
    assert [message["role"] for message in second["request"]["messages"]] == ["user", "assistant", "tool"]
    assert second["request"]["tools"][0]["function"]["name"] == "lookup_order"

    done, report = replay(tmp_path / "imported", {"BASE": base}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert traced.stdout.strip() in done.stderr.splitlines()
    assert report["score"]["matchedEvents"] == report["score"]["comparedEvents"] == 2
    [note] = [note for note in report["notes"] if note["code"] == "traced_tool_not_called"]
    assert "'lookup_order'" in note["detail"]
    changed, report = replay(tmp_path / "imported", {"BASE": base, "PROMPT": "Where is order B-2?"}, tmp_path)
    assert changed.returncode == 1
    assert report["divergences"][0]["jsonPath"] == "$.messages[0].content"


TRACED_TOOL = """
import os

import openwop_cli as wop
from openinference.instrumentation import OITracer, TraceConfig
from opentelemetry.sdk.trace import TracerProvider

provider = TracerProvider()
if os.environ.get("OTLP"):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=os.environ["OTLP"] + "/v1/traces")))
tracer = OITracer(provider.get_tracer("agent"), config=TraceConfig())


@wop.tool
@tracer.tool
def lookup_order(order_id):
    return {"id": order_id, "status": os.environ.get("STATUS", "shipped")}


with tracer.start_as_current_span("agent", openinference_span_kind="chain"):
    print(lookup_order(order_id="A-1")["status"])
provider.shutdown()
"""


def test_a_traced_tool_is_served_when_the_program_calls_it_through_a_boundary(tmp_path):
    instrumented("openinference")
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(TRACED_TOOL))
    with OtlpFileReceiver(tmp_path / "collector") as collector:
        traced = _python(program, {"OTLP": collector.url})
    assert traced.returncode == 0 and traced.stdout.strip() == "shipped", traced.stderr
    summary = import_trace(str(collector.traces), out=tmp_path / "imported", program=program)
    assert (summary["llmCalls"], summary["toolCalls"]) == (0, 1)
    done, report = replay(tmp_path / "imported", {"STATUS": "lost"}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shipped" in done.stderr.splitlines()  # the traced result, not today's function
    assert report["score"]["matchedEvents"] == 1 and report["notes"] == []


def openinference_span(trace: str, span: str, parent: str | None, text: str) -> dict:
    """An OTLP JSON LLM span as openinference-instrumentation-openai writes one (hand-made, for trace selection)."""
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
    answer = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": f"answer to {text}"}}]}
    attributes = {"openinference.span.kind": "LLM", "llm.system": "openai", "llm.model_name": "gpt-4o-mini",
                  "input.value": orjson.dumps(body).decode(), "output.value": orjson.dumps(answer).decode()}
    return {"traceId": trace, "spanId": span, "parentSpanId": parent or "", "name": "ChatCompletion",
            "startTimeUnixNano": "1763875573000000000", "endTimeUnixNano": "1763875573100000000",
            "attributes": [{"key": key, "value": {"stringValue": value}} for key, value in attributes.items()]}


def test_trace_ids_choose_what_is_imported_and_several_go_to_a_folder_each(tmp_path):
    first, second = "4bf92f3577b34da6a3ce929d0e0e4736", "4c00000000000000000000000000beef"
    spans = [openinference_span(first, "1" * 16, None, "one"), openinference_span(second, "2" * 16, None, "two")]
    source = tmp_path / "traces.jsonl"
    source.write_text(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).decode() + "\n")
    chosen = import_trace(str(source), "--trace-id", "4c00", out=tmp_path / "one", program=tmp_path / "agent.py")
    assert chosen["traceId"] == second and chosen["llmCalls"] == 1
    both = run_wop("import", "otel", str(source), "--out", str(tmp_path / "both"), "--name", "incident", "--json")
    assert both.returncode == 0, both.stderr
    assert [(trace["traceId"], trace["path"], trace["name"]) for trace in orjson.loads(both.stdout)] == [
        (first, str(tmp_path / "both" / first), "incident-4bf92f35"),
        (second, str(tmp_path / "both" / second), "incident-4c000000")]
    for wanted, problem in (("4", "ambiguous"), ("ffff", "no trace ffff")):
        done = run_wop("import", "otel", str(source), "--trace-id", wanted, "--out", str(tmp_path / wanted))
        assert done.returncode == 2 and problem in done.stderr and not (tmp_path / wanted).exists()
