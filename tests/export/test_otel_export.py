"""`wop export otel`: captures of real programs sent to a real Arize Phoenix server, read back through Phoenix's
own client (span count, names, parentage, model, token counts, divergence events); a dead endpoint exports nothing;
span statuses as a fake OTLP collector on 127.0.0.1 receives them."""

import os
import sys
import textwrap
import time
import uuid
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import http_server, requires, run_wop, write_capture
from tests.fake_provider import FakeProvider

requires("opentelemetry.exporter.otlp.proto.http")
requires("openai")

AGENT = """
import os
import httpx
import openai
import openwop_cli as wop

client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-otel-0123456789abcdef", max_retries=0)


@wop.tool
def lookup_order(order_id):
    return {"id": order_id, "status": "shipped"}


reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
    {"role": "system", "content": os.environ.get("PROMPT", "Be brief.")},
    {"role": "user", "content": "where is A-1?"}])
stream = client.chat.completions.create(model="gpt-4o-mini", stream=True, messages=[{"role": "user", "content": "more"}])
streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
order = lookup_order("A-1")
page = httpx.get(os.environ["BASE"] + "/orders/A-1").json()
print(reply.choices[0].message.content, streamed, order["status"], page["path"])
"""


def read_spans(phoenix: str, project: str, trace_id: str, expected: int) -> list[dict]:
    """The trace's spans as Phoenix's own client returns them, once Phoenix has ingested all of them."""
    from phoenix.client import Client

    client = Client(base_url=phoenix)
    deadline = time.monotonic() + 60
    while True:
        try:
            spans = client.spans.get_spans(project_identifier=project, trace_ids=[trace_id], limit=1000, timeout=10)
        except Exception:  # the project appears with its first span
            spans = []
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


def flat(attributes: dict, prefix: str = "") -> dict:
    """Phoenix returns attributes nested ({"llm": {"model_name": …}}); dotted names as they were sent."""
    out = {}
    for key, value in attributes.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, name + "."))
        else:
            out[name] = value
    return out


def export(phoenix: str, project: str, *captures: Path) -> list[dict]:
    done = run_wop("export", "otel", *map(str, captures), "--endpoint", phoenix, "--project", project, "--json")
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def capture_agent(tmp_path: Path, base: str) -> Path:
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(AGENT))
    out = tmp_path / "capture"
    done = run_wop("capture", "--name", "otel-agent", "--out", str(out), "--", sys.executable, str(program),
                   env={"BASE": base}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return out


def test_a_captured_run_reads_back_from_phoenix_as_one_trace(tmp_path, phoenix):
    with FakeProvider() as provider:
        capture = capture_agent(tmp_path, provider.url)
    project = f"wop-{uuid.uuid4().hex[:8]}"
    [exported] = export(phoenix, project, capture)
    assert exported["spans"] == 5 and exported["endpoint"] == phoenix + "/v1/traces"

    spans = read_spans(phoenix, project, exported["traceId"], 5)
    assert len(spans) == 5
    by_name: dict[str, list[dict]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    assert sorted(by_name) == ["GET /orders/A-1", "chat gpt-4o-mini", "execute_tool lookup_order", "wop otel-agent"]
    [root] = by_name["wop otel-agent"]
    assert root.get("parent_id") is None and root["span_kind"] == "CHAIN"
    children = [span for span in spans if span is not root]
    assert all(span["parent_id"] == root["context"]["span_id"] for span in children)
    assert all(root["start_time"] <= span["start_time"] <= span["end_time"] <= root["end_time"] for span in children)
    assert [span["span_kind"] for span in by_name["chat gpt-4o-mini"]] == ["LLM", "LLM"]
    assert by_name["execute_tool lookup_order"][0]["span_kind"] == "TOOL"

    first, second = sorted(by_name["chat gpt-4o-mini"], key=lambda span: span["start_time"])
    attributes = flat(first["attributes"])
    assert attributes["llm.model_name"] == "gpt-4o-mini" and attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert attributes["gen_ai.provider.name"] == "openai" and attributes["gen_ai.system"] == "openai"
    assert (attributes["llm.token_count.prompt"], attributes["llm.token_count.completion"],
            attributes["llm.token_count.total"]) == (5, 4, 9)
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (5, 4)
    assert attributes["llm.input_messages.0.message.content"] == "Be brief."
    assert attributes["llm.output_messages.0.message.content"] == "answer to where is A-1?"
    assert "sk-test-otel" not in orjson.dumps(spans).decode()
    assert flat(second["attributes"])["llm.output_messages.0.message.content"].strip() == "answer to more"
    assert flat(root["attributes"])["wop.capture_id"] == exported["captureId"]


def test_call_nesting_and_replay_divergences_reach_phoenix(tmp_path, phoenix):
    nested = write_capture(tmp_path / "nested", [
        ("run_start", {"argv": ["python", "plan.py"]}),
        ("tool_call", {"name": "plan", "args": {"goal": "ship"}, "callId": "t1"}),
        ("llm_request", {"provider": "anthropic", "model": "claude-x", "callId": "l1",
                         "request": {"system": "Plan.", "messages": [{"role": "user", "content": "ship it"}]}}),
        ("llm_response", {"provider": "anthropic", "model": "claude-x", "callId": "l1", "ok": True,
                          "stopReason": "end_turn", "usage": {"input_tokens": 12, "output_tokens": 7},
                          "response": {"content": [{"type": "text", "text": "step 1"}]}}),
        ("tool_result", {"callId": "t1", "ok": True, "result": ["step 1"]}),
        ("state_mutation", {"kind": "variable", "key": "plan", "value": ["step 1"]}),
        ("run_end", {"exitCode": 0, "status": "ok"}),
    ], name="nested")
    with FakeProvider() as provider:
        capture = capture_agent(tmp_path, provider.url)
        base = provider.url
    replay = tmp_path / "replay"
    diverged = run_wop("replay", str(capture), "--lenient", "--out", str(replay), env={"BASE": base,
                                                                                          "PROMPT": "Be warm."},
                       cwd=tmp_path)
    assert diverged.returncode == 1, diverged.stdout + diverged.stderr
    project = f"wop-{uuid.uuid4().hex[:8]}"
    first, second = export(phoenix, project, nested, replay)
    assert first["traceId"] != second["traceId"]

    spans = {span["name"]: span for span in read_spans(phoenix, project, first["traceId"], 3)}
    assert spans["chat claude-x"]["parent_id"] == spans["execute_tool plan"]["context"]["span_id"]
    assert spans["execute_tool plan"]["parent_id"] == spans["wop nested"]["context"]["span_id"]
    llm = flat(spans["chat claude-x"]["attributes"])
    assert llm["llm.input_messages.0.message.content"] == "Plan." and llm["llm.token_count.total"] == 19
    assert [event["name"] for event in spans["wop nested"].get("events", [])] == ["wop.state_mutation"]

    replayed = read_spans(phoenix, project, second["traceId"], second["spans"])
    events = [(span, event) for span in replayed for event in span.get("events", [])
              if event["name"] == "wop.replay.divergence"]
    assert events, "the divergence is a span event"
    span, event = events[0]
    assert span["name"] == "chat gpt-4o-mini" and span["status_code"] == "ERROR"
    details = flat(event["attributes"])
    assert details["wop.code"] == "event_payload_mismatch" and details["wop.jsonPath"] == "$.messages[0].content"
    root = next(span for span in replayed if span.get("parent_id") is None)
    assert root["status_code"] == "ERROR" and flat(root["attributes"])["wop.replay.score"] < 1


def test_an_unreachable_endpoint_exports_nothing_and_exits_2(tmp_path):
    capture = write_capture(tmp_path / "c", [("run_start", {}), ("run_end", {"exitCode": 0})])
    done = run_wop("export", "otel", str(capture), "--endpoint", "http://127.0.0.1:9")
    assert done.returncode == 2
    assert "http://127.0.0.1:9/v1/traces" in done.stderr and "nothing was exported" in done.stderr
    from_env = run_wop("export", "otel", str(capture), env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9/"})
    assert from_env.returncode == 2 and "http://127.0.0.1:9/v1/traces" in from_env.stderr


def test_a_corrupt_capture_is_exit_3_before_anything_is_sent(tmp_path):
    good = write_capture(tmp_path / "good", [("run_start", {}), ("run_end", {"exitCode": 0})])
    bad = write_capture(tmp_path / "bad", [("run_start", {}), ("tool_call", {"name": "x", "callId": "c"}),
                                           ("run_end", {"exitCode": 0})])
    events = bad / "events.jsonl"
    events.write_bytes(events.read_bytes().replace(b'"name":"x"', b'"name":"y"'))
    done = run_wop("export", "otel", str(good), str(bad), "--endpoint", "http://127.0.0.1:9")
    assert done.returncode == 3 and "damaged" in done.stderr


def test_without_the_otel_extra_the_error_names_it(tmp_path):
    shadow = tmp_path / "shadow" / "opentelemetry"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('the otel extra is not installed here')\n")
    capture = write_capture(tmp_path / "c", [("run_start", {}), ("run_end", {"exitCode": 0})])
    done = run_wop("export", "otel", str(capture), env={"PYTHONPATH": str(tmp_path / "shadow") + os.pathsep +
                                                        os.environ.get("PYTHONPATH", "")})
    assert done.returncode == 2 and "pip install 'openwop-cli[otel]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("endpoint", ["ftp://x", "localhost:4318", "http://"])
def test_a_bad_endpoint_is_a_usage_error(tmp_path, endpoint):
    capture = write_capture(tmp_path / "c", [("run_start", {}), ("run_end", {"exitCode": 0})])
    done = run_wop("export", "otel", str(capture), "--endpoint", endpoint)
    assert done.returncode == 2 and "--endpoint" in done.stderr


json_values = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(max_size=6),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=10)
call_data = st.dictionaries(st.sampled_from(["provider", "model", "request", "response", "usage", "ok", "error",
                                             "stopReason", "name", "args", "result", "http", "code", "replayEventId"]),
                            json_values, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(st.tuples(st.sampled_from(["llm_request", "llm_response", "tool_call", "tool_result",
                                                  "state_mutation", "nondeterministic", "replay_diverged"]),
                                 call_data, st.sampled_from(["c1", "c2", None])), max_size=8))
def test_spans_are_built_from_any_event_data_before_the_endpoint_is_tried(tmp_path_factory, events):
    from openwop_cli.errors import CorruptCapture, ExportError
    from openwop_cli.export.otel import export_captures

    capture = write_capture(tmp_path_factory.mktemp("c") / "c", [
        ("run_start", {}), *((kind, {**data, "callId": call_id} if call_id else data) for kind, data, call_id in events),
        ("run_end", {"exitCode": 0})])
    try:
        export_captures([capture], "http://127.0.0.1:9/v1/traces")
    except CorruptCapture:
        return  # a field of the wrong type: the validator refuses the capture (exit 3) before any span is built
    except ExportError as exc:
        assert "nothing was exported" in exc.message
    else:
        pytest.fail("an export to a closed port succeeded")


class FakeCollector:
    """An OTLP/HTTP traces endpoint on 127.0.0.1 keeping the spans it is sent (decoded with opentelemetry-proto), the
    path and Authorization of each request, and answering with status."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[tuple[str, str | None]] = []

    def __enter__(self) -> "FakeCollector":
        from http.server import BaseHTTPRequestHandler

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        collector = self
        self.spans: list = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                collector.requests.append((self.path, self.headers.get("Authorization")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        collector.spans.extend(scope.spans)
                self.send_response(collector.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._serving = http_server(Handler)
        self.url = self._serving.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._serving.__exit__(*exc)


def test_an_http_error_answer_is_a_span_status_with_its_http_status_and_body_not_null(tmp_path):
    headers = {"content-type": "application/json"}
    capture = write_capture(tmp_path / "c", [  # the events wop capture records for these answers (no exception)
        ("run_start", {"argv": ["python", "agent.py"]}),
        ("tool_call", {"name": "http", "callId": "h1", "args": {"method": "GET", "url": "http://api/orders/A-9"}}),
        ("tool_result", {"callId": "h1", "ok": False,
                         "result": {"status": 404, "headers": headers, "body": {"detail": "order A-9 not found"}}}),
        ("llm_request", {"provider": "openai", "model": "gpt-4o-mini", "callId": "llm2",
                         "request": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
                         "http": {"method": "POST", "url": "http://api/v1/chat/completions"}}),
        ("llm_response", {"provider": "openai", "model": "gpt-4o-mini", "callId": "llm2", "ok": False, "status": 429,
                          "headers": headers, "stopReason": None, "usage": None,
                          "response": {"error": {"message": "Rate limit reached"}}}),
        ("tool_call", {"name": "lookup", "callId": "t3", "args": {"id": 1}}),
        ("tool_result", {"callId": "t3", "ok": False, "error": {"type": "KeyError", "message": "'id'"}}),
        ("run_end", {"exitCode": 0, "status": "ok"}),
    ])
    with FakeCollector() as collector:
        done = run_wop("export", "otel", str(capture), "--endpoint", collector.url)
    assert done.returncode == 0, done.stderr
    status = {span.name: (span.status.code, span.status.message) for span in collector.spans}
    error = 2  # STATUS_CODE_ERROR
    assert status["GET /orders/A-9"] == (error, 'HTTP 404 {"detail":"order A-9 not found"}')
    assert status["chat gpt-4o-mini"] == (error, 'HTTP 429 {"error":{"message":"Rate limit reached"}}')
    assert status["execute_tool lookup"] == (error, "KeyError: 'id'")


def test_credentials_in_the_endpoint_are_sent_but_never_printed_and_the_path_goes_before_the_query(tmp_path):
    import base64

    capture = write_capture(tmp_path / "c", [("run_start", {}), ("run_end", {"exitCode": 0})])
    password, key = "Pa55word-never-shown", "K3y-never-shown"
    with FakeCollector() as collector:
        endpoint = collector.url.replace("http://", f"http://user:{password}@") + f"/?api_key={key}"
        done = run_wop("export", "otel", str(capture), "--endpoint", endpoint, "--json")
        shown = run_wop("export", "otel", str(capture), "--endpoint", endpoint)
    assert done.returncode == 0 and shown.returncode == 0, done.stderr
    basic = "Basic " + base64.b64encode(f"user:{password}".encode()).decode()
    assert collector.requests[0] == (f"/v1/traces?api_key={key}", basic)
    assert orjson.loads(done.stdout)[0]["endpoint"] == collector.url.replace("http://", "http://user:***@") + \
        "/v1/traces?api_key=***"
    with FakeCollector(status=400) as refusing:
        refused = run_wop("export", "otel", str(capture), "--endpoint",
                          refusing.url.replace("http://", f"http://user:{password}@") + f"/?api_key={key}")
    unreachable = run_wop("export", "otel", str(capture), "--endpoint", f"http://user:{password}@127.0.0.1:9/?api_key={key}")
    bad = run_wop("export", "otel", str(capture), "--endpoint", f"ftp://user:{password}@h/?api_key={key}")
    from_env = run_wop("export", "otel", str(capture),
                       env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://user:{password}@127.0.0.1:9/base?api_key={key}"})
    assert [run.returncode for run in (refused, unreachable, bad, from_env)] == [2, 2, 2, 2]
    assert "http://user:***@127.0.0.1:9/base/v1/traces?api_key=***" in from_env.stderr
    for run in (done, shown, refused, unreachable, bad, from_env):
        assert password not in run.stdout + run.stderr and key not in run.stdout + run.stderr
