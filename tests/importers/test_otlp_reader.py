"""The OTLP reader (importers.otlp) and the conventions reader (importers.conventions) on data from a stranger: any
bytes, any JSON, any attributes give spans or one BadTrace, never another exception; well-formed OTLP JSON reads back
as written, by trace, from a file or a directory."""

import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_cli.errors import BadTrace
from openwop_cli.importers.conventions import span_role, traced_llm, traced_tool
from openwop_cli.importers.otlp import Span, SpanEvent, TraceSource, flat_attributes, phoenix_span

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=3), max_leaves=12)
otlp_keys = st.sampled_from(["resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "parentSpanId", "name",
                             "attributes", "key", "value", "stringValue", "intValue", "arrayValue", "kvlistValue",
                             "values", "events", "startTimeUnixNano", "endTimeUnixNano", "status", "code",
                             "resourceLogs", "scopeLogs", "logRecords", "body", "bytesValue", "timeUnixNano"])
otlp_like = st.recursive(st.none() | st.integers() | st.text(max_size=40) | st.sampled_from(["0" * 32, "ab" * 8]),
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(otlp_keys, inner, max_size=4),
                         max_leaves=25)


def read_all(path: Path) -> list[Span]:
    source = TraceSource(path)
    return [span for trace_id in source.trace_ids() for span in source.spans(trace_id)]


@FAST
@given(data=st.binary(max_size=300))
def test_any_bytes_read_as_spans_or_one_bad_trace(tmp_path, data):
    path = tmp_path / "trace.bin"
    path.write_bytes(data)
    try:
        read_all(path)
    except BadTrace as exc:
        assert "\n" not in exc.message


@FAST
@given(document=otlp_like)
def test_any_json_shaped_like_otlp_reads_as_spans_or_one_bad_trace(tmp_path, document):
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps({"resourceSpans": document}) + "\n" + json.dumps({"resourceLogs": document}) + "\n")
    try:
        for span in read_all(path):
            assert len(span.trace_id) == 32 and len(span.span_id) == 16
    except BadTrace:
        pass


hex_ids = st.binary(min_size=16, max_size=16).map(bytes.hex)
span_ids = st.binary(min_size=8, max_size=8).map(bytes.hex)
scalars = st.one_of(st.text(max_size=20), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.booleans(),
                    st.floats(allow_nan=False, allow_infinity=False))


def any_value(value):
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    return {"stringValue": value}


@FAST
@given(spans=st.lists(st.tuples(hex_ids, span_ids, st.text(max_size=10), st.integers(0, 2**62),
                                st.dictionaries(st.text(min_size=1, max_size=10), scalars | st.lists(scalars, max_size=3),
                                                max_size=4)), min_size=1, max_size=6),
       per_line=st.integers(1, 3), as_directory=st.booleans())
def test_well_formed_otlp_json_reads_back_by_trace(tmp_path, spans, per_line, as_directory):
    documents = []
    for start in range(0, len(spans), per_line):
        batch = [{"traceId": trace, "spanId": span, "name": name, "startTimeUnixNano": str(start_ns),
                  "endTimeUnixNano": start_ns, "attributes": [{"key": key, "value": any_value(value)}
                                                              for key, value in attributes.items()]}
                 for trace, span, name, start_ns, attributes in spans[start:start + per_line]]
        documents.append({"resourceSpans": [{"scopeSpans": [{"spans": batch}]}]})
    folder = tmp_path / f"traces-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    if as_directory:
        for index, document in enumerate(documents):
            (folder / f"{index}.json").write_text(json.dumps(document, indent=1))  # one document over lines
        source = TraceSource(folder)
    else:
        (folder / "traces.jsonl").write_text("".join(json.dumps(document) + "\n" for document in documents))
        source = TraceSource(folder / "traces.jsonl")
    assert source.trace_ids() == list(dict.fromkeys(trace for trace, *_ in spans))
    for trace_id in source.trace_ids():
        read = sorted(((span.span_id, span.name, span.start_ns, span.attributes) for span in source.spans(trace_id)),
                      key=repr)
        written = sorted(((span, name, start_ns, attributes) for trace, span, name, start_ns, attributes in spans
                          if trace == trace_id), key=repr)
        assert read == written


def test_protobuf_files_read_whole_or_as_the_file_exporter_s_length_prefixed_messages(tmp_path):
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    messages = []
    for index in range(3):
        data = TracesData()
        span = data.resource_spans.add().scope_spans.add().spans.add()
        span.trace_id, span.span_id, span.name = bytes([index + 1]) * 16, bytes([index + 1]) * 8, f"span {index}"
        span.attributes.add(key="n", value={"int_value": index})
        messages.append(data.SerializeToString())
    (tmp_path / "one.pb").write_bytes(messages[0])
    (tmp_path / "many.pb").write_bytes(b"".join(struct.pack(">I", len(message)) + message for message in messages))
    assert [span.name for span in read_all(tmp_path / "one.pb")] == ["span 0"]
    many = read_all(tmp_path / "many.pb")
    assert [(span.name, span.attributes) for span in many] == [(f"span {index}", {"n": index}) for index in range(3)]


@FAST
@given(span=st.dictionaries(st.sampled_from(["context", "name", "start_time", "end_time", "parent_id", "span_kind",
                                              "attributes", "events", "status_code"]), json_values, max_size=9))
def test_any_phoenix_span_reads_or_is_one_bad_trace(span):
    try:
        phoenix_span(span)
    except BadTrace:
        pass


@FAST
@given(flat=st.dictionaries(st.from_regex(r"[a-z]{1,4}(\.[a-z0-9]{1,4}){0,3}", fullmatch=True), scalars, max_size=6))
def test_flat_attributes_undo_phoenix_s_nesting(flat):
    nested: dict = {}
    for key, value in flat.items():
        parts, place = key.split("."), nested
        if any(not isinstance(place := place.setdefault(part, {}), dict) for part in parts[:-1]):
            return  # a name that is also another's prefix cannot nest
        if parts[-1] in place:
            return
        place[parts[-1]] = value
    assert flat_attributes(nested) == flat


attribute_names = st.sampled_from([
    "input.value", "output.value", "llm.input_messages.0.message.role", "llm.input_messages.0.message.content",
    "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments", "llm.output_messages.0.message.content",
    "llm.invocation_parameters", "llm.tools.0.tool.json_schema", "llm.token_count.prompt", "llm.provider",
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions", "gen_ai.request.temperature",
    "gen_ai.system_instructions", "gen_ai.prompt.0.content", "gen_ai.completion.0.content", "tool.name",
    "gen_ai.tool.call.arguments", "gen_ai.request.model", "llm.model_name"])
attribute_values = st.one_of(json_values, json_values.map(json.dumps), st.just("__REDACTED__"))


@FAST
@given(attributes=st.dictionaries(attribute_names, attribute_values, max_size=8),
       kind=st.sampled_from([{"openinference.span.kind": "LLM"}, {"openinference.span.kind": "TOOL"},
                             {"gen_ai.operation.name": "chat"}, {"gen_ai.operation.name": "execute_tool"}]),
       bodies=st.lists(json_values, max_size=2))
def test_any_llm_or_tool_span_is_read_without_raising(attributes, kind, bodies):
    events = [SpanEvent(name, 1, {"body": body}) for name, body in zip(["gen_ai.user.message", "gen_ai.choice"], bodies)]
    span = Span("0" * 32, "1" * 16, None, "call", 1, 2, {**attributes, **kind}, events)
    role = span_role(span)
    call = traced_llm(span) if role == "llm" else traced_tool(span)
    if role == "llm":
        assert call.request is None or isinstance(call.request.get("messages"), list)
        assert call.request is not None or call.hidden  # never an empty request without saying why
        assert call.response is not None or call.hidden


@pytest.mark.parametrize("value, expected", [
    ({"stringValue": "x"}, "x"), ({"intValue": "12"}, 12), ({"intValue": 12}, 12), ({"boolValue": True}, True),
    ({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}, ["a", 1]),
    ({"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}, {"k": "v"}),
    ({"bytesValue": "AAE="}, b"\x00\x01"),
])
def test_any_value_forms(tmp_path, value, expected):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "a" * 32, "spanId": "b" * 16, "startTimeUnixNano": "1", "endTimeUnixNano": "2",
         "attributes": [{"key": "x", "value": value}]}]}]}]}))
    [span] = read_all(path)
    assert span.attributes == {"x": expected}


def test_too_deep_values_and_too_many_files_are_refused(tmp_path, monkeypatch):
    value: dict = {"stringValue": "x"}
    for _ in range(40):
        value = {"arrayValue": {"values": [value]}}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "a" * 32, "spanId": "b" * 16, "startTimeUnixNano": "1", "endTimeUnixNano": "2",
         "attributes": [{"key": "x", "value": value}]}]}]}]}))
    with pytest.raises(BadTrace, match="nested deeper"):
        read_all(path)
    monkeypatch.setattr("openwop_cli.importers.otlp.MAX_FILES", 2)
    folder = tmp_path / "many"
    folder.mkdir()
    for index in range(3):
        (folder / f"{index}.json").write_text("{}")
    with pytest.raises(BadTrace, match="at most 2"):
        TraceSource(folder)
