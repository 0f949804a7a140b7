"""OpenTelemetry traces as wop captures, so `wop replay IMPORTED -- CMD` runs today's code against what the model
said in production.

Each trace becomes one capture, its events in the order of their spans' times: the root span's start and end are
the run's; an LLM span (importers.conventions: OpenInference or the GenAI conventions) is an llm_request with the
provider, model, request body and the recipe's cache key, and an llm_response with the answer in the provider's shape,
as one JSON body and as the stream of server-sent events the SDK reads when it streams (a replay serves whichever
today's request asks for); a TOOL span is a tool_call/tool_result that a replay serves when the program makes that
call through a wop boundary (`ifCalled`: never made, it is listed, not missing). An LLM span inside another LLM or
tool span is the call on the wire: the outer one is left out.

A trace wop exported (`wop export otel`) carries every event of its capture whole: it comes back as that capture.

Honest import: a span whose content the trace hid (OpenInference's hide_inputs/hide_outputs, GenAI content capture
off, an attribute cut short) is named in the summary and the manifest (`imported.hidden`), and its events say so: a
hidden request's messages are a note that a replay shows as the recorded value at the divergence, and a hidden answer
is an HTTP error that names the span. Nothing becomes an empty message. What no trace holds (clock, random and uuid
values, the program's output, HTTP it did not trace) is listed in `imported.notInTrace` (format.imported).
"""

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from openwop_cli.errors import BadTrace
from openwop_cli.format import imported as not_in
from openwop_cli.format.events import EVENT_TYPES, LLM_REQUEST, RUN_END, RUN_START
from openwop_cli.importers.conventions import TracedLLM, span_role, traced_llm, traced_tool
from openwop_cli.importers.otlp import Span

OPENAI_SHAPED = frozenset({"openai", "azure", "mistral", "groq", "together", "deepseek", "xai", "fireworks",
                           "openrouter", "perplexity", "cerebras"})
DEFAULT_SERVERS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}
HIDDEN_STATUS = 502
_WOP_EVENT_KEYS = ("wop.run_start_event", "wop.request_event", "wop.result_event", "wop.run_end_event")


@dataclass(slots=True)
class ImportedTrace:
    """One trace written as a capture: where, its final manifest, what it holds, and what the trace hid."""

    path: Path
    manifest: dict[str, Any]
    trace_id: str
    spans: int
    llm_calls: int = 0
    tool_calls: int = 0
    hidden: list[dict[str, Any]] = field(default_factory=list)


def import_traces(source: Any, *, trace_ids: list[str], out: Path | None, store_root: Path, name: str | None,
                  argv: list[str], redact: str) -> Iterator[ImportedTrace]:
    """Write each trace of source (importers.otlp's TraceSource or PhoenixSource; only trace_ids when given, by id or
    unique prefix) as a new capture: in out (one trace) or out/<trace id> (several), else in the store. Each is
    yielded once written (one trace's spans are held at a time); a trace wop cannot read stops the import there."""
    from openwop_cli.format.redact import Redactor

    chosen = _chosen(source.trace_ids(), trace_ids, source.path)
    redactor = Redactor.from_environment(redact)  # one for all: it reads the environment's secrets
    for trace_id in chosen:
        spans = source.spans(trace_id)
        if not spans:
            continue
        target_name = name if len(chosen) == 1 else f"{name or 'trace'}-{trace_id[:8]}"
        target = out if out is not None and len(chosen) == 1 else (out / trace_id if out is not None else None)
        yield write_trace(spans, source=str(source.path), out=target, store_root=store_root, name=target_name,
                          argv=argv, redactor=redactor)


def _chosen(available: list[str], wanted: list[str], where: Any) -> list[str]:
    if not available:
        raise BadTrace(f"{where} holds no spans")
    if not wanted:
        return available
    chosen = []
    for given in wanted:
        prefix = given.lower().replace("-", "")
        matches = [trace_id for trace_id in available if trace_id.startswith(prefix)]
        if not matches:
            raise BadTrace(f"no trace {given} in {where}")
        if len(matches) > 1:
            raise BadTrace(f"trace id {given} is ambiguous in {where}: it starts {len(matches)} traces")
        chosen.append(matches[0])
    return list(dict.fromkeys(chosen))


def write_trace(spans: list[Span], *, source: str, out: Path | None, store_root: Path, name: str | None,
                argv: list[str], redactor: Any) -> ImportedTrace:
    """One trace's spans as a capture (see the module docstring), redacted by redactor (format.redact.Redactor)."""
    from openwop_cli.format.events import new_id
    from openwop_cli.format.sink import CaptureSink

    root = _root(spans)
    exported = _exported_events(spans)
    plan = _WopPlan(root, exported, argv) if exported else _TracePlan(spans, root, argv)
    capture_id = new_id()
    target = out if out is not None else store_root / capture_id
    sink = CaptureSink(target, redactor=redactor, durable=False)
    imported = {"from": "otel", "source": source, "traceId": root.trace_id, "spans": len(spans), **plan.imported}
    sink.start({"captureId": capture_id, "name": name or plan.name or f"trace-{root.trace_id[:8]}",
                "program": _without_pins(plan.program), "imported": imported, **plan.manifest_fields})
    for ts, event_type, data, origin in plan.events:
        sink.append(event_type, data, ts=ts, origin=origin)
    manifest = sink.finalize("error" if plan.failed else "ok", program=_pinned(plan.program, sink.blobs))
    return ImportedTrace(target, manifest, root.trace_id, len(spans), plan.llm_calls, plan.tool_calls,
                         imported.get("hidden", []))


_PIN_KEYS = ("script", "modules", "workflow")


def _without_pins(program: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in program.items() if key not in _PIN_KEYS}


def _pinned(program: dict[str, Any], blobs: Any) -> dict[str, Any]:
    """The program with the pinned files' copies a wop trace carried (export.otel) stored as the capture's blobs;
    a pin that came without its copy is left out."""
    pinned = _without_pins(program)
    for key in _PIN_KEYS:
        pins = program.get(key)
        if pins is None:
            continue
        stored = []
        for pin in pins if isinstance(pins, list) else [pins]:
            if not isinstance(pin, dict) or "copy" not in pin or not isinstance(pin.get("path"), str):
                continue
            copy, encoding = pin["copy"], pin.get("encoding") or "utf-8"
            data = copy.encode() if isinstance(copy, str) and encoding == "utf-8" else orjson.dumps(copy)
            bare = {name: value for name, value in pin.items() if name not in ("copy", "encoding")}
            stored.append({**bare, "blob": blobs.put_ref(data, "utf-8" if encoding == "utf-8" else "json")})
        if stored:
            pinned[key] = stored if isinstance(pins, list) else stored[0]
    return pinned


def _root(spans: list[Span]) -> Span:
    """The run's span: the earliest whose parent is not in the trace."""
    ids = {span.span_id for span in spans}
    roots = [span for span in spans if span.parent_id is None or span.parent_id not in ids]
    return min(roots or spans, key=lambda span: (span.start_ns, span.span_id))


class _TracePlan:
    """The events of a trace made by instrumentations (see the module docstring)."""

    def __init__(self, spans: list[Span], root: Span, argv: list[str]) -> None:
        self.program = {"argv": argv, "cwd": os.getcwd()}
        self.name = None
        self.manifest_fields: dict[str, Any] = {}
        self.llm_calls = self.tool_calls = 0
        self.failed = root.status_code == 2
        hidden: list[dict[str, Any]] = []
        conventions: set[str] = set()
        calls = _calls(spans)
        traced = [(span, traced_llm(span)) if role == "llm" else (span, traced_tool(span)) for span, role in calls]
        for _span, call in traced:
            conventions.add(call.convention)
        fields = _traced_fields([call for _span, call in traced if isinstance(call, TracedLLM)])
        timed: list[tuple[tuple[int, int, int], str, dict[str, Any], dict[str, Any] | None]] = []
        for order, (span, call) in enumerate(traced):
            origin = None
            if isinstance(call, TracedLLM):
                self.llm_calls += 1
                request, response = _llm_events(span, call, self.llm_calls, fields)
            else:
                self.tool_calls += 1
                request, response = _tool_events(span, call, self.tool_calls)
                origin = {"thread": f"traced tool {span.span_id}"}  # a queue of its own: a call the program may not
                # make through a boundary never holds back the calls after it
            if call.hidden:
                hidden.append({"spanId": span.span_id, "name": span.name, "kind": "llm" if isinstance(call, TracedLLM)
                               else "tool", "hidden": call.hidden})
            end = max(span.end_ns, span.start_ns)
            timed.append(((span.start_ns, 1, order), request[0], request[1], origin))
            timed.append(((end, 0 if end > span.start_ns else 2, order), response[0], response[1], origin))
        timed.sort(key=lambda item: item[0])
        start_ms, end_ms = root.start_ns // 1_000_000, max(root.end_ns, root.start_ns) // 1_000_000
        self.events: list[tuple[int, str, dict[str, Any], dict[str, Any] | None]] = [
            (start_ms, RUN_START, {"argv": self.program["argv"], "cwd": self.program["cwd"], "python": None,
                                   "env": []}, None)]
        self.events += [(max(start_ms, min(key[0] // 1_000_000, end_ms)), event_type, data, origin)
                        for key, event_type, data, origin in timed]
        exit_code = root.attributes.get("process.exit.code")
        run_end: dict[str, Any] = {"exitCode": exit_code if type(exit_code) is int else None,
                                   "status": "error" if self.failed else "ok", "durationMs": end_ms - start_ms}
        if self.failed:
            run_end["error"] = root.status_message or "the trace's root span ended with an error"
        self.events.append((end_ms, RUN_END, run_end, None))
        missing = [not_in.AMBIENT, not_in.OUTPUT, not_in.HTTP, not_in.URL]
        self.imported: dict[str, Any] = {"producer": sorted(conventions), "notInTrace": missing, "hidden": hidden,
                                         "llmCalls": self.llm_calls, "toolCalls": self.tool_calls,
                                         "command": _command(root)}
        if fields is not None:
            missing.append(not_in.REQUEST_OPTIONS)
            self.imported["tracedRequestFields"] = sorted(fields)


def _traced_fields(calls: list[TracedLLM]) -> frozenset[str] | None:
    """The request fields the capture's keys and a replay's comparisons cover: every field when each LLM span held its
    whole request, else those that all its spans can say (one capture, one rule: a replay does not know beforehand
    which recorded call today's request is)."""
    partial = [call.traced for call in calls if call.traced is not None]
    if not partial:
        return None
    return frozenset.intersection(*partial)


def _calls(spans: list[Span]) -> list[tuple[Span, str]]:
    """The LLM and tool spans that are calls a replay serves: an LLM span with an LLM span inside it is not (its inner
    one is the call on the wire), nor a tool span with an LLM span inside it (the program makes those calls today)."""
    roles = {span.span_id: span_role(span) for span in spans}
    parents = {span.span_id: span.parent_id for span in spans}
    holds_llm: set[str] = set()
    for span in spans:
        if roles[span.span_id] != "llm":
            continue
        parent, seen = span.parent_id, 0
        while parent is not None and parent in parents and seen < len(spans):
            holds_llm.add(parent)
            parent, seen = parents[parent], seen + 1
    calls = [(span, roles[span.span_id]) for span in spans
             if roles[span.span_id] is not None and span.span_id not in holds_llm]
    calls.sort(key=lambda pair: (pair[0].start_ns, pair[0].end_ns))
    return [(span, role) for span, role in calls if role is not None]


def _command(root: Span) -> list[str]:
    """The command the trace says it ran (process.command_args): for people to read; a replay runs only a command
    given to `wop import otel` or `wop replay`, never one a trace names."""
    args = root.attributes.get("process.command_args")
    return [str(arg) for arg in args] if isinstance(args, list) else []


def _llm_events(span: Span, call: TracedLLM, number: int,
                fields: frozenset[str] | None) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]:
    from openwop_cli.format.cachekey import request_keys

    context = {"provider": call.provider, "model": call.model, "callId": f"llm{number}"}
    request = call.request
    if request is None:
        request = {"model": call.model, **call.options,
                   "messages": f"(hidden in the trace: span {span.span_id} {span.name!r} did not record its input: "
                               f"{', '.join(call.hidden)})"}
        keys: dict[str, Any] = {"cacheKey": None}
    else:
        keys = request_keys(call.provider, call.model, not_in.traced_part(request, fields))
    url = (call.server or DEFAULT_SERVERS.get(call.provider, DEFAULT_SERVERS["openai"])) + _path(call.provider)
    request_data = {**context, **keys, "request": request, "http": {"method": "POST", "url": url},
                    "span": span.span_id}
    return (LLM_REQUEST, request_data), ("llm_response", _answer(span, call, context, request))


def _path(provider: str) -> str:
    return "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"


def _answer(span: Span, call: TracedLLM, context: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The llm_response data: the answer whole and, for an OpenAI-shaped one, as the SSE stream an SDK reads."""
    from openwop_cli.runtime.adapters.sse import openai_chat_events
    from openwop_cli.runtime.providers import stop_reason, usage

    response = call.response
    if response is None:
        message = (f"wop: the trace hid this call's answer (span {span.span_id} {span.name!r}: "
                   f"{', '.join(call.hidden)}); it cannot be served")
        return {**context, "ok": False, "status": HIDDEN_STATUS, "fromTrace": True,
                "headers": {"content-type": "application/json", "x-should-retry": "false"},
                "response": {"error": {"type": "wop_hidden_in_trace", "message": message}}}
    response.setdefault("created", span.end_ns // 1_000_000_000)
    data = {**context, "ok": True, "status": 200, "headers": {"content-type": "application/json"},
            "stopReason": stop_reason(response), "usage": usage(response), "response": response, "fromTrace": True,
            "streamed": call.streamed}
    if call.provider in OPENAI_SHAPED:
        options = request.get("stream_options")
        with_usage = isinstance(options, dict) and options.get("include_usage") is True
        data.update(stream=openai_chat_events(response, with_usage), streamFormat="sse")
    return data


def _tool_events(span: Span, call: Any, number: int) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]:
    call_id = f"t{number}"
    args = call.args if call.args is not None else f"(hidden in the trace: span {span.span_id})"
    result: dict[str, Any] = {"callId": call_id, "ok": call.ok}
    if call.ok:
        result["result"] = call.result
    else:
        result["error"] = {"type": "ToolError", "module": "builtins", "message": call.error, "args": [call.error],
                           "repr": repr(call.error)}
    return ("tool_call", {"name": call.name, "args": args, "callId": call_id, "ifCalled": True,
                          "span": span.span_id}), ("tool_result", result)


# ---- traces wop exported -------------------------------------------------------------------------------------


def _exported_events(spans: list[Span]) -> list[dict[str, Any]]:
    """The whole events a trace from `wop export otel` carries (span attributes and span events), by seq; [] for any
    other trace."""
    events = []
    for span in spans:
        carried = [span.attributes.get(key) for key in _WOP_EVENT_KEYS]
        carried += [event.attributes.get("wop.event") for event in span.events]
        for value in carried:
            if value is not None:
                events.append(_wop_event(value, span))
    events.sort(key=lambda event: event["seq"])
    return events


def _wop_event(value: Any, span: Span) -> dict[str, Any]:
    try:
        event = orjson.loads(value) if isinstance(value, str) else None
    except orjson.JSONDecodeError:
        event = None
    if (not isinstance(event, dict) or event.get("type") not in EVENT_TYPES or type(event.get("seq")) is not int
            or type(event.get("ts")) is not int or not isinstance(event.get("data"), dict)
            or not isinstance(event.get("origin", {}), dict)):
        raise BadTrace(f"span {span.span_id} {span.name!r} carries a wop event that is not whole (cut short?)")
    return event


class _WopPlan:
    """A trace wop exported: its capture's events and the manifest fields it carried."""

    def __init__(self, root: Span, events: list[dict[str, Any]], argv: list[str]) -> None:
        try:
            manifest = orjson.loads(root.attributes.get("wop.manifest") or "{}")
        except orjson.JSONDecodeError:
            raise BadTrace(f"the root span {root.span_id} carries a wop manifest that is not whole") from None
        manifest = manifest if isinstance(manifest, dict) else {}
        carried = manifest.get("program") if isinstance(manifest.get("program"), dict) else {}
        self.program = {**carried, "argv": argv}  # a command runs only when given, never as the trace names it
        self.name = manifest.get("name") if isinstance(manifest.get("name"), str) else None
        self.manifest_fields = {key: manifest[key] for key in ("ambient",) if key in manifest}
        self.events = [(event["ts"], event["type"], event["data"], event.get("origin")) for event in events]
        self.llm_calls = sum(event["type"] == LLM_REQUEST for event in events)
        self.tool_calls = sum(event["type"] == "tool_call" for event in events)
        self.failed = manifest.get("status") == "error"
        self.imported = {"producer": ["wop"], "notInTrace": [not_in.OUTPUT],
                         "capturedFrom": manifest.get("captureId"), "hidden": [],
                         "llmCalls": self.llm_calls, "toolCalls": self.tool_calls, "command": carried.get("argv")}
