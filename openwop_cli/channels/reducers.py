"""The canonical channel reducers of openwop-channels.md, and a channel store that applies them in place.

replace, append, merge (shallow), counter, votes (replace by userId), feedback, message
(idempotent on messageId); `vendor.*` and unknown names fold as replace (the caller warns once per
channel). Writes are validated the way the spec's types say; an invalid write raises ReducerError
(`validation_error`) and changes nothing.

ChannelStore keeps each channel's state so that a million writes cost a million small steps:
list reducers append to a deque (ttlMs first drops every expired entry, judged by the event's own
timestamp, never the wall clock — from the left while the entries' stamps rise, as they do unless
a clock went back; then maxSize trims from the left), message ids are remembered in a set. Dependency-free on purpose: the runtime uses it too, so a program sees the reduced value the
fold will compute.
"""

from collections import deque
from typing import Any

from openwop_cli.format.events import LARGEST_INT, SMALLEST_INT, big_int_digits

CANONICAL = ("replace", "append", "merge", "counter", "votes", "feedback", "message")
LIST_REDUCERS = frozenset({"append", "votes", "feedback", "message"})
TTL_REDUCERS = frozenset({"append", "votes", "feedback"})
READS_CURRENT = LIST_REDUCERS | {"merge", "counter"}  # the reducers whose result depends on the channel's value
UNDECLARED: dict[str, Any] = {}  # the declaration of a channel nobody declared (read, never changed)
_NOTHING = object()  # a channel not written yet
MESSAGE_ROLES = frozenset({"system", "user", "assistant", "tool"})
LEGACY_PREFIXES = (
    ("_approvalVotes:", "votes"),
    ("_askExchanges:", "append"),
    ("_clarificationAnswers:", "merge"),
    ("_feedbackHistory:", "feedback"),
    ("_loopbackCount:", "counter"),
)
_LEGACY_STARTS = tuple(prefix for prefix, _ in LEGACY_PREFIXES)
LEGACY_NODE_PREFIXES = (*(prefix for prefix, _ in LEGACY_PREFIXES), "_loopbackIteration:", "_previousArtifact:",
                        "wfArtifactData_")


class ReducerError(ValueError):
    """A write the reducer's input type rejects (the spec's validation_error)."""


def effective_reducer(name: Any) -> str:
    """The reducer a write folds with: its own name when canonical, else replace (spec: unknown → replace)."""
    return name if name in CANONICAL else "replace"


def ttl_wrapped(declaration: dict[str, Any], reducer: str) -> bool:
    """True when the channel's entries take the spec's TTL entry shape `{value, _ts}` (ttlMs on a list reducer)."""
    return bool(declaration.get("ttlMs")) and reducer in TTL_REDUCERS


def is_entry(value: Any) -> bool:
    """True for a value in the TTL entry shape: exactly `{value, _ts}` with an integer `_ts`."""
    return type(value) is dict and len(value) == 2 and "value" in value and type(value.get("_ts")) is int


def unwrapped(value: Any) -> Any:
    """The write input inside a TTL entry (the value itself when it is not one)."""
    return value["value"] if is_entry(value) else value


def reduce_once(name: str, current: Any, value: Any, reducer: str, *, ts: int,
                declaration: dict[str, Any]) -> Any:
    """The channel's value after one write onto `current` (plain JSON, None for nothing written yet)."""
    store = ChannelStore(recorded=True)
    if current is not None:
        store.load(name, current, reducer)
    store.write(name, value, reducer, ts=ts, declaration=declaration)
    return store.value(name)


def legacy_reducer(variable: str) -> str:
    """The reducer a legacy variable folds with, from its prefix (others: replace)."""
    if variable.startswith(_LEGACY_STARTS):  # one test for the many variables without a legacy prefix
        for prefix, reducer in LEGACY_PREFIXES:
            if variable.startswith(prefix):
                return reducer
    return "replace"


def legacy_node(variable: str) -> str | None:
    """The node a prefixed legacy variable belongs to (`_approvalVotes:gate` → `gate`), else None."""
    for prefix in LEGACY_NODE_PREFIXES:
        if variable.startswith(prefix) and len(variable) > len(prefix):
            return variable[len(prefix):]
    return None


class ChannelStore:
    """Channels (or variables) and their reduced values; see the module docstring.

    recorded: the writes are a capture's JSON (the fold's), where an integer beyond 64 bits is {"$bigint": digits}
    (wire.jsonable): a counter reads such a number and keeps a total beyond 64 bits in that form; the program's own
    store (recorded False) adds its ints as they are."""

    def __init__(self, recorded: bool = False) -> None:
        self._values: dict[str, Any] = {}
        self._message_ids: dict[str, set[str]] = {}
        self._unordered: set[str] = set()  # TTL channels whose expired entries may not be a prefix (see _prune)
        self.recorded = recorded

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def names(self) -> list[str]:
        return list(self._values)

    def write(self, name: str, value: Any, reducer: str, ts: int = 0, declaration: dict[str, Any] | None = None) -> None:
        """Fold one write into the channel (reducer already resolved with effective_reducer)."""
        declaration = declaration or UNDECLARED
        if reducer not in READS_CURRENT:  # replace, the most written, first: no input to check, nothing to read
            if declaration:  # (UNDECLARED sets no maxSize)
                _check_size(name, value, declaration)
            self._values[name] = value
            return
        if reducer in LIST_REDUCERS:
            if reducer != "append":  # (append takes anything)
                validate(reducer, value)
            self._write_list(name, value, reducer, ts, declaration)
            return
        current = self._values.get(name, _NOTHING)
        if current is _NOTHING:
            current = declaration.get("default")
        if reducer == "merge":
            if type(value) is not dict:  # (a dict, as every recorded object is, needs no call to validate)
                validate(reducer, value)
            merged = {**(current if isinstance(current, dict) else {}), **value}
            if declaration:
                _check_size(name, merged, declaration)
            self._values[name] = merged
        else:  # counter
            increment = value if type(value) is int or type(value) is float else _number(value)
            if increment is None:
                validate(reducer, value)
            assert increment is not None  # validate refused anything else
            base = current if type(current) is int or type(current) is float else _number(current)
            total = (0 if base is None else base) + increment
            if self.recorded and type(total) is int and not SMALLEST_INT <= total <= LARGEST_INT:
                from openwop_cli.wire.jsonable import tag_big_int

                self._values[name] = tag_big_int(total)
            else:
                self._values[name] = total

    def copy(self) -> "ChannelStore":
        """An independent copy: list reducers' entries and seen message ids copied (other values are never changed in
        place, only replaced)."""
        twin = ChannelStore(self.recorded)
        twin._values = {name: deque(value) if isinstance(value, deque) else value for name, value in self._values.items()}
        twin._message_ids = {name: set(ids) for name, ids in self._message_ids.items()}
        twin._unordered = set(self._unordered)
        return twin

    def adopt(self, other: "ChannelStore", name: str) -> None:
        """Take other's state of one channel (a copy, as `copy` makes), or none when other has none."""
        if name not in other._values:
            self._values.pop(name, None)
            self._message_ids.pop(name, None)
            self._unordered.discard(name)
            return
        value = other._values[name]
        self._values[name] = deque(value) if isinstance(value, deque) else value
        if name in other._unordered:
            self._unordered.add(name)
        else:
            self._unordered.discard(name)
        if name in other._message_ids:
            self._message_ids[name] = set(other._message_ids[name])
        else:
            self._message_ids.pop(name, None)

    def load(self, name: str, value: Any, reducer: str) -> None:
        """Set a channel's reduced value as it was folded elsewhere (a list reducer's entries, any other value)."""
        self._values[name] = deque(value) if reducer in LIST_REDUCERS and isinstance(value, list) else value
        self._message_ids.pop(name, None)
        self._unordered.add(name)  # entries folded elsewhere: their order is not known

    def value(self, name: str, default: Any = None) -> Any:
        """The channel's reduced value as plain JSON (lists for list reducers)."""
        if name not in self._values:
            return default
        value = self._values[name]
        return list(value) if isinstance(value, deque) else value

    def snapshot(self) -> dict[str, Any]:
        """Every channel's reduced value as plain JSON."""
        return {name: self.value(name) for name in self._values}

    def _write_list(self, name: str, value: Any, reducer: str, ts: int, declaration: dict[str, Any]) -> None:
        entries = self._values.get(name)
        if not isinstance(entries, deque):
            default = declaration.get("default")
            entries = deque(default if isinstance(default, list) else [])
            self._values[name] = entries
        ttl = declaration.get("ttlMs") or 0
        wrapped = bool(ttl) and reducer in TTL_REDUCERS
        if wrapped:
            self._prune(name, entries, ts - ttl)
        if reducer == "message":
            seen = self._message_ids.setdefault(name, {m["messageId"] for m in entries
                                                       if isinstance(m, dict) and isinstance(m.get("messageId"), str)})
            if value["messageId"] in seen:
                return
            seen.add(value["messageId"])
        if reducer == "votes":
            user = value["userId"]
            kept = [entry for entry in entries if _unwrap(entry, wrapped).get("userId") != user]
            if len(kept) != len(entries):
                entries.clear()
                entries.extend(kept)
        if wrapped and entries and not _stamped_by(entries[-1], ts):
            self._unordered.add(name)
        entries.append({"value": value, "_ts": ts} if wrapped else value)
        limit = declaration.get("maxSize")
        if isinstance(limit, int) and limit >= 0:
            while len(entries) > limit:
                entries.popleft()  # a dropped message's id stays seen: it lands in the log once per run

    def _prune(self, name: str, entries: deque, cutoff: int) -> None:
        """Drop every entry stamped before cutoff (spec: every expired entry, before the new one is appended). While a
        channel's entries are stamped in rising order the expired ones are a prefix, dropped from the left; a channel
        with an entry out of that order (an earlier _ts after a later one, or an entry that never expires: a declared
        default, a write from before ttlMs was declared) is filtered whole."""
        if name in self._unordered:
            if any(_expired(entry, cutoff) for entry in entries):
                kept = [entry for entry in entries if not _expired(entry, cutoff)]
                entries.clear()
                entries.extend(kept)
            return
        while entries and _expired(entries[0], cutoff):
            entries.popleft()


def _stamped_by(entry: Any, ts: int) -> bool:
    """True for a TTL entry stamped at or before ts: an entry appended after it keeps the channel's stamps in order."""
    stamp = entry.get("_ts") if isinstance(entry, dict) else None
    return isinstance(stamp, (int, float)) and stamp <= ts


def _expired(entry: Any, cutoff: int) -> bool:
    """True for a TTL entry stamped before cutoff; an entry without a numeric `_ts` (written before ttlMs was declared,
    a declared default) never expires, and never keeps a later expired entry from going."""
    stamp = entry.get("_ts") if isinstance(entry, dict) else None
    return isinstance(stamp, (int, float)) and stamp < cutoff


def _unwrap(entry: Any, wrapped: bool) -> dict[str, Any]:
    value = entry.get("value") if wrapped and isinstance(entry, dict) else entry
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> int | float | None:
    """A counter's number: an int or float, or the int a capture recorded beyond 64 bits ({"$bigint": digits});
    None for anything else."""
    if big_int_digits(value) is not None:
        from openwop_cli.wire.jsonable import revive_big_ints

        value = revive_big_ints(value)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def validate(reducer: str, value: Any) -> None:
    """Raise ReducerError when value is not an input the reducer takes (the spec's types; replace and append take
    anything)."""
    if reducer == "merge" and not isinstance(value, dict):
        raise ReducerError(f"merge takes an object, got {type(value).__name__}")
    if reducer == "counter" and _number(value) is None:
        raise ReducerError(f"counter takes a number to add, got {type(value).__name__}")
    if reducer == "votes":
        if not isinstance(value, dict) or not isinstance(value.get("userId"), str) or not isinstance(value.get("action"), str):
            raise ReducerError("votes takes {userId: string, action: string, timestamp, reason?}")
    if reducer == "feedback" and (not isinstance(value, dict) or not isinstance(value.get("feedback"), str)):
        raise ReducerError("feedback takes {feedback: string, timestamp, iteration}")
    if reducer == "message":
        if not isinstance(value, dict) or not isinstance(value.get("messageId"), str):
            raise ReducerError("message takes {messageId: string, role, content, timestamp, …}")
        if value.get("role") not in MESSAGE_ROLES:
            raise ReducerError(f"message role must be one of {', '.join(sorted(MESSAGE_ROLES))}, got {value.get('role')!r}")
        if not isinstance(value.get("content"), (str, list)):
            raise ReducerError("message content must be a string or an array of content blocks")


def _check_size(name: str, value: Any, declaration: dict[str, Any]) -> None:
    limit = declaration.get("maxSize")
    if isinstance(limit, int) and isinstance(value, (list, dict, str)) and len(value) > limit:
        raise ReducerError(f"{name!r} would hold {len(value)} entries, over its maxSize {limit}")
