"""The replay engine: matches each call the program makes today against the capture and reports divergences.

Matching is by content key through an index (never a scan). Order is enforced per origin: a
recorded unit can be served once every earlier unit of the same process/thread/task that did not
overlap it in time has been served, so thread and task scheduling can never fail a strict replay,
while two sequential calls made in swapped order do. A pool task (runtime.pooltasks) is an origin of
its own: its calls are served, in their order, to whichever worker runs it today.

Policies: strict raises ReplayDivergenceError at the first divergence (and at every call after
it); lenient records every divergence and serves the closest recorded unit so the run goes on
(a call of a kind the capture has no more of is left to the boundary: see runtime.boundaries).
`from_seq` (replay mode) leaves units before it unchecked. Branch mode (fork) serves matching units
before `from_seq` and lets everything else run live.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openwop_cli.channels.reducers import legacy_reducer, unwrapped
from openwop_cli.format.events import moves_between_processes
from openwop_cli.replay.compare import changes_shape, request_difference, shape_difference
from openwop_cli.replay.divergence import (
    EVENT_PAYLOAD_MISMATCH,
    EVENT_TYPE_MISMATCH,
    EVENT_UNEXPECTED,
    NONDETERMINISTIC_UNDERFLOW,
    REFUSAL_DIVERGENCE,
    Divergence,
    describe_reader,
    event_summary,
    first_difference,
    observed_event,
    reader_of,
    refusal_nature,
)
from openwop_cli.replay.errors import ReplayDivergenceError
from openwop_cli.replay.keys import KIND_LLM, KIND_STATE, KIND_TOOL, KIND_VALUE, KIND_VERSION, unit_key
from openwop_cli.replay.source import ReplaySource, origin_key
from openwop_cli.replay.telemetry import telemetry_of
from openwop_cli.wire.jsonable import json_form

STRICT, LENIENT = "strict", "lenient"
_EVENT_TYPES = {KIND_TOOL: "tool_call", KIND_LLM: "llm_request", KIND_VALUE: "nondeterministic",
                KIND_VERSION: "nondeterministic", KIND_STATE: "state_mutation"}


@dataclass(slots=True)
class Match:
    """What the engine decided for one call: the recorded unit to serve (None: nothing to serve)."""

    unit: int | None
    request_seq: int | None = None
    result_seq: int | None = None
    divergence: Divergence | None = None
    live: bool = False
    override: Any = None
    has_override: bool = False
    unservable: bool = False  # the recorded answer has another shape than today's call expects (replay.compare)
    telemetry: bool = False  # a telemetry call served again, or with no recording at all (replay.telemetry)


class ReplayEngine:
    """See the module docstring. on_divergence is called with each divergence as it is found."""

    def __init__(
        self,
        source: ReplaySource,
        *,
        policy: str = STRICT,
        from_seq: int = 0,
        branch: bool = False,
        overrides: dict[str, Any] | None = None,
        on_divergence: Callable[[Divergence], None] = lambda divergence: None,
        live_after_mismatch: bool = False,
    ) -> None:
        """live_after_mismatch (a fork with --edit): serve every call that still matches the capture; from the
        first that does not, run everything live (or, with a strict policy, stop there: --offline)."""
        self.source = source
        self.policy = policy
        self.from_seq = from_seq
        self.branch = branch
        self.live_after_mismatch = live_after_mismatch
        self.went_live = False
        self.overrides = overrides or {}
        self.on_divergence = on_divergence
        self.divergences: list[Divergence] = []
        self.stopped: Divergence | None = None
        count = source.unit_count()
        self._consumed = bytearray(count)
        self._by_key: dict[int | tuple[int, str], list[int]] = {}  # by content key, and by (key, pool task)
        self._key_start: dict[int | tuple[int, str], int] = {}
        self._by_kind: dict[Any, list[int]] = {}
        self._kind_start: dict[Any, int] = {}
        self._origin_units: dict[int, list[int]] = {}
        self._origin_head: dict[int, int] = {}
        self._unserved_start = 0
        self.caller_origin: Callable[[], dict[str, Any]] | None = None  # who is calling now (set by the replayer)
        self.caller_pool_task: Callable[[], str | None] = lambda: None  # the pool task calling now (the replayer's)
        self._origins_by_name: dict[tuple, list[int]] = {}
        self._by_key_origin: dict[tuple[int, int], list[int]] = {}
        for key, number in source.origin_ids.items():
            self._origins_by_name.setdefault(key[1:], []).append(number)
        pool_tasks = source.pool_task_origins
        for unit in range(count):
            kind_and_name = _kind_and_name(source.kinds[unit], source.names[unit])
            task = pool_tasks.get(source.origins[unit]) if pool_tasks else None
            if task is None or not moves_between_processes(task):  # a process pool's: only for the worker running it
                self._by_key.setdefault(source.keys[unit], []).append(unit)
                self._by_kind.setdefault(kind_and_name, []).append(unit)
            if task is not None:
                self._by_key.setdefault((source.keys[unit], task), []).append(unit)
                self._by_kind.setdefault((kind_and_name, task), []).append(unit)
            if source.telemetry[unit]:  # served in any order, as often as asked (replay.telemetry)
                continue
            self._origin_units.setdefault(source.origins[unit], []).append(unit)

    # ---- the one entry point of every boundary ----------------------------------------------

    def match(self, kind: int, data: dict[str, Any], live_if_unrecorded: bool = False,
              sent: bytes | None = None) -> Match:
        """Find the recorded unit for a call made today; raise ReplayDivergenceError when strict says stop.

        live_if_unrecorded (an allowed tool): a call the capture has no counterpart for runs live, no divergence.
        sent: an LLM request's body as the program sent it, when an HTTP adapter has it (replay.compare)."""
        if self.stopped is not None:
            raise ReplayDivergenceError(self.stopped, after_stop=True)
        override = self._override(kind, data)
        if self.went_live:
            return Match(None, live=True, **override)
        keys = self._keys(self._content_key(kind, data))
        own = self._own_unit(kind, keys[-1])
        if own is not None:
            return self._serve(own, self._difference(kind, data, own, sent), override)
        for key in keys:
            unit = self._available(key)
            if unit is not None:
                return self._serve(unit, self._difference(kind, data, unit, sent), override)
        for key in keys:
            waiting = self._first_unconsumed(self._by_key, self._key_start, key)
            if waiting is not None and self._servable(waiting):
                return self._serve(waiting, self._out_of_order(kind, data, waiting), override)
        if kind == KIND_TOOL and telemetry_of(data) is not None:
            return self._telemetry_again(keys[-1], override)
        if self.live_after_mismatch:
            return self._go_live(kind, data, override)
        if self.branch:
            return Match(None, live=True, **override)
        return self._unmatched(kind, data, override, live_if_unrecorded)

    def _telemetry_again(self, key: int, override: dict[str, Any]) -> Match:
        """A telemetry call the capture has no unserved one for: the last recorded answer of its service and host
        again (how many batches a library sends depends on timing), or none (the boundary answers it itself)."""
        units = self._by_key.get(key)
        if not units:
            return Match(None, telemetry=True, **override)
        result_seq = self.source.result_seqs[units[-1]]
        return Match(units[-1], self.source.request_seqs[units[-1]], result_seq if result_seq >= 0 else None,
                     telemetry=True, **override)

    def _content_key(self, kind: int, data: dict[str, Any]) -> int:
        """The key today's call is looked up by: as ReplaySource.unit_key makes the recorded ones, a keyed value's
        by the origin asking for it."""
        if kind == KIND_VALUE and self.caller_origin is not None:
            return self.source.unit_key(kind, data, self.caller_origin())
        return unit_key(kind, data, self.source.redactor)

    def _own_unit(self, kind: int, key: int) -> int | None:
        """The caller's own recorded unit for this content key, when other threads or tasks recorded the same one
        too (four threads each appending "tick"): each is served its own writes in its own order, so equal calls
        made concurrently replay in whatever order threads make them today."""
        if kind == KIND_VALUE or self.caller_origin is None or not self.source.stable_origins:
            return None
        units = self._by_key.get(key)
        if units is None or len(units) < 2:
            return None
        origins = self._origins_by_name.get(origin_key(self.caller_origin())[1:])
        if not origins or len(origins) > 1:
            return None
        own = self._own_units(key, origins[0])
        if len(own) == len(units):  # nobody else recorded it: the usual lookup finds the same
            return None
        return self._available((key, "origin", origins[0]), units=own)

    def _own_units(self, key: int, origin: int) -> list[int]:
        found = self._by_key_origin.get((key, origin))
        if found is None:
            found = self._by_key_origin[key, origin] = [unit for unit in self._by_key[key]
                                                         if self.source.origins[unit] == origin]
        return found

    def _keys(self, key: Any) -> tuple[Any, ...]:
        """Where to look for a call's recorded unit (by content, or by kind for the closest): a pool task's own calls
        first (whichever worker runs it), then any of this process's own threads (a thread pool's task numbered
        differently today: submitted from racing threads); never another process pool task's."""
        if self.source.pool_task_origins:
            task = self.caller_pool_task()
            if task is not None:
                return (key, task), key
        return (key,)

    def check_live_llm(self, request: dict[str, Any], response: Any) -> None:
        """Branch mode: a live LLM answer vs the recorded one for the same request — refusal shifts are reported."""
        unit = self._first_unconsumed(self._by_key, self._key_start, unit_key(KIND_LLM, request, self.source.redactor))
        if unit is None or self.source.result_seqs[unit] < 0:
            return
        recorded = self.source.event(self.source.result_seqs[unit])
        original, today = refusal_nature(recorded["data"].get("response")), refusal_nature(response)
        if original != today:
            self._diverge(Divergence(
                REFUSAL_DIVERGENCE, self.source.request_seqs[unit], "$.response", original, today,
                f"the original run got a {original} answer here, the live run a {today}", "llm_request",
                recorded, observed_event("llm_response", {"response": response})))

    def version_out_of_range(self, seq: int, data: dict[str, Any], chosen: Any) -> None:
        """getVersion: the recorded choice is outside the range today's code supports (min..max)."""
        if not is_checked(seq, self.from_seq, self.branch):
            return
        self._diverge(Divergence(
            EVENT_PAYLOAD_MISMATCH, seq, "$.value", chosen, {"min": data.get("min"), "max": data.get("max")},
            f"the recorded run took version {chosen} of {data.get('key')!r}; today's code supports only "
            f"{data.get('min')}..{data.get('max')}", "nondeterministic", self.source.event(seq),
            observed_event("nondeterministic", self._kept(data))))

    # ---- decisions -------------------------------------------------------------------------

    def _serve(self, unit: int, divergence: Divergence | None, override: dict[str, Any]) -> Match:
        self._consumed[unit] = 1
        if divergence is not None:
            self._diverge(divergence)
        result_seq = self.source.result_seqs[unit]
        unservable = divergence is not None and divergence.code == EVENT_PAYLOAD_MISMATCH and \
            changes_shape(divergence.json_path)
        return Match(unit, self.source.request_seqs[unit], result_seq if result_seq >= 0 else None, divergence,
                     unservable=unservable, **override)

    def _go_live(self, kind: int, data: dict[str, Any], override: dict[str, Any]) -> Match:
        """The first call of an edited fork that the capture cannot answer: say how it differs, then run live."""
        self.went_live = True
        event_type = _EVENT_TYPES[kind]
        observed = observed_event(event_type, self._kept(data))
        expected = self._closest(kind, _name_of(kind, data))
        if expected is not None:
            seq = self.source.request_seqs[expected]
            recorded = self.source.event(seq)
            path, was, now = first_difference(_comparable(kind, recorded["data"]), _comparable(kind, self._kept(data)))
            divergence = Divergence(EVENT_PAYLOAD_MISMATCH, seq, path, was, now,
                                    f"this {event_type} differs from the one recorded at seq {seq}: from here the "
                                    "run goes its own way", event_type, recorded, observed)
        else:
            divergence = Divergence(EVENT_UNEXPECTED, None, None, None, None,
                                    f"the recorded run made no such {event_type}: from here the run goes its own way",
                                    event_type, observed=observed, point=self.next_unserved_seq())
        self._diverge(divergence)
        return Match(None, live=True, **override)

    def _unmatched(self, kind: int, data: dict[str, Any], override: dict[str, Any], live_if_unrecorded: bool) -> Match:
        event_type = _EVENT_TYPES[kind]
        observed = observed_event(event_type, self._kept(data))
        if kind == KIND_VERSION:
            return Match(None, **override)
        if kind == KIND_VALUE:
            elsewhere = self._value_of_another_origin(data)
            if elsewhere is not None:
                return self._serve(elsewhere, self._other_origin(data, elsewhere), override)
            detail = (f"the program asked for more {data.get('source')} values with key {data.get('key')!r} "
                      "than the capture holds")
            self._diverge(Divergence(NONDETERMINISTIC_UNDERFLOW, None, "$.key", None, data.get("key"), detail,
                                     event_type, observed=observed, point=self.next_unserved_seq()))
            return Match(None, live=True, **override)
        expected = self._closest(kind, _name_of(kind, data))
        if expected is not None and self._checked(expected):
            seq = self.source.request_seqs[expected]
            recorded = self.source.event(seq)
            path, was, now = (kind == KIND_LLM and shape_difference(recorded["data"], data)) or \
                first_difference(_comparable(kind, recorded["data"]), _comparable(kind, self._kept(data)))
            divergence = Divergence(EVENT_PAYLOAD_MISMATCH, seq, path, was, now,
                                    f"this {event_type} differs from the one recorded at seq {seq}", event_type,
                                    recorded, observed)
            return self._serve(expected, divergence, override)
        if expected is not None:
            return self._serve(expected, None, override)
        if live_if_unrecorded:
            return Match(None, live=True, **override)
        other = self._first_unconsumed_any() if kind == KIND_LLM else None
        if other is not None and self._checked(other):
            seq = self.source.request_seqs[other]
            recorded_type = _EVENT_TYPES[self.source.kinds[other]]
            self._diverge(Divergence(EVENT_TYPE_MISMATCH, seq, "$.type", recorded_type, event_type,
                                     f"the program made a {event_type} where the capture has a {recorded_type} "
                                     f"(seq {seq})", event_type, self.source.event(seq), observed))
        else:
            self._diverge(Divergence(EVENT_UNEXPECTED, None, None, None, None,
                                     _unexpected_detail(kind, data, self.policy == LENIENT), event_type,
                                     observed=observed, point=self.next_unserved_seq()))
        return Match(None, **override)

    def _value_of_another_origin(self, data: dict[str, Any]) -> int | None:
        """A keyed value still unserved that another thread or task read in the capture (it found none of its own)."""
        if self.caller_origin is None or not self.source.stable_origins:
            return None
        unit = self._first_unconsumed(self._by_kind, self._kind_start, _kind_and_name(KIND_VALUE, data.get("key")))
        if unit is None or not self._checked(unit):
            return None
        return unit if self.source.event(self.source.request_seqs[unit])["data"].get("source") == data.get("source") \
            else None

    def _other_origin(self, data: dict[str, Any], unit: int) -> Divergence:
        """A keyed value served to another thread or task than the one that read it in the capture."""
        seq = self.source.request_seqs[unit]
        recorded = self.source.event(seq)
        was, now = reader_of(recorded.get("origin") or {}), reader_of(self.caller_origin() if self.caller_origin else {})
        return Divergence(EVENT_PAYLOAD_MISMATCH, seq, "$.origin", was, now,
                          f"the {data.get('source')} value {data.get('key')!r} recorded at seq {seq} was read by "
                          f"{describe_reader(was)}; today {describe_reader(now)} asks for it (it has none of its "
                          "own left)", "nondeterministic", recorded, observed_event("nondeterministic", self._kept(data)))

    def state_difference(self, seq: int, data: dict[str, Any], expected: Any, observed: Any) -> None:
        """Observable state determinism: the channel's value after a matched write, as today's reducer and
        declaration make it, must be the recorded one."""
        if self.branch or seq < self.from_seq:
            return
        path, was, now = first_difference(expected, observed)
        if path is None:
            return
        channel = str(data.get("channel", data.get("key")))
        where = "variables" if data.get("kind") == "variable" else "channels"
        prefix = f"$.{where}.{channel}" if channel.isidentifier() else f"$.{where}[{channel!r}]"
        self._diverge(Divergence(EVENT_PAYLOAD_MISMATCH, seq, prefix + path[1:], was, now,
                                 f"after this write {channel!r} holds a different value than in the recorded run "
                                 "(same input, different reducer or declaration)", "state_mutation",
                                 self.source.event(seq), observed_event("state_mutation", self._kept(data))))

    def _difference(self, kind: int, data: dict[str, Any], unit: int, sent: bytes | None = None) -> Divergence | None:
        """What differs between a call and the recorded one its content key found: an LLM request beyond the key's
        fields (replay.compare), a state write's reducer."""
        if kind == KIND_LLM:
            return self._request_difference(data, unit, sent)
        if kind == KIND_STATE:
            return self._state_difference(data, unit)
        return None

    def _request_difference(self, data: dict[str, Any], unit: int, sent: bytes | None) -> Divergence | None:
        if not self._checked(unit):
            return None
        seq = self.source.request_seqs[unit]
        found = request_difference(self.source.line(seq), lambda: self.source.event(seq)["data"], data,
                                   self.source.redactor, sent)
        if found is None:
            return None
        path, was, now = found
        shape = " (the recorded answer has another shape: it is not served)" if changes_shape(path) else ""
        return Divergence(EVENT_PAYLOAD_MISMATCH, seq, path, was, now,
                          f"the llm_request recorded at seq {seq} has the same cache key, but today's request differs "
                          f"at {path}{shape}", "llm_request", json_form(self.source.event(seq)),
                          observed_event("llm_request", self._kept(json_form(data))))

    def _state_difference(self, data: dict[str, Any], unit: int) -> Divergence | None:
        """A state write matches its recorded write by channel and value; its reducer must match too."""
        if not self._checked(unit):
            return None
        seq = self.source.request_seqs[unit]
        recorded = self.source.event(seq)
        path, was, now = first_difference(_comparable(KIND_STATE, recorded["data"]), _comparable(KIND_STATE, self._kept(data)))
        if path is None:
            return None
        return Divergence(EVENT_PAYLOAD_MISMATCH, seq, path, was, now,
                          f"the write to {data.get('channel', data.get('key'))!r} differs from the one recorded "
                          f"at seq {seq}", "state_mutation", recorded, observed_event("state_mutation", self._kept(data)))

    def _out_of_order(self, kind: int, data: dict[str, Any], unit: int) -> Divergence | None:
        if not self._checked(unit):
            return None
        head = self._origin_head_unit(self.source.origins[unit])
        seq, head_seq = self.source.request_seqs[unit], self.source.request_seqs[head]
        head_type = _EVENT_TYPES[self.source.kinds[head]]
        recorded = self.source.event(head_seq)
        code = EVENT_PAYLOAD_MISMATCH if self.source.kinds[head] == kind else EVENT_TYPE_MISMATCH
        return Divergence(code, head_seq, "$", event_summary(head_type, recorded["data"]),
                          event_summary(_EVENT_TYPES[kind], self._kept(data)),
                          f"calls out of order: this {_EVENT_TYPES[kind]} was recorded at seq {seq}, after the "
                          f"{head_type} at seq {head_seq} that has not been made yet", _EVENT_TYPES[kind],
                          recorded, observed_event(_EVENT_TYPES[kind], self._kept(data)))

    def _kept(self, data: Any) -> Any:
        """Today's call as the capture would keep it (its redactor): what a divergence compares and shows, so a secret
        is neither the difference found nor printed (built only where a divergence is)."""
        redactor = self.source.redactor
        return redactor.redact_flagged(data) if redactor is not None else data

    def _diverge(self, divergence: Divergence) -> None:
        self.report(divergence)
        if self.stopped is divergence:
            raise ReplayDivergenceError(divergence)

    def report(self, divergence: Divergence) -> None:
        """A divergence found outside matching (a connection the network guard blocked); strict stops here."""
        self.divergences.append(divergence)
        self.on_divergence(divergence)
        if self.policy == STRICT and (not self.branch or self.live_after_mismatch):
            self.stopped = divergence

    # ---- bookkeeping -----------------------------------------------------------------------

    def _checked(self, unit: int) -> bool:
        return not self.source.telemetry[unit] and is_checked(self.source.request_seqs[unit], self.from_seq, self.branch)

    def _available(self, key: Any, units: list[int] | None = None) -> int | None:
        """The first unserved unit of key's (or of units, kept under key) that the order per origin lets be served."""
        if units is None:
            units = self._by_key.get(key)
        if units is None:
            return None
        start = self._key_start.get(key, 0)
        while start < len(units) and self._consumed[units[start]]:
            start += 1
        self._key_start[key] = start
        for index in range(start, len(units)):
            unit = units[index]
            if not self._consumed[unit] and self._in_order(unit):
                return unit if self._servable(unit) else None
        return None

    def _servable(self, unit: int) -> bool:
        return not self.branch or self.source.request_seqs[unit] < self.from_seq

    def _in_order(self, unit: int) -> bool:
        if self.branch or not self._checked(unit):
            return True
        head = self._origin_head_unit(self.source.origins[unit])
        return head == unit or self.source.groups[head] == self.source.groups[unit]

    def _origin_head_unit(self, origin: int) -> int:
        """The origin's first unit not served yet (its last when all are); a replay from a seq skips the units before
        it, which are not checked: one the program no longer makes holds up none after it."""
        queue = self._origin_units[origin]
        head = self._origin_head.get(origin, 0)
        while head < len(queue) - 1 and (self._consumed[queue[head]] or not self.branch and not self._checked(queue[head])):
            head += 1
        self._origin_head[origin] = head
        return queue[head]

    def _first_unconsumed(self, table: dict[Any, list[int]], starts: dict[Any, int], key: Any) -> int | None:
        units = table.get(key)
        if not units:
            return None
        start = starts.get(key, 0)
        while start < len(units) and self._consumed[units[start]]:
            start += 1
        starts[key] = start
        return units[start] if start < len(units) else None

    def _closest(self, kind: int, name: str | None) -> int | None:
        """The recorded unit a call with no exact match was meant to be: the next call of the caller's own thread/task
        when it is to the same tool or channel; else the first unserved one of that tool or channel."""
        first = next((unit for unit in (self._first_unconsumed(self._by_kind, self._kind_start, key)
                                        for key in self._keys(_kind_and_name(kind, name))) if unit is not None), None)
        if first is None or kind == KIND_LLM or self.caller_origin is None:
            return first
        for origin in self._origins_by_name.get(origin_key(self.caller_origin())[1:], ()):
            if origin not in self._origin_units:  # it made only telemetry calls
                continue
            head = self._origin_head_unit(origin)
            if not self._consumed[head] and self.source.kinds[head] == kind and self.source.names[head] == name:
                return head
        return first

    def next_unserved_seq(self) -> int:
        """The recorded seq today's run has not reached yet: the first checked unit not served, else the run's end."""
        start, count = self._unserved_start, len(self._consumed)
        while start < count and (self._consumed[start] or not self._checked(start)):
            start += 1
        self._unserved_start = start
        return self.source.request_seqs[start] if start < count else max(self.source.event_count - 1, 0)

    def _first_unconsumed_any(self) -> int | None:
        task = self.caller_pool_task() if self.source.pool_task_origins else None
        kinds = [kind for kind in self._by_kind if type(kind[0]) is int or kind[1] == task]
        candidates = [self._first_unconsumed(self._by_kind, self._kind_start, kind) for kind in kinds]
        present = [unit for unit in candidates if unit is not None]
        return min(present, key=lambda unit: self.source.request_seqs[unit]) if present else None

    def _override(self, kind: int, data: dict[str, Any]) -> dict[str, Any]:
        if kind in (KIND_VALUE, KIND_VERSION) and data.get("key") in self.overrides:
            return {"override": self.overrides[data["key"]], "has_override": True}
        return {}


def is_checked(seq: int, from_seq: int, branch: bool) -> bool:
    """Whether a recorded unit counts: a replay checks seq >= from_seq, a fork its history seq < from_seq."""
    return seq < from_seq if branch else seq >= from_seq


def _kind_and_name(kind: int, name: str | None) -> tuple[int, str | None]:
    """Where to look for the recorded call a mismatching call was meant to be: same tool or channel; any LLM call."""
    return (kind, None) if kind == KIND_LLM else (kind, name)


def _name_of(kind: int, data: dict[str, Any]) -> str | None:
    if kind == KIND_TOOL:
        return data.get("name")
    if kind == KIND_STATE:
        return data.get("channel", data.get("key"))
    return data.get("key")


def _unexpected_detail(kind: int, data: dict[str, Any], lenient: bool) -> str:
    if kind == KIND_TOOL:
        name = data.get("name")
        if lenient and name != "http":
            return (f"the capture has no (more) calls to tool {name!r}; the lenient replay ran it for real "
                    "(outbound network stays blocked)")
        return (f"the capture has no (more) calls to tool {name!r}; it is not run during a replay "
                f"(--allow-tool {name} runs it for real)")
    if kind == KIND_STATE:
        return f"the capture has no (more) writes to {_name_of(kind, data)!r}"
    return f"the program made a {_EVENT_TYPES[kind]} the capture does not have"


def _comparable(kind: int, data: dict[str, Any]) -> Any:
    """The part of a request that is compared: what the content key covers (a state write as the channel.written
    shape, so writes recorded before variables carried their channel and reducer compare the same)."""
    if kind == KIND_LLM:
        return data.get("request")
    if kind == KIND_TOOL:
        return {"name": data.get("name"), "args": data.get("args")}
    if kind == KIND_STATE:
        name = data.get("channel", data.get("key"))
        reducer = data.get("reducer") or (legacy_reducer(str(name)) if data.get("kind") == "variable" else None)
        return {"kind": data.get("kind"), "channel": name, "reducer": reducer, "value": unwrapped(data.get("value"))}
    return data.get("value")
