"""The replay side of every SDK boundary: answer a call from the capture, record what today's run did.

Attached to the session as `session.replayer` in a replayed process. For each call it asks the
engine for the recorded unit, records the observed event (with `sourceSeq`, the recorded seq it
was served from) and any divergence, and hands back the recorded result — or, in a fork past the
branch point or for an allowed tool, lets the call run live and records it.
"""

import threading
from typing import Any, Callable

from openwop_cli.format.canonical import content_hash
from openwop_cli.format.events import REPLAY_DIVERGED
from openwop_cli.replay.divergence import EVENT_MISSING, Divergence, network_blocked
from openwop_cli.replay.engine import Match, ReplayEngine
from openwop_cli.replay.keys import KIND_LLM, KIND_STATE, KIND_TOOL, KIND_VALUE, KIND_VERSION
from openwop_cli.runtime.jsonable import revive, to_json, type_name
from openwop_cli.runtime.replaying import ReplayDivergenceError, ReplayedToolError
from openwop_cli.runtime.session import Session, describe_exception


class Served:
    """A boundary's answer: a recorded value or error, or `live` (run the real call, then `finish`)."""

    __slots__ = ("live", "result", "error", "finish")

    def __init__(self, result: Any = None, error: BaseException | None = None,
                 finish: Callable[..., None] | None = None) -> None:
        self.live = finish is not None
        self.result = result
        self.error = error
        self.finish = finish

    def value(self) -> Any:
        """The recorded result, or the recorded exception raised."""
        if self.error is not None:
            raise self.error
        return self.result


class Replayer:
    """See the module docstring. One per replayed process; safe to call from any thread or task."""

    def __init__(self, session: Session, engine: ReplayEngine, allow_tools: frozenset[str] = frozenset()) -> None:
        self.session = session
        self.engine = engine
        self.source = engine.source
        self.allow_tools = allow_tools
        self._lock = threading.RLock()
        self._pending: list[Divergence] = []
        self._source_run = self.source.manifest.get("runId")
        self._fold: Any = None
        self._blocked: set[str] = set()
        engine.on_divergence = self._pending.append

    # ---- tools ------------------------------------------------------------------------------

    def tool(self, name: str, args: dict[str, Any]) -> Served:
        call_id = self.session.new_call_id("t")
        data = {"name": name, "args": to_json(args), "callId": call_id}
        with self._lock:
            match = self._match(KIND_TOOL, "tool_call", data)
            if match.live or name in self.allow_tools:
                return Served(finish=lambda result=None, error=None: self._record_tool_result(call_id, result, error))
            recorded = self._recorded_result(match, "tool_result")
            self.session.record("tool_result", {**recorded, "callId": call_id}, match.result_seq)
        if recorded.get("ok") is False:
            return Served(error=rebuild_exception(recorded.get("error") or {}))
        return Served(revive(recorded.get("result"), recorded.get("resultType")))

    def _record_tool_result(self, call_id: str, result: Any, error: BaseException | None) -> None:
        if error is not None:
            self.session.record("tool_result", {"callId": call_id, "ok": False, "error": describe_exception(error)})
        else:
            self.session.record("tool_result", {"callId": call_id, "ok": True, "result": result,
                                                 "resultType": type_name(result)})

    # ---- LLM calls --------------------------------------------------------------------------

    def llm(self, context: dict[str, Any], request: dict[str, Any], cache_key: str | None) -> Served:
        data = {**context, "cacheKey": cache_key, "request": request}
        with self._lock:
            match = self._match(KIND_LLM, "llm_request", data)
            if match.live:
                return Served(finish=lambda response=None, error=None, awaited=False:
                              self._record_live_llm(data, response, error, awaited))
            recorded = self._recorded_result(match, "llm_response")
            self.session.record("llm_response", {**recorded, "callId": context["callId"]}, match.result_seq)
        if recorded.get("ok") is False:
            return Served(error=rebuild_exception(recorded.get("error") or {}))
        response = revive(recorded.get("response"), recorded.get("responseType"))
        return Served(_awaitable(response) if recorded.get("awaited") else response)

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

    def exchange(self, is_llm: bool, data: dict[str, Any]) -> Served:
        """An HTTP request the adapters saw: the recorded response event's data (or, when the request never got
        an answer, its error rebuilt), or live (fork, allowed tool).

        Raises ReplayDivergenceError when there is nothing to serve.
        """
        kind, request_type, result_type = ((KIND_LLM, "llm_request", "llm_response") if is_llm
                                           else (KIND_TOOL, "tool_call", "tool_result"))
        with self._lock:
            match = self._match(kind, request_type, data)
            if match.live or (not is_llm and "http" in self.allow_tools):
                return Served(finish=lambda result: self._record_live_exchange(result_type, result, data, is_llm))
            recorded = self._recorded_result(match, result_type)
            self.session.record(result_type, {**recorded, "callId": data["callId"]}, match.result_seq)
        if recorded.get("ok") is False and isinstance(recorded.get("error"), dict):
            return Served(recorded, error=rebuild_exception(recorded["error"]))
        return Served(recorded)

    def _record_live_exchange(self, result_type: str, result: dict[str, Any], request: dict[str, Any],
                              is_llm: bool) -> None:
        self.session.record(result_type, result)
        if is_llm and result.get("ok"):
            with self._lock:
                self.engine.check_live_llm(request, result.get("response"))
                self._emit_divergences()

    # ---- values, versions, state --------------------------------------------------------------

    def value(self, source: str, key: str, live: Any, encode: Callable[[Any], Any], decode: Callable[[Any], Any]) -> Any:
        data = {"source": source, "key": key, "value": encode(live)}
        with self._lock:
            match = self._match(KIND_VALUE, "nondeterministic", data, record=False)
            if match.has_override:
                recorded_value = match.override
            elif match.unit is None:
                recorded_value = data["value"]
            else:
                recorded_value = self.source.event(match.request_seq)["data"].get("value")
            self.session.record("nondeterministic", {**data, "value": recorded_value,
                                                     "valueHash": content_hash(recorded_value)}, match.request_seq)
            self._emit_divergences()
        if match.unit is None and not match.has_override:
            return live
        return decode(recorded_value)

    def version(self, change_id: str, min_version: int, max_version: int) -> int:
        data = {"source": "version", "key": change_id, "min": min_version, "max": max_version}
        with self._lock:
            match = self._match(KIND_VERSION, "nondeterministic", data, record=False)
            if match.has_override:
                chosen = match.override
            elif match.unit is not None:
                chosen = self.source.event(match.request_seq)["data"].get("value", min_version)
            else:
                chosen = max_version if match.live else min_version
            self.session.record("nondeterministic", {**data, "value": chosen}, match.request_seq)
            self._emit_divergences()
        return chosen

    def state(self, data: dict[str, Any], reduced: Any) -> None:
        """A state write: matched like any call, then the reduced state compared with the recorded run's."""
        data = to_json(data)
        with self._lock:
            match = self._match(KIND_STATE, "state_mutation", data)
            if match.unit is None or match.divergence is not None:
                return
            expected = self._recorded_state(match.request_seq, data)
            try:
                self.engine.state_difference(match.request_seq, data, expected, to_json(reduced))
            finally:
                self._emit_divergences()

    def _recorded_state(self, seq: int, data: dict[str, Any]) -> Any:
        """The recorded run's reduced value of the written channel (or variable) right after seq."""
        from openwop_cli.state.fold import StateFold

        if self._fold is None or self._fold.seq > seq:
            self._fold = StateFold()
        while self._fold.seq < seq:
            self._fold.apply(self.source.event(self._fold.seq + 1))
        if data.get("kind") == "variable":
            return self._fold.variables.value(str(data.get("key")))
        return self._fold.snapshot()["channels"].get(str(data.get("channel")))

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

    def _match(self, kind: int, event_type: str, data: dict[str, Any], record: bool = True) -> Match:
        """engine.match, then the observed event and any divergence on record (also when strict raises)."""
        try:
            match = self.engine.match(kind, data)
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
        if match.unit is None:
            divergence = self.engine.divergences[-1] if self.engine.divergences else None
            raise ReplayDivergenceError(divergence or Divergence(
                EVENT_MISSING, None, None, None, None, f"the capture has no {result_type} to serve for this call"))
        if match.result_seq is None:
            raise ReplayDivergenceError(Divergence(
                EVENT_MISSING, match.request_seq, None, None, None,
                f"the recorded call at seq {match.request_seq} never returned (the original run ended inside it)"))
        return self.source.event(match.result_seq)["data"]

    def _emit_divergences(self) -> None:
        if not self._pending:
            return
        pending, self._pending[:] = list(self._pending), []
        for divergence in pending:
            data = divergence.to_json()
            data["divergencePoint"] = divergence.event_seq
            data["originalEventId"] = (f"{self._source_run}:{divergence.event_seq}"
                                       if divergence.event_seq is not None else None)
            self.session.record(REPLAY_DIVERGED, data)
        self.session.flush()


def rebuild_exception(error: dict[str, Any]) -> BaseException:
    """The recorded exception as its own type when the program has it loaded and it takes a message."""
    import sys

    module = sys.modules.get(str(error.get("module")))
    target: Any = module
    for part in str(error.get("type", "")).split("."):
        target = getattr(target, part, None)
    if isinstance(target, type) and issubclass(target, BaseException):
        try:
            return target(error.get("message", ""))
        except Exception:
            pass
    return ReplayedToolError(error)


async def _awaitable(value: Any) -> Any:
    return value
