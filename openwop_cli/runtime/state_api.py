"""`wop.state`: the program's channels and variables, reduced here and recorded as the capture's channel writes."""

import os
import sys
import threading
import time as _time
from datetime import UTC, datetime
from typing import Any

from openwop_cli.runtime.session import Session, current


class _State:
    """`wop.state`: channels with the canonical reducers, recorded in the channel.written shape.

    Writes are reduced in this process (with or without a recording), so `get` returns what the
    fold of the capture will show; the recorded event carries the write input and its reducer,
    and is recorded under the same lock as the reduction, so the capture's seq order is the order
    the program's writes were reduced in. The SDK refuses what the fold refuses (state.checks):
    access, schema, breaking schema versions, a legacy variable under a declared channel's name, a
    declaration with ttlMs out of range — raising ChannelError with the spec's code. Declarations
    come from `declare` and from the `channels` of the workflow the run pinned (`wop.workflow()`).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every channel and declaration (a new run starts)."""
        from openwop_cli.channels.reducers import ChannelStore

        self._lock = threading.Lock()
        self._channels = ChannelStore()
        self._variables = ChannelStore()
        self._declarations: dict[str, dict[str, Any]] | None = None
        self._warned: set[tuple[str, str]] = set()
        self._schema_check: Any = None

    def declare(self, channel: str, reducer: str = "replace", *, default: Any = None, max_size: int | None = None,
                ttl_ms: int | None = None, schema: dict[str, Any] | None = None, schema_version: int | None = None,
                compatible_with: list[int] | None = None, access: Any = None) -> None:
        """Declare a channel (the spec's ChannelDeclaration); later writes without a reducer use this one.

        A declaration the spec refuses (ttl_ms outside 0..one year) raises ChannelError.
        """
        from openwop_cli.channels.checks import declaration_refusal

        declaration: dict[str, Any] = {"reducer": reducer}
        for key, value in (("default", default), ("maxSize", max_size), ("ttlMs", ttl_ms), ("schema", schema),
                           ("schemaVersion", schema_version), ("compatibleWith", compatible_with), ("access", access)):
            if value is not None:
                declaration[key] = value
        refusal = declaration_refusal(channel, declaration)
        if refusal is not None:
            raise ChannelError(refusal.code, refusal.message)
        session = current()
        with self._lock:
            self._warn_if_unknown(channel, reducer)
            self._declared()[channel] = declaration
            if session is not None:
                session.record("state_mutation", {"kind": "declare", "channel": channel, "declaration": declaration})

    def write(self, channel: str, value: Any, reducer: str | None = None, *, node_id: str | None = None,
              type_id: str | None = None, schema_version: int | None = None) -> Any:
        """Write value to channel through its reducer (declared, given, or replace); returns the reduced value.

        A write the spec refuses raises ChannelError (its `code`: channel_access_denied, validation_error,
        channel_schema_breaking_change); an input the reducer rejects (a merge of a non-object, a vote
        without userId…) raises ValueError.
        """
        from openwop_cli.channels.checks import write_refusal
        from openwop_cli.channels.reducers import effective_reducer, ttl_wrapped, validate

        session = current()
        with self._lock:
            declaration = self._declared().get(channel, {})
            named = reducer or declaration.get("reducer") or "replace"
            effective = effective_reducer(named)
            self._warn_if_unknown(channel, named)
            data: dict[str, Any] = {"kind": "channel", "channel": channel, "value": value, "reducer": named}
            if schema_version is None:
                schema_version = declaration.get("schemaVersion")
            for key, extra in (("nodeId", node_id), ("typeId", type_id), ("schemaVersion", schema_version)):
                if extra is not None:
                    data[key] = extra
            refusal = write_refusal(channel, value, data, declaration, effective, self._schema_problem)
            if refusal is not None:
                raise ChannelError(refusal.code, refusal.message)
            validate(effective, value)
            wrap = ttl_wrapped(declaration, effective)
            return self._reduce(self._channels, session, data, channel, value, effective, declaration, wrap)

    def set(self, key: str, value: Any) -> Any:
        """Write a legacy untyped variable (its prefix picks the reducer: `_loopbackCount:` counts…).

        Recorded in the channel.written shape (the variable's name as the channel, the prefix's reducer, the
        node from the name); a key that is a declared channel's name raises ChannelError (validation_error).
        """
        from openwop_cli.channels.checks import variable_refusal
        from openwop_cli.channels.reducers import legacy_node, legacy_reducer, validate

        session = current()
        with self._lock:
            refusal = variable_refusal(key, self._declared())
            if refusal is not None:
                raise ChannelError(refusal.code, refusal.message)
            reducer = legacy_reducer(key)
            validate(reducer, value)
            data: dict[str, Any] = {"kind": "variable", "key": key, "channel": key, "value": value, "reducer": reducer}
            node = legacy_node(key)
            if node is not None:
                data["nodeId"] = node
            return self._reduce(self._variables, session, data, key, value, reducer, {}, False)

    def get(self, channel: str, default: Any = None) -> Any:
        """The channel's reduced value (its declared default, or `default`, before any write)."""
        with self._lock:
            if channel in self._channels:
                return self._channels.value(channel)
            return self._declared().get(channel, {}).get("default", default)

    def _reduce(self, store: Any, session: Session | None, data: dict[str, Any], name: str, value: Any, reducer: str,
                declaration: dict[str, Any], wrap: bool) -> Any:
        """Reduce and record one write (called under the lock: seq order is reduction order)."""
        ts = _time.time_ns() // 1_000_000
        if wrap:
            data["value"] = {"value": value, "_ts": ts}
        history = None
        if session is not None and session.replayer is not None:
            ts, history = session.replayer.state({**data, "writtenAt": _iso_ms(ts)}, declaration)
        if history is not None:  # a replay's fixed history (before --from-seq): the state the recorded run had
            store.adopt(history, name)
        else:
            store.write(name, value, reducer, ts=ts, declaration=declaration)
        if session is not None and session.replayer is None:
            data["writtenAt"] = _iso_ms(ts)
            session.record("state_mutation", data, ts=ts)
        return store.value(name)

    def _declared(self) -> dict[str, dict[str, Any]]:
        """The declarations, starting from the pinned workflow's `channels` (read once, on first use)."""
        if self._declarations is None:
            from openwop_cli.channels.checks import declaration_refusal

            document = workflow()
            channels = document.get("channels") if isinstance(document, dict) else None
            self._declarations = {}
            for name, declaration in (channels.items() if isinstance(channels, dict) else ()):
                refusal = declaration_refusal(name, declaration)
                if refusal is not None:
                    _warn(f"the pinned workflow's channel {name!r} is not used: {refusal.message}")
                else:
                    self._declarations[name] = declaration
        return self._declarations

    def _warn_if_unknown(self, channel: str, reducer: str) -> None:
        from openwop_cli.channels.reducers import effective_reducer

        if effective_reducer(reducer) != reducer and (channel, reducer) not in self._warned:
            self._warned.add((channel, reducer))
            _warn(f"channel {channel!r} uses reducer {reducer!r}, which wop does not know: it is reduced as replace")

    def _schema_problem(self, schema: dict[str, Any], value: Any) -> str | None:
        if self._schema_check is None:
            from openwop_cli.channels.fold import schema_validator

            self._schema_check = schema_validator()
            if self._schema_check is False:
                _warn("channel schemas are not checked: install jsonschema (pip install jsonschema)")
        return None if self._schema_check is False else self._schema_check(schema, value)


class ChannelError(ValueError):
    """A channel write or declaration the OpenWOP channels spec refuses; `code` is the spec's error code."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code}: {message}")


def _iso_ms(ts: int) -> str:
    return datetime.fromtimestamp(ts / 1000, UTC).isoformat(timespec="milliseconds")


state = _State()


# ---- the pinned workflow ---

_pinned_workflow: dict[str, Any] = {}


def workflow() -> Any:
    """The workflow document the run pinned (`wop capture --workflow F`), exactly the bytes pinned at its start:
    a later edit of the file is invisible to the run, and a replay serves the capture's copy. None when the run
    pinned no workflow (or nothing is being recorded).

        definition = wop.workflow()
    """
    session = current()
    if session is None:
        return None
    if session.replayer is not None:
        return session.replayer.workflow()
    if _pinned_workflow.get("session") is not session:
        _pinned_workflow.update(session=session, text=_ask_for_workflow(session))
    text = _pinned_workflow["text"]
    if text is None:
        return None
    import orjson

    return orjson.loads(text)


def _ask_for_workflow(session: Session) -> str | None:
    """The pinned workflow's text, from the `wop capture` process that read it once at the start."""
    from openwop_cli.runtime.program import ENV_WORKFLOW

    request = getattr(session.recorder, "request", None)
    if not os.environ.get(ENV_WORKFLOW) or request is None:
        return None
    try:
        text = request({"workflow": True}).get("workflow")
    except (OSError, ValueError) as exc:
        _warn(f"cannot get the pinned workflow from `wop capture` ({exc})")
        return None
    return text if isinstance(text, str) else None


def _warn(message: str) -> None:
    print(message if message.startswith("wop:") else f"wop: {message}", file=sys.stderr)
