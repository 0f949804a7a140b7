"""Fold a capture's state writes into `{channels, variables}` at any seq, with the spec's checks as findings.

Writes fold in event order (seq; a capture has no ties) with the reducer recorded on each write
(reducer-at-write-time). Declarations — reducer, default, maxSize, ttlMs, schema, schemaVersion,
compatibleWith, access — come from the run (`run_start.data.channels`, `wop.state.declare`
events) or a declarations file. What a compliant engine would refuse (state.checks) is reported, not applied:
channel_access_denied, channel_cross_engine_write_forbidden, channel_schema_breaking_change,
validation_error (reducer input, JSON Schema, a variable written under a declared channel's name,
a declaration with ttlMs out of range); unknown reducers fold as replace with one warning per
channel, and a sensitive-looking channel name without `access` is a warning (never enforced).
Writes to TTL channels may carry the spec's entry shape `{value, _ts}` (what wop records)
or the bare value (entries are then stamped with the event's ts). The fold streams: it holds the
state, never the events.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from openwop_cli.channels.checks import (
    Refusal,
    checks_writes,
    declaration_refusal,
    looks_sensitive,
    variable_refusal,
    write_refusal,
    writer_allowed,
)
from openwop_cli.channels.reducers import (
    UNDECLARED,
    ChannelStore,
    ReducerError,
    effective_reducer,
    is_entry,
    legacy_reducer,
)
from openwop_cli.format.events import RUN_END, RUN_START, STATE_MUTATION

__all__ = ["CHANNELS", "CHANNEL_WRITTEN", "TERMINAL_RUN_EVENTS", "VARIABLES", "Finding", "StateFold", "fold_events",
           "writer_allowed"]
CHANNEL_WRITTEN = "channel.written"  # the OpenWOP event type, in run logs from OpenWOP hosts
TERMINAL_RUN_EVENTS = {"run.completed": "completed", "run.failed": "failed", "run.cancelled": "cancelled"}
CHANNELS, VARIABLES = "channels", "variables"  # a fold's two stores, as `target` names them


@dataclass(frozen=True, slots=True)
class Finding:
    """Something the fold noticed at a seq: an error a compliant engine would return, or a warning."""

    code: str
    seq: int
    channel: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "seq": self.seq, "channel": self.channel, "message": self.message}


class StateFold:
    """Feed events with `apply` (in seq order); read `snapshot()` at any point."""

    def __init__(self, declarations: dict[str, Any] | None = None) -> None:
        self.declarations: dict[str, dict[str, Any]] = {}
        self.channels = ChannelStore(recorded=True)
        self.variables = ChannelStore(recorded=True)
        self.meta: dict[str, dict[str, Any]] = {}
        self.findings: list[Finding] = []
        self.seq = -1
        self.status: str | None = None  # the run's terminal status, once its end event is folded
        self._warned: set[tuple[str, str]] = set()
        self._validator: Any = None
        self._plans: dict[tuple[str, str | None], tuple[dict[str, Any], str, bool]] = {}
        self._timed: set[str] = set()  # the declared channels with a ttlMs: their folds read a write's time
        self.declare_all(declarations or {})

    def declare_all(self, declarations: dict[str, Any]) -> None:
        """Take channel declarations (a workflow's `channels`); one the spec refuses is a finding, not used."""
        self._plans.clear()
        for name, declaration in declarations.items():
            refusal = declaration_refusal(str(name), declaration)
            if refusal is not None:
                self._find(refusal.code, str(name), f"{refusal.message} (declaration not used)")
                continue
            self.declarations[str(name)] = declaration
            if declaration.get("ttlMs"):
                self._timed.add(str(name))
            else:
                self._timed.discard(str(name))
            if looks_sensitive(str(name), declaration):
                self._find("sensitive_channel_unrestricted", str(name),
                           f"channel {name!r} looks sensitive but declares no access restriction")

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one event (anything but run_start and state_mutation is skipped)."""
        self.seq = event["seq"]
        event_type = event["type"]
        if event_type == STATE_MUTATION:
            data = event["data"]
            kind = data.get("kind")
            if kind == "channel":
                self._write_channel(data, event.get("ts", 0))
            elif kind == "variable":
                self._write_variable(data)
            elif kind == "declare":
                self.declare_all({str(data.get("channel")): data.get("declaration")})
        elif event_type == RUN_START:
            declared = event["data"].get("channels")
            if isinstance(declared, dict):
                self.declare_all(declared)
        elif event_type == CHANNEL_WRITTEN:
            self._write_channel(event["data"], event.get("ts", 0))
        elif event_type == RUN_END:
            self.status = str(event["data"].get("status") or "ok")
        elif event_type in TERMINAL_RUN_EVENTS:
            self.status = TERMINAL_RUN_EVENTS[event_type]

    def fork(self) -> "StateFold":
        """An independent copy of this fold, to go on folding apart (two runs that shared a prefix)."""
        twin = StateFold.__new__(StateFold)
        twin.declarations = dict(self.declarations)
        twin.channels, twin.variables = self.channels.copy(), self.variables.copy()
        twin.meta = {name: dict(meta) for name, meta in self.meta.items()}
        twin.findings = list(self.findings)
        twin.seq, twin.status = self.seq, self.status
        twin._warned = set(self._warned)
        twin._validator = self._validator
        twin._plans = dict(self._plans)
        twin._timed = set(self._timed)
        return twin

    def target(self, event: dict[str, Any]) -> tuple[str, str] | None:
        """The one channel (CHANNELS, name) or variable (VARIABLES, name) folding this event writes; None for an
        event that folds into the run as a whole (a declaration, the run's start or end) or not at all."""
        event_type, data = event["type"], event["data"]
        if event_type == STATE_MUTATION and data.get("kind") == "channel" or event_type == CHANNEL_WRITTEN:
            name = data.get("channel")
            return CHANNELS, name if type(name) is str else str(name)
        if event_type == STATE_MUTATION and data.get("kind") == "variable":
            name = data.get("key")
            return VARIABLES, name if type(name) is str else str(name)
        return None

    def adopt(self, other: "StateFold", target: tuple[str, str]) -> None:
        """Take other's folded state of one channel or variable (a copy), as if this fold had folded its writes."""
        part, name = target
        getattr(self, part).adopt(getattr(other, part), name)
        if part == CHANNELS and name in other.meta:
            self.meta[name] = dict(other.meta[name])

    def uses_time(self, event: dict[str, Any]) -> bool:
        """True when folding this event reads its ts: a channel write to a channel declared with ttlMs, or of a TTL
        entry (whose _ts is checked against it). Two runs' same other events fold the same whenever they happened."""
        data, event_type = event["data"], event["type"]
        if event_type == STATE_MUTATION and data.get("kind") == "channel" or event_type == CHANNEL_WRITTEN:
            value = data.get("value")
            if type(value) is dict and len(value) == 2 and is_entry(value):
                return True
            if not self._timed:  # (most runs declare no TTL channel)
                return False
            name = data.get("channel")
            return (name if type(name) is str else str(name)) in self._timed
        return False

    def snapshot(self) -> dict[str, Any]:
        """The state.snapshot shape: atSeq, channels (every declared channel: one not written yet holds its declared
        default, or null — what ctx.channels.get returns, undefined — when it declares none), variables."""
        channels = {name: declaration.get("default") for name, declaration in self.declarations.items()}
        channels.update(self.channels.snapshot())
        return {"atSeq": self.seq, "channels": channels, "variables": self.variables.snapshot()}

    # ---- writes -------------------------------------------------------------------------------

    def _write_channel(self, data: dict[str, Any], ts: int) -> None:
        name = data.get("channel")
        if type(name) is not str:
            name = str(name)
        recorded = data.get("reducer")
        declaration, reducer, checked = self._plans.get((name, recorded)) or self._plan(name, recorded)
        value = data.get("value")
        if type(value) is dict and len(value) == 2 and is_entry(value):
            if value["_ts"] != ts:
                self._find("ttl_timestamp_mismatch", name, f"the entry written to {name!r} says _ts {value['_ts']}, "
                                                           f"its event {ts}; the entry's _ts is used")
            value, ts = value["value"], value["_ts"]
        if checked or "sourceEngineId" in data or "schemaVersion" in data:
            refusal = write_refusal(name, value, data, declaration, reducer, self._schema_problem)
            if refusal is not None:
                self._refuse(name, refusal)
                return
        try:
            self.channels.write(name, value, reducer, ts, declaration)
        except ReducerError as exc:
            self._find("validation_error", name, f"write to {name!r} not applied: {exc}")
            return
        meta = self.meta.get(name)
        if meta is None:
            meta = self.meta[name] = {"writes": 0}
        meta["writes"] += 1
        meta["lastSeq"], meta["reducer"] = self.seq, reducer
        if "schemaVersion" in data:
            meta["schemaVersion"] = data["schemaVersion"]

    def _plan(self, name: str, recorded: str | None) -> tuple[dict[str, Any], str, bool]:
        """How writes to a channel with this recorded reducer (a string or null: the readers' shape check sees to it)
        fold: its declaration, the reducer they fold with (an unknown one is warned about, once) and whether the
        declaration checks them; kept until a declaration changes."""
        declaration = self.declarations.get(name) or UNDECLARED
        named = recorded or declaration.get("reducer") or "replace"
        reducer = effective_reducer(named)
        if reducer != named:
            self._warn_once(name, named)
        plan = self._plans[name, recorded] = declaration, reducer, checks_writes(declaration)
        return plan

    def _write_variable(self, data: dict[str, Any]) -> None:
        """A legacy variable's write: undeclared (no TTL), so its time is never read."""
        name = data.get("key")
        if type(name) is not str:
            name = str(name)
        if name in self.declarations:  # (the one test variable_refusal makes, without a call for every write)
            refusal = variable_refusal(name, self.declarations)
            if refusal is not None:
                self._refuse(name, refusal)
                return
        recorded = data.get("reducer")
        try:
            self.variables.write(name, data.get("value"), effective_reducer(recorded) if recorded else
                                 legacy_reducer(name))
        except ReducerError as exc:
            self._find("validation_error", name, f"write to variable {name!r} not applied: {exc}")

    def _refuse(self, name: str, refusal: Refusal) -> None:
        self._find(refusal.code, name, f"{refusal.message} (write not applied)")

    def _schema_problem(self, schema: dict[str, Any], value: Any) -> str | None:
        if self._validator is None:
            self._validator = schema_validator()
            if self._validator is False:
                self._find("schema_validation_skipped", None,
                           "channel schemas were not checked: install jsonschema (pip install jsonschema)")
        return None if self._validator is False else self._validator(schema, value)

    def _warn_once(self, name: str, reducer: str) -> None:
        if (name, reducer) not in self._warned:
            self._warned.add((name, reducer))
            self._find("unknown_reducer", name, f"channel {name!r} uses reducer {reducer!r}, folded as replace")

    def _find(self, code: str, channel: str | None, message: str) -> None:
        self.findings.append(Finding(code, self.seq, channel, message))


def schema_validator() -> Any:
    """A `(schema, value) -> first problem or None` JSON Schema check, or False when jsonschema is not installed."""
    try:
        import jsonschema
    except ImportError:
        return False
    unresolvable: type[Exception]
    try:
        from referencing.exceptions import Unresolvable

        unresolvable = Unresolvable
    except ImportError:  # jsonschema before 4.18 resolves $refs itself
        unresolvable = jsonschema.RefResolutionError
    schema_errors: dict[int, tuple[dict[str, Any], str | None]] = {}  # by id, the schema kept so its id stays its own

    def first_problem(schema: dict[str, Any], value: Any) -> str | None:
        known = schema_errors.get(id(schema))
        if known is None:
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
                known = schema, None
            except jsonschema.SchemaError as exc:
                known = schema, f"its schema is not a valid JSON Schema ({exc.message})"
            schema_errors[id(schema)] = known
        if known[1] is not None:
            return known[1]
        try:
            error = next(iter(jsonschema.Draft202012Validator(schema).iter_errors(value)), None)
        except unresolvable as exc:
            return f"its schema has a $ref that cannot be resolved ({exc})"
        return None if error is None else error.message

    return first_problem


def fold_events(events: Iterable[dict[str, Any]], *, at: int | None = None,
                declarations: dict[str, Any] | None = None) -> StateFold:
    """Fold events up to and including seq `at` (all of them when None)."""
    fold = StateFold(declarations)
    for event in events:
        if at is not None and event["seq"] > at:
            break
        fold.apply(event)
    return fold
