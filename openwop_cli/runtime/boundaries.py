"""The replay side of every SDK boundary: answer a call from the capture, record what today's run did.

Attached to the session as `session.replayer` in a replayed process. For each call it asks the
engine for the recorded unit, records the observed event (with `sourceSeq`, the recorded seq it
was served from) and any divergence, and hands back the recorded result — or, in a fork past the
branch point or for an allowed tool, lets the call run live and records it.

What a call the capture does not have gets (strict stops at it, raising ReplayDivergenceError):
lenient serves the closest recorded call — the next unserved call of the same tool, the next
unserved LLM call — with an event_payload_mismatch; a tool the capture has no more calls of runs
live (the program's own function; outbound network stays blocked); an LLM call with nothing left
to serve raises ReplayDivergenceError, which the program can catch (through an HTTP client it is an
HTTP 400 answer the SDK raises as its own error); a clock/random/uuid value is today's; a state
write is reduced in the program as usual. Each is reported. A recorded exception is raised again as
its own type (runtime.exceptions); one that cannot be rebuilt the same is noted on the observed
result (`errorRebuilt: false`, `errorNote`), and the replay report lists it.
"""

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from openwop_cli.channels.reducers import is_entry
from openwop_cli.format.canonical import content_hash
from openwop_cli.format.credentials import REDACTED
from openwop_cli.format.events import REPLAY_DIVERGED, REPLAY_NOTE
from openwop_cli.format.imported import HTTP, URL, not_in_trace, traced_part, traced_request_fields
from openwop_cli.replay.ambient import AmbientValues
from openwop_cli.replay.divergence import (
    EVENT_MISSING,
    EVENT_PAYLOAD_MISMATCH,
    NONDETERMINISTIC_UNDERFLOW,
    Divergence,
    describe_reader,
    network_blocked,
    observed_event,
    reader_of,
)
from openwop_cli.replay.engine import LENIENT, Match, ReplayEngine
from openwop_cli.replay.errors import ReplayDivergenceError, ServedAnswer
from openwop_cli.replay.keys import KIND_LLM, KIND_STATE, KIND_TOOL, KIND_VALUE, KIND_VERSION
from openwop_cli.replay.telemetry import telemetry_of
from openwop_cli.runtime.callsite import program_site
from openwop_cli.runtime.exceptions import rebuild_exception
from openwop_cli.runtime.lineage import current_pool_task
from openwop_cli.runtime.session import Session, describe_exception
from openwop_cli.wire.jsonable import revive, revive_big_ints, to_json, type_name

TOOL_RAN_LIVE = "tool_ran_live"
TELEMETRY_NOT_COMPARED = "telemetry_not_compared"
TELEMETRY_ACCEPTED = {"status": 202, "headers": {"content-type": "application/json"}, "body": {"status": "ok"}}
NOT_IN_TRACE = "not_in_trace"
READ_PAST_STOP = "read_past_recorded_stop"


class Served:
    """A boundary's answer: a recorded value or error, or `live` (run the real call, then `finish`). seq: the recorded
    call's, when one was served (a tool's)."""

    __slots__ = ("live", "result", "error", "finish", "notes", "seq")

    def __init__(self, result: Any = None, error: BaseException | None = None,
                 finish: Callable[..., None] | None = None) -> None:
        self.live = finish is not None
        self.result = result
        self.error = error
        self.finish = finish
        self.notes: dict[str, Any] | None = None
        self.seq: int | None = None

    def value(self) -> Any:
        """The recorded result, or the recorded exception raised."""
        if self.error is not None:
            raise self.error
        return self.result


def _debuggable(method: Callable[..., Any]) -> Callable[..., Any]:
    """A Replayer call that `wop replay --pdb/--break-at` can stop in: at its divergence, or before it serves SEQ."""

    @functools.wraps(method)
    def call(self: "Replayer", *args: Any, **kwargs: Any) -> Any:
        if self.debugger is None:
            return method(self, *args, **kwargs)
        self._local.match = None
        found = len(self.engine.divergences)
        try:
            result = method(self, *args, **kwargs)
        except ReplayDivergenceError as exc:
            self.debugger.diverged(exc.divergence)
            raise
        if len(self.engine.divergences) > found:
            self.debugger.diverged(self.engine.divergences[found])
        match = self._local.match
        if match is not None and match.unit is not None:
            served = result.result if isinstance(result, Served) else result
            self.debugger.served(match.request_seq, match.result_seq, served)
        return result

    return call


class Replayer:
    """See the module docstring. One per replayed process; safe to call from any thread or task.

    debugger (`wop replay --pdb/--break-at`): a ReplayDebugger that may stop the calling thread in pdb."""

    def __init__(self, session: Session, engine: ReplayEngine, allow_tools: frozenset[str] = frozenset(),
                 debugger: Any = None, recorded_stopped: bool = False) -> None:
        """recorded_stopped: the recorded process this one stands for was killed (manifest `stopped`): what it read
        past its last event is not in the capture."""
        self.session = session
        self.engine = engine
        self.source = engine.source
        self.allow_tools = allow_tools
        self.debugger = debugger
        self._local = threading.local()
        self._lock = threading.RLock()
        self._pending: list[Divergence] = []
        self._source_run = self.source.manifest.get("runId")
        self._fold: Any = None
        self._ambient = AmbientValues(self.source.ambient, engine.from_seq if engine.branch else None,
                                      self.source.stable_origins)
        self._live_diverges = (not engine.branch and self.source.stable_origins
                               and not self.source.manifest.get("imported"))
        self._recorded_stopped = recorded_stopped
        self._past_stop_noted: set[tuple] = set()
        self._workflow_channels: dict[str, Any] | None = None
        self._workflow_reported = False
        self._telemetry_noted: set[tuple[str, str]] = set()
        self._blocked: set[str] = set()
        missing = not_in_trace(self.source.manifest)
        self._traced_fields = traced_request_fields(self.source.manifest)
        self._untraced_url = URL in missing
        self._untraced_http = HTTP in missing  # an imported trace's: run live, noted
        engine.on_divergence = self._pending.append
        engine.caller_origin = session.origin
        engine.caller_pool_task = current_pool_task

    # ---- tools ------------------------------------------------------------------------------

    @_debuggable
    def tool(self, name: str, args: dict[str, Any], kind: str | None = None) -> Served:
        """kind: what recorded the call when it is not `@wop.tool` (`mcp`), on the observed event as in the capture."""
        call_id = self.session.new_call_id("t")
        data = {"name": name, "args": to_json(args), "callId": call_id}
        if kind is not None:
            data["kind"] = kind
        allowed = name in self.allow_tools
        with self._lock:
            match = self._match(KIND_TOOL, "tool_call", data, live_if_unrecorded=allowed)
            if allowed:
                return Served(finish=lambda result=None, error=None: self._finish_allowed_tool(
                    name, call_id, match, result, error))
            if match.live or self._runs_unexpected(match):
                return Served(finish=lambda result=None, error=None: self._record_tool_result(call_id, result, error))
            recorded = self._recorded_result(match, "tool_result")
            served = self._served_result(recorded, "result", "resultType")
            self.session.record("tool_result", {**recorded, **(served.notes or {}), "callId": call_id},
                                match.result_seq)
        served.seq = match.request_seq
        return served

    def _runs_unexpected(self, match: Match) -> bool:
        """Lenient: a tool call the capture has no more calls of runs live (see the module docstring)."""
        return match.unit is None and self.engine.policy == LENIENT and not self.engine.branch

    def _served_result(self, recorded: dict[str, Any], value_key: str, type_key: str) -> Served:
        """The recorded result (revived to its type) or exception (rebuilt); `notes` go on the observed event."""
        if recorded.get("ok") is not False:
            return Served(revive(recorded.get(value_key), recorded.get(type_key)))
        error, note = rebuild_exception(recorded.get("error") or {})
        served = Served(error=error)
        if note is not None:
            served.notes = {"errorRebuilt": False, "errorNote": note}
        return served

    def _record_tool_result(self, call_id: str, result: Any, error: BaseException | None) -> dict[str, Any]:
        if error is not None:
            data = {"callId": call_id, "ok": False, "error": describe_exception(error)}
        else:
            data = {"callId": call_id, "ok": True, "result": result, "resultType": type_name(result)}
        self.session.record("tool_result", data)
        return data

    def _finish_allowed_tool(self, name: str, call_id: str, match: Match, result: Any,
                             error: BaseException | None) -> None:
        """An --allow-tool call ran for real: record its result and put it beside the recorded one (a note)."""
        live = self._record_tool_result(call_id, result, error)
        observed = live.get("result") if live["ok"] else live.get("error")
        if match.unit is None:
            self.note(TOOL_RAN_LIVE, f"--allow-tool {name}: ran for real; the capture has no such call", None,
                      None, to_json(observed))
            return
        recorded: dict[str, Any] = {}
        if match.result_seq is not None:
            recorded = self.source.event(match.result_seq)["data"]
        expected = recorded.get("result") if recorded.get("ok", True) else recorded.get("error")
        same = "the same result as" if to_json(observed) == expected else "a different result than"
        self.note(TOOL_RAN_LIVE, f"--allow-tool {name}: ran for real and returned {same} the recording",
                  match.request_seq, expected, to_json(observed))

    def note(self, code: str, detail: str, seq: int | None, recorded: Any = None, observed: Any = None) -> None:
        """Something the report should say that is not a divergence (a replay_note event)."""
        self.session.record(REPLAY_NOTE, {"code": code, "detail": detail, "eventSeq": seq, "recorded": recorded,
                                          "observed": observed})

    # ---- LLM calls --------------------------------------------------------------------------

    @_debuggable
    def llm(self, context: dict[str, Any], request: dict[str, Any], keys: dict[str, Any],
            sent: bytes | None = None) -> Served:
        """A wop.llm_call: the recorded response (or live, in a fork). sent: the request's JSON, as keying it wrote it."""
        data = self._as_traced({**context, **keys, "request": request})
        with self._lock:
            match = self._match(KIND_LLM, "llm_request", data, sent=sent)
            if match.live:
                return Served(finish=lambda response=None, error=None, awaited=False:
                              self._record_live_llm(data, response, error, awaited))
            recorded = self._recorded_result(match, "llm_response")
            served = self._served_result(recorded, "response", "responseType")
            self.session.record("llm_response", {**recorded, **(served.notes or {}), "callId": context["callId"]},
                                match.result_seq)
        if recorded.get("awaited") and served.error is None:
            served.result = _awaitable(served.result)
        return served

    def _record_live_llm(self, request: dict[str, Any], response: Any, error: BaseException | None,
                         awaited: bool) -> None:
        from openwop_cli.runtime.sdk import llm_response_data

        context = {key: request[key] for key in ("provider", "model", "callId")}
        if error is not None:
            self.session.record("llm_response", {**context, "ok": False, "error": describe_exception(error)})
            return
        data = llm_response_data(context, response, awaited)
        self.session.record("llm_response", data)
        with self._lock:
            self.engine.check_live_llm(request, data["response"])
            self._emit_divergences()

    # ---- HTTP exchanges (the transport adapters) ----------------------------------------------

    @_debuggable
    def exchange(self, is_llm: bool, data: dict[str, Any], sent: bytes | None = None) -> Served:
        """An HTTP request the adapters saw: the recorded response event's data (or, when the request never got
        an answer, its error rebuilt), or live (fork, allowed tool). sent: its JSON body's bytes as sent.

        Raises ReplayDivergenceError when there is nothing to serve.
        """
        kind, request_type, result_type = ((KIND_LLM, "llm_request", "llm_response") if is_llm
                                           else (KIND_TOOL, "tool_call", "tool_result"))
        data = self._as_traced(data) if is_llm else data
        live_http = not is_llm and ("http" in self.allow_tools
                                    or (self._untraced_http and telemetry_of(data) is None))
        with self._lock:
            match = self._match(kind, request_type, data, live_if_unrecorded=live_http, sent=sent)
            if match.live or live_http:
                if not is_llm and match.unit is None and self._untraced_http:
                    args = data.get("args") or {}
                    self.note(NOT_IN_TRACE, f"{args.get('method')} {args.get('url')}: an HTTP request the trace does "
                              "not hold, run live", None)
                return Served(finish=lambda result: self._record_live_exchange(result_type, result, data, is_llm))
            if not is_llm and self._note_telemetry(data) and match.telemetry:
                if match.unit is None:  # never recorded: accepted, as a collector would
                    return Served({"callId": data["callId"], "ok": True, "result": TELEMETRY_ACCEPTED})
            recorded = self._recorded_result(match, result_type)
            self.session.record(result_type, {**recorded, "callId": data["callId"]}, match.result_seq)
        if recorded.get("ok") is False and isinstance(recorded.get("error"), dict):
            error = rebuild_exception(recorded["error"])[0]
            if recorded["error"].get("type") == "CancelledError":  # the program cancelled it (its own timeout)
                error.wop_lasted = self._lasted(match)  # type: ignore[attr-defined]  # exchange.begun_waiting
            return Served(recorded, error=error)
        if recorded.get("streamComplete") is False and "streamError" not in recorded:
            recorded = ServedAnswer(recorded)  # a stream the program stopped reading: for how long it read it
            recorded.lasted = self._lasted(match)
        return Served(recorded)

    def _note_telemetry(self, data: dict[str, Any]) -> bool:
        """True for a telemetry call (replay.telemetry); the first of each service and host is noted: served without
        being compared."""
        found = telemetry_of(data)
        if found is None or found in self._telemetry_noted:
            return found is not None
        self._telemetry_noted.add(found)
        service, host = found
        self.note(TELEMETRY_NOT_COMPARED, f"telemetry to {host} ({service}) is served from the capture without "
                  "comparing its bodies, count or order: ids and times in it change on every run", None)
        return True

    def _as_traced(self, data: dict[str, Any]) -> dict[str, Any]:
        """An LLM request as a capture imported from a trace knows it (format.imported): only the request fields its
        trace says, keyed on those as the import was, and no URL when the trace has none; what it cannot say is kept
        aside on the observed event (`notInTrace`), neither keyed nor compared."""
        if (self._traced_fields is None and not self._untraced_url) or not isinstance(data.get("request"), dict):
            return data
        request = data["request"]
        traced = traced_part(request, self._traced_fields)
        shaped = {**data, "request": traced}
        aside: dict[str, Any] = {}
        if traced is not request:
            from openwop_cli.runtime.providers import kept_request_keys

            shaped.update(kept_request_keys(str(data.get("provider", "")), str(data.get("model", "")), traced,
                                            self.source.redactor))
            aside["request"] = {key: value for key, value in request.items() if key not in traced}
        if self._untraced_url and "http" in shaped:
            aside["http"] = shaped.pop("http")
        if aside:
            shaped["notInTrace"] = aside
        return shaped

    def _lasted(self, match: Match) -> float:
        """How long (seconds) the recorded call lasted, from its request to its answer."""
        return max(0, self.source.event(match.result_seq).get("ts", 0)
                   - self.source.event(match.request_seq).get("ts", 0)) / 1000

    def _record_live_exchange(self, result_type: str, result: dict[str, Any], request: dict[str, Any],
                              is_llm: bool) -> None:
        self.session.record(result_type, result)
        if is_llm and result.get("ok"):
            with self._lock:
                self.engine.check_live_llm(request, result.get("response"))
                self._emit_divergences()

    # ---- values, versions, state --------------------------------------------------------------

    @_debuggable
    def value(self, source: str, key: str, live: Any, encode: Callable[[Any], Any], decode: Callable[[Any], Any]) -> Any:
        data = {"source": source, "key": key, "value": encode(live)}
        with self._lock:
            match = self._match(KIND_VALUE, "nondeterministic", data, record=False)
            if match.has_override:
                recorded_value = to_json(match.override)  # an integer beyond 64 bits: as the capture holds one
            elif match.unit is None:
                recorded_value = data["value"]
            else:
                recorded_value = self.source.event(match.request_seq)["data"].get("value")
            self.session.record("nondeterministic", {**data, "value": recorded_value,
                                                     "valueHash": content_hash(recorded_value)}, match.request_seq)
            self._emit_divergences()
        if match.unit is None and not match.has_override:
            return live
        return decode(revive_big_ints(recorded_value))

    def ambient(self, source: str, key: str, site: dict[str, Any]) -> Any:
        """The next value recorded at this call site for this thread/task (None when none is left), on record."""
        data: dict[str, Any] = {"source": source, "key": key}
        with self._lock:
            seq = self._ambient.take(data, {**self.session.origin(), "site": site})
        if seq is None:
            return None
        data.update(value=self.source.event(seq)["data"].get("value"), ambient=True)
        self.session.record("nondeterministic", data, seq, site=site)
        return data["value"]

    def ambient_live(self, source: str, key: str, site: dict[str, Any], value: Any, recorded: Any = None) -> None:
        """A read served live: on record, and, unless a fork is past its branch point, a divergence when the capture
        has no value at all for this site and thread/task (new or changed code, or another thread reads it today).
        Only a note for the report where this site and thread/task used up its recorded values (a timer's or a
        polling loop's reads, as many as time allows), where the capture cannot say (origins not stable in an older
        capture, an imported trace), or kept the value redacted (`recorded`: what it holds there; the strict
        profile keeps no entropy)."""
        data = {"source": source, "key": key, "value": value, "ambient": True}
        redacted = recorded == REDACTED
        if not self.engine.branch:
            data["live"] = True
            if redacted:
                data["redacted"] = True
        self.session.record("nondeterministic", data, site=site)
        origin = self.session.origin()
        if self._live_diverges and not redacted and not self._ambient.recorded_here(data, {**origin, "site": site}):
            where = f"{site.get('file')}:{site.get('line')} in {site.get('function')}()"
            if self._recorded_stopped:
                self._note_past_stop(source, key, where)
                return
            with self._lock:
                self.engine.report(Divergence(
                    NONDETERMINISTIC_UNDERFLOW, None, "$.value", None, value,
                    f"{source} read {key} at {where} ({describe_reader(reader_of(origin))}) has no recorded value: "
                    "it was read live (new or changed code, or another thread or task reads it today)",
                    "nondeterministic",
                    observed=observed_event("nondeterministic", data), point=self.engine.next_unserved_seq(),
                    site=site))
                self._emit_divergences()

    def _note_past_stop(self, source: str, key: str, where: str) -> None:
        """A live read in a process whose recorded one was killed before the capture had its value: noted once per
        site, no divergence (a terminated pool's worker killed while still importing, or before it sent what it had
        read: the capture cannot say what it read)."""
        with self._lock:
            if (source, key, where) in self._past_stop_noted:
                return
            self._past_stop_noted.add((source, key, where))
        self.note(READ_PAST_STOP, f"{source} read {key} at {where} was read live: the recorded process this one "
                  "stands for was killed (its pool terminated, a signal) before its value reached the capture", None)

    @_debuggable
    def version(self, change_id: str, min_version: int, max_version: int) -> int:
        """getVersion: the recorded choice; one outside today's min..max is a divergence (lenient: the nearest
        version today's code supports)."""
        data = {"source": "version", "key": change_id, "min": min_version, "max": max_version}
        with self._lock:
            match = self._match(KIND_VERSION, "nondeterministic", data, record=False)
            if match.has_override:
                chosen = match.override
            elif match.unit is not None:
                chosen = self.source.event(match.request_seq)["data"].get("value", min_version)
                if isinstance(chosen, int) and not min_version <= chosen <= max_version:
                    try:
                        self.engine.version_out_of_range(match.request_seq, data, chosen)
                    finally:
                        self._emit_divergences()
                    chosen = min(max(chosen, min_version), max_version)
            else:
                chosen = max_version if match.live else min_version
            self.session.record("nondeterministic", {**data, "value": chosen}, match.request_seq)
            self._emit_divergences()
        return chosen

    @_debuggable
    def state(self, data: dict[str, Any], declaration: dict[str, Any]) -> tuple[int, Any]:
        """A state write (a TTL channel's value in the `{value, _ts}` entry shape): matched like any call, and
        checked for the same effect. Returns the epoch-ms time to reduce it with — the recorded write's, so TTL
        pruning in the program goes as in the original run — and, for a write before a replay's --from-seq (fixed
        history), the recorded run's channels or variables as they were right after it (a ChannelStore whose
        state of the channel the program takes instead of reducing the write), else None."""
        data = to_json(data)
        with self._lock:
            match = self._match(KIND_STATE, "state_mutation", data, record=False)
            ts = data["value"].get("_ts") if is_entry(data.get("value")) else None
            if match.unit is not None:
                recorded = self.source.event(match.request_seq)
                ts = _entry_ts(recorded)
                if is_entry(data.get("value")):
                    data["value"] = {**data["value"], "_ts": ts}
            self.session.record("state_mutation", data, match.request_seq, ts=ts)
            self._emit_divergences()
            if match.unit is not None and match.divergence is None:
                try:
                    self._check_state_effect(match.request_seq, data, declaration)
                finally:
                    self._emit_divergences()
            history = self._history_state(match, data)
        return (ts if ts is not None else time.time_ns() // 1_000_000), history

    def _history_state(self, match: Match, data: dict[str, Any]) -> Any:
        """For a write a replay serves as fixed history (before its --from-seq), the recorded state right after it."""
        if self.engine.branch or match.unit is None or match.request_seq >= self.engine.from_seq:
            return None
        fold = self._fold_to(match.request_seq)
        return fold.variables if data.get("kind") == "variable" else fold.channels

    def _check_state_effect(self, seq: int, data: dict[str, Any], declaration: dict[str, Any]) -> None:
        """Same write, same declaration: same state. When today's declaration of the channel differs from the one
        the recorded run had, the write is applied with today's onto the recorded state before it and compared
        with the recorded state after it — how other threads' writes interleave today never matters."""
        from openwop_cli.channels.reducers import ReducerError, effective_reducer, reduce_once, unwrapped

        name = str(data.get("channel"))
        if data.get("kind") != "channel" or declaration == self._recorded_declaration(seq, name):
            return
        before = self._fold_to(seq - 1).channels.value(name)
        expected = self._fold_to(seq).channels.value(name)
        try:
            observed = reduce_once(name, before, unwrapped(data.get("value")),
                                   effective_reducer(data.get("reducer") or declaration.get("reducer") or "replace"),
                                   ts=_entry_ts(self.source.event(seq)), declaration=declaration)
        except ReducerError as exc:
            observed = f"(refused: {exc})"
        self.engine.state_difference(seq, data, expected, observed)

    def _recorded_declaration(self, seq: int, name: str) -> dict[str, Any]:
        """How the recorded run had declared a channel when it wrote it at seq (its pinned workflow, then
        wop.state.declare)."""
        found = self._pinned_channels().get(name)
        for declared_at, channel, declaration in self.source.declarations:
            if declared_at > seq:
                break
            if channel == name:
                found = declaration
        return found if isinstance(found, dict) else {}

    def _fold_to(self, seq: int) -> Any:
        """The recorded run's state folded up to and including seq (declarations from its pinned workflow too)."""
        from openwop_cli.channels.fold import StateFold

        if self._fold is None or self._fold.seq > seq:
            self._fold = StateFold(self._pinned_channels())
        while self._fold.seq < seq:
            self._fold.apply(self.source.event(self._fold.seq + 1))
        return self._fold

    def _pinned_channels(self) -> dict[str, Any]:
        """The channel declarations of the workflow the recorded run pinned (read once)."""
        if self._workflow_channels is None:
            from openwop_cli.runtime.program import pinned_workflow

            workflow = pinned_workflow(self.source.manifest, self.source.blobs)
            channels = workflow.get("channels") if isinstance(workflow, dict) else None
            self._workflow_channels = channels if isinstance(channels, dict) else {}
        return self._workflow_channels

    def workflow(self) -> Any:
        """The workflow document the recorded run pinned, as it was read then (the file may have changed since). A
        pinned document the capture holds only redacted cannot be served as the program got it: a divergence."""
        from openwop_cli.runtime.program import pinned_workflow

        pin = (self.source.manifest.get("program") or {}).get("workflow")
        if isinstance(pin, dict) and pin.get("redacted") is True and not self.engine.branch:
            with self._lock:
                if not self._workflow_reported:
                    self._workflow_reported = True
                    self.engine.report(Divergence(
                        EVENT_PAYLOAD_MISMATCH, None, "$.workflow", None, None,
                        f"the pinned workflow {pin.get('path')!r} held values the capture redacted: the program gets "
                        "the redacted document, not the one the recorded run read", "workflow",
                        point=self.engine.next_unserved_seq()))
                    self._emit_divergences()
        return pinned_workflow(self.source.manifest, self.source.blobs)

    # ---- the network guard ------------------------------------------------------------------

    def network_blocked(self, host: Any, port: Any, site: dict[str, Any] | None) -> None:
        """A connection replay refused (netguard's on_blocked): a divergence of its own, once per destination."""
        destination = f"{host}:{port}"
        with self._lock:
            if destination in self._blocked:
                return
            self._blocked.add(destination)
            self.engine.report(network_blocked(destination, site, self.source.unrecorded_connections.get(destination)))
            self._emit_divergences()

    # ---- plumbing ---------------------------------------------------------------------------

    def _match(self, kind: int, event_type: str, data: dict[str, Any], record: bool = True,
               live_if_unrecorded: bool = False, sent: bytes | None = None) -> Match:
        """engine.match, then the observed event and any divergence on record (also when strict raises)."""
        try:
            match = self.engine.match(kind, data, live_if_unrecorded, sent)
            self._local.match = match
        except ReplayDivergenceError:
            self.session.record(event_type, data)
            self._emit_divergences()
            self.session.flush()
            raise
        if record:
            self.session.record(event_type, data, match.request_seq)
            self._emit_divergences()
        return match

    def _recorded_result(self, match: Match, result_type: str) -> dict[str, Any]:
        """The recorded result event's data to serve; ReplayDivergenceError (a reported divergence: the program gets
        wop's error where the recorded run got an answer, or never returned) when there is none."""
        if match.unservable:  # reported: the recorded answer would reach the program in the wrong shape
            raise ReplayDivergenceError(match.divergence)
        if match.unit is None:
            if not self.engine.divergences:  # matching reported why (an unexpected call); else it is reported here
                self.report(Divergence(EVENT_MISSING, None, None, None, None,
                                       f"the capture has no {result_type} to serve for this call", result_type))
            raise ReplayDivergenceError(self.engine.divergences[-1])
        if match.result_seq is None:
            seq = match.request_seq
            divergence = Divergence(
                EVENT_MISSING, seq, None, None, None,
                f"the recorded call at seq {seq} never returned (the original run ended inside it): there is no "
                f"{result_type} to serve, so this run got wop's replay error instead", result_type,
                self.source.event(seq))
            self.report(divergence)
            raise ReplayDivergenceError(divergence)
        return self.source.event(match.result_seq)["data"]

    def report(self, divergence: Divergence) -> None:
        """A divergence found outside matching (a call wop answers with its replay error): on record, and a strict
        replay stops at it."""
        with self._lock:
            self.engine.report(divergence)
            self._emit_divergences()

    def _emit_divergences(self) -> None:
        if not self._pending:
            return
        pending, self._pending[:] = list(self._pending), []
        site = program_site()
        for divergence in pending:
            divergence.site = divergence.site or site
            data = divergence.to_json()
            data["originalEventId"] = (f"{self._source_run}:{divergence.event_seq}"
                                       if divergence.event_seq is not None else None)
            self.session.record(REPLAY_DIVERGED, data)
        self.session.flush()


def _entry_ts(event: dict[str, Any]) -> int:
    """When a recorded write happened: its TTL entry's `_ts`, else its event's ts."""
    value = event["data"].get("value")
    return value["_ts"] if is_entry(value) else event.get("ts", 0)


async def _awaitable(value: Any) -> Any:
    return value
