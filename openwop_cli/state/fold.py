"""Fold a capture's state writes into `{channels, variables}` at any seq, with the spec's checks as findings.

Writes fold in event order (seq; a capture has no ties) with the reducer recorded on each write
(reducer-at-write-time). Declarations — reducer, default, maxSize, ttlMs, schema, schemaVersion,
compatibleWith, access — come from the run (`run_start.data.channels`, `wop.state.declare`
events) or a declarations file. What a compliant engine would refuse is reported, not applied:
channel_access_denied, channel_cross_engine_write_forbidden, channel_schema_breaking_change,
validation_error (reducer input or JSON Schema); unknown reducers fold as replace with one
warning per channel. The fold streams: it holds the state, never the events.
"""

from dataclasses import dataclass
from typing import Any, Iterable

from openwop_cli.format.events import RUN_START, STATE_MUTATION
from openwop_cli.state.reducers import ChannelStore, ReducerError, effective_reducer, legacy_reducer

CROSS_ENGINE_FORBIDDEN = frozenset({"replace", "merge"})
CHANNEL_WRITTEN = "channel.written"  # the OpenWOP event type, in run logs from OpenWOP hosts


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
        self.declarations: dict[str, dict[str, Any]] = dict(declarations or {})
        self.channels = ChannelStore()
        self.variables = ChannelStore()
        self.meta: dict[str, dict[str, Any]] = {}
        self.findings: list[Finding] = []
        self.seq = -1
        self._warned: set[tuple[str, str]] = set()
        self._validator: Any = None

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one event (anything but run_start and state_mutation is skipped)."""
        self.seq = event["seq"]
        event_type = event["type"]
        if event_type == RUN_START:
            declared = event["data"].get("channels")
            if isinstance(declared, dict):
                self.declarations.update(declared)
            return
        if event_type == CHANNEL_WRITTEN:
            self._write_channel(event["data"], event.get("ts", 0))
            return
        if event_type != STATE_MUTATION:
            return
        data, ts = event["data"], event.get("ts", 0)
        kind = data.get("kind")
        if kind == "declare":
            if isinstance(data.get("declaration"), dict):
                self.declarations[str(data.get("channel"))] = data["declaration"]
        elif kind == "channel":
            self._write_channel(data, ts)
        elif kind == "variable":
            self._write_variable(data, ts)

    def snapshot(self) -> dict[str, Any]:
        """The state.snapshot shape: atSeq, channels (declared defaults included), variables."""
        channels = {name: decl["default"] for name, decl in self.declarations.items()
                    if isinstance(decl, dict) and "default" in decl}
        channels.update(self.channels.snapshot())
        return {"atSeq": self.seq, "channels": channels, "variables": self.variables.snapshot()}

    # ---- writes -------------------------------------------------------------------------------

    def _write_channel(self, data: dict[str, Any], ts: int) -> None:
        name = str(data.get("channel"))
        declaration = self.declarations.get(name) or {}
        recorded = data.get("reducer") or declaration.get("reducer") or "replace"
        reducer = effective_reducer(recorded)
        if reducer != recorded:
            self._warn_once(name, recorded)
        if not self._allowed(name, data, declaration, reducer):
            return
        try:
            self.channels.write(name, data.get("value"), reducer, ts=ts, declaration=declaration)
        except ReducerError as exc:
            self._find("validation_error", name, f"write to {name!r} not applied: {exc}")
            return
        meta = self.meta.setdefault(name, {"writes": 0})
        meta.update(writes=meta["writes"] + 1, lastSeq=self.seq, reducer=reducer)
        if "schemaVersion" in data:
            meta["schemaVersion"] = data["schemaVersion"]

    def _write_variable(self, data: dict[str, Any], ts: int) -> None:
        name = str(data.get("key"))
        try:
            self.variables.write(name, data.get("value"), legacy_reducer(name), ts=ts)
        except ReducerError as exc:
            self._find("validation_error", name, f"write to variable {name!r} not applied: {exc}")

    def _allowed(self, name: str, data: dict[str, Any], declaration: dict[str, Any], reducer: str) -> bool:
        if not writer_allowed(declaration.get("access"), data.get("nodeId"), data.get("typeId")):
            self._find("channel_access_denied", name,
                       f"node {data.get('nodeId')!r} may not write to channel {name!r} (write not applied)")
            return False
        if data.get("sourceEngineId") and reducer in CROSS_ENGINE_FORBIDDEN:
            self._find("channel_cross_engine_write_forbidden", name,
                       f"channel {name!r} uses reducer {reducer!r}, which forbids writes from engine "
                       f"{data['sourceEngineId']!r} (write not applied)")
            return False
        return self._schema_allows(name, data, declaration)

    def _schema_allows(self, name: str, data: dict[str, Any], declaration: dict[str, Any]) -> bool:
        current = declaration.get("schemaVersion", 1)
        written = data.get("schemaVersion", current)
        if isinstance(written, int) and isinstance(current, int) and written < current \
                and written not in (declaration.get("compatibleWith") or []):
            self._find("channel_schema_breaking_change", name,
                       f"channel {name!r} was written with schema v{written}, which v{current} does not list in "
                       "compatibleWith; create a new channel name and copy via a one-shot node (write not applied)")
            return False
        schema = declaration.get("schema")
        if schema is None or (isinstance(written, int) and isinstance(current, int) and written > current):
            return True
        problem = self._schema_problem(schema, data.get("value"))
        if problem is not None:
            self._find("validation_error", name, f"write to {name!r} fails its schema: {problem} (write not applied)")
            return False
        return True

    def _schema_problem(self, schema: dict[str, Any], value: Any) -> str | None:
        if self._validator is None:
            try:
                import jsonschema
            except ImportError:
                self._validator = False
                self._find("schema_validation_skipped", None,
                           "channel schemas were not checked: install jsonschema (pip install jsonschema)")
                return None
            self._validator = jsonschema
        if self._validator is False:
            return None
        error = next(iter(self._validator.Draft202012Validator(schema).iter_errors(value)), None)
        return None if error is None else error.message

    def _warn_once(self, name: str, reducer: str) -> None:
        if (name, reducer) not in self._warned:
            self._warned.add((name, reducer))
            self._find("unknown_reducer", name, f"channel {name!r} uses reducer {reducer!r}, folded as replace")

    def _find(self, code: str, channel: str | None, message: str) -> None:
        self.findings.append(Finding(code, self.seq, channel, message))


def writer_allowed(access: Any, node_id: Any, type_id: Any) -> bool:
    """The spec's access check for a write: public/absent allows, private denies, an allowlist matches
    the nodeId exactly or the typeId by dotted-prefix wildcard (`core.ai.*`, `*`)."""
    if access in (None, "public"):
        return True
    if access == "private":
        return False
    if not isinstance(access, dict) or "writers" not in access:
        return True
    for entry in access.get("writers") or []:
        if entry == node_id:
            return True
        if isinstance(entry, str) and isinstance(type_id, str):
            if entry == "*" or (entry.endswith(".*") and type_id.startswith(entry[:-1])):
                return True
    return False


def fold_events(events: Iterable[dict[str, Any]], *, at: int | None = None,
                declarations: dict[str, Any] | None = None) -> StateFold:
    """Fold events up to and including seq `at` (all of them when None)."""
    fold = StateFold(declarations)
    for event in events:
        if at is not None and event["seq"] > at:
            break
        fold.apply(event)
    return fold
