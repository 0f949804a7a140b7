"""The RFC 0054 run diff: where two event logs part ways, event by event and in the folded state.

A pure function of two event streams. Events are aligned by seq (the RFC's rule; or, with
align="content", by content so one inserted event is one `added`) and compared on (type, payload
minus the excluded fields). Excluded are exactly the fields the RFC pins (rest-endpoints.md
§:diff): eventId, runId, causationId, correlationId, the wall-clock ts and transport metadata
(traceparent/tracestate, delivery headers). Run metadata — wop's own recorder bookkeeping (callId,
captureId, writtenAt, durationMs) and where run_start says the run happened (the environment's
variable names, platform, hostname, cwd, Python) — is compared unless `ignore_run_metadata` says
otherwise (the CLI's default for two wop captures, and the fork report's: it differs between any
two runs, or two shells, by nature).

Events are compared as JCS compares them, on their compact JSON first (True == 1 in Python, not in JSON; 1 and 1.0 are
one JCS number; keys in another order fall back to a comparison value by value); only events that differ get their
JSON paths
(replay.divergence.differences). Both runs are folded on the way for the state diff — their identical prefix once,
into one fold forked where their folded events first differ, and after that every channel or variable they still
write alike once (TwinFolds) — and their terminal status comes from the run's end (wop's run_end, OpenWOP's
run.completed / run.failed / run.cancelled); a run with no terminal event was in flight: `truncated`. Nothing holds
more than the current events, the diffs found (up to max_diffs) and the two states.

Two big captures diffed by seq (`fork_b`) are read on two cores: B is read, checked and folded by a child process,
which sends each event's comparison key (its type and data as compact JSON); A is read and folded here, and B's event
is parsed from its line only where the keys differ (ForkedFolds). Each run then has a fold of its own, whose end
state is the one TwinFolds gives.
"""

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import zip_longest
from typing import Any

from orjson import dumps

from openwop_cli.channels.fold import CHANNEL_WRITTEN, CHANNELS, TERMINAL_RUN_EVENTS, VARIABLES, StateFold
from openwop_cli.diff.forked import ChildLost, ForkedRead, can_fork
from openwop_cli.format.events import RUN_END, RUN_START, STATE_MUTATION
from openwop_cli.replay.divergence import differences, json_path

RFC_EXCLUDED_KEYS = frozenset({
    "eventId", "runId", "causationId", "correlationId", "ts", "traceparent", "tracestate", "headers",
})
# Run metadata: where and how a run happened, not what it did. wop's recorder bookkeeping in any event, and (written
# "run_start.<key>": that event type's only) the environment run_start describes: the environment's variable names,
# the platform, hostname, working directory and Python version.
RUN_METADATA_KEYS = frozenset({"callId", "captureId", "writtenAt", "durationMs", "run_start.env",
                               "run_start.platform", "run_start.hostname", "run_start.cwd", "run_start.python"})
_RUN_START_PREFIX = RUN_START + "."
ALIGN_SEQ, ALIGN_CONTENT = "seq", "content"
FOLDED_TYPES = frozenset({RUN_START, RUN_END, STATE_MUTATION, CHANNEL_WRITTEN, *TERMINAL_RUN_EVENTS})
CONTENT_WINDOW = 200
RFC_FIELDS = ("a", "b", "divergedAtSeq", "eventDiffs", "stateDiff", "truncated")
RFC_ITEM_FIELDS = ("seq", "op", "aEvent", "bEvent")
IN_FLIGHT = "incomplete"
Pair = tuple[dict[str, Any] | None, dict[str, Any] | None]  # the two runs' events at one seq (None: that run has none)


def diff_runs(
    events_a: Iterable[dict[str, Any]],
    events_b: Iterable[dict[str, Any]],
    *,
    a: str,
    b: str,
    status_a: str | None = None,
    status_b: str | None = None,
    ignore: Iterable[str] = (),
    max_diffs: int | None = None,
    align: str = ALIGN_SEQ,
    ignore_run_metadata: bool = False,
    declarations_a: dict[str, Any] | None = None,
    declarations_b: dict[str, Any] | None = None,
    fork_b: bool = False,
) -> dict[str, Any]:
    """The RFC 0054 object for two runs, with wop's detail beside it (`rfc_result` keeps the RFC's fields only).

    status_a/status_b: a capture's manifest status (None for a run log: its terminal event says).
    declarations_a/declarations_b: channels each run declared outside its events (its pinned workflow's).
    fork_b: read and fold B in a child process while A is read here, when both are captures aligned by seq and this
    process can fork (diff.forked: `pays` says when it is worth it; with no child to be had now, B is read here).
    The result is the same either way.
    Detail: changed items carry `paths` (their differing JSON paths); `align`; `counts` of every
    added/removed/changed event; `omittedEventDiffs`, how many max_diffs left out of the list;
    `excluded`, the payload fields not compared.
    """
    ignored = [parse_path(path) for path in ignore]
    excluded = RFC_EXCLUDED_KEYS | RUN_METADATA_KEYS if ignore_run_metadata else RFC_EXCLUDED_KEYS
    folds: TwinFolds | ForkedFolds | None = None
    if align == ALIGN_CONTENT:
        folds = TwinFolds(declarations_a, declarations_b)
        folds.b = StateFold(declarations_b)
        pairs = _by_content(_folded(events_a, folds.a, ignored, excluded), _folded(events_b, folds.b, ignored, excluded))
        found = _listed(pairs, folds, max_diffs, ignored, excluded)
    elif fork_b and getattr(events_a, "seq_from_zero", False) and can_fork(events_b):
        folds, found = _listed_forked(events_a, events_b, declarations_a, declarations_b, max_diffs, ignored, excluded)
    if folds is None:
        folds = TwinFolds(declarations_a, declarations_b)
        found = _listed(_by_seq(events_a, events_b, folds, ignored, excluded), folds, max_diffs, ignored, excluded)
    diffs, diverged_at, counts = found
    fold_a, fold_b = folds.a, folds.b
    assert fold_b is not None  # B's fold is there once _listed has finished the folds
    final_a, final_b = status_a or fold_a.status, status_b or fold_b.status
    return {
        "a": a,
        "b": b,
        "divergedAtSeq": diverged_at,
        "eventDiffs": diffs,
        "stateDiff": state_diff(fold_a.snapshot(), fold_b.snapshot(), final_a, final_b),
        "truncated": final_a in (None, IN_FLIGHT) or final_b in (None, IN_FLIGHT),
        "align": align,
        "counts": counts,
        "omittedEventDiffs": sum(counts.values()) - len(diffs),
        "excluded": sorted(excluded),
    }


def _listed(pairs: Iterator[tuple], folds: "TwinFolds | ForkedFolds", max_diffs: int | None, ignored: list[list[Any]],
            excluded: frozenset[str]) -> tuple[list[dict[str, Any]], int | None, dict[str, int]]:
    """Run the pairs through: (the diff items, up to max_diffs; the first seq that differs; counts by op), the folds
    finished."""
    diffs: list[dict[str, Any]] = []
    diverged_at = None
    counts = {"added": 0, "removed": 0, "changed": 0}
    try:
        for seq, op, event_a, event_b in pairs:
            counts[op] += 1
            if diverged_at is None:
                diverged_at = seq
            if max_diffs is None or len(diffs) < max_diffs:
                diffs.append(_item(seq, op, event_a, event_b, ignored, excluded))
        folds.finish()
    finally:
        folds.close()
    return diffs, diverged_at, counts


def rfc_result(result: dict[str, Any]) -> dict[str, Any]:
    """A diff_runs result in the RFC 0054 schema exactly (additionalProperties: false): no wop detail."""
    items = [{key: item[key] for key in RFC_ITEM_FIELDS if key in item} for item in result["eventDiffs"]]
    return {**{key: result[key] for key in RFC_FIELDS}, "eventDiffs": items}


def state_diff(state_a: dict[str, Any], state_b: dict[str, Any], status_a: str | None,
               status_b: str | None) -> dict[str, Any]:
    """status, variables and channels of the two folded end states: what was added, removed or changed."""
    result: dict[str, Any] = {"status": {"a": status_a, "b": status_b, "changed": status_a != status_b}}
    for part in ("variables", "channels"):
        left, right = state_a[part], state_b[part]
        changed = {}
        for name in sorted(left.keys() & right.keys()):  # sorted: the same order whatever the hash seed
            if not same_json(left[name], right[name]):
                changed[name] = {"a": left[name], "b": right[name], "paths": changed_paths(left[name], right[name])}
        result[part] = {
            "added": {name: right[name] for name in sorted(right.keys() - left.keys())},
            "removed": {name: left[name] for name in sorted(left.keys() - right.keys())},
            "changed": changed,
        }
    return result


def same_json(left: Any, right: Any) -> bool:
    """True when two parsed JSON values have the same JCS form, as RFC 0054 compares them: 1, 1.0 and -0.0 == 0 are one
    number each, but True is not 1 (Python's == takes them for one another). Their compact JSON is compared first (the
    same bytes, as two runs' equal values have, settle it in one step); keys in another order, a number written
    another way, or a value deeper than orjson writes, are compared value by value. Integers stay exact: two beyond
    2^53 that one double would stand for are two numbers."""
    try:
        if dumps(left) == dumps(right):
            return True
    except TypeError:  # nested deeper than orjson writes: a channel's entries wrap a value recorded as deep as allowed
        pass
    return left == right and not any(jcs_differences(left, right))


def jcs_differences(left: Any, right: Any) -> Iterator[tuple[tuple, Any, Any]]:
    """replay.divergence.differences, less the places where the two values are one number JCS writes alike (1, 1.0)."""
    for found in differences(left, right):
        if not _one_number(found[1], found[2]):
            yield found


def _one_number(left: Any, right: Any) -> bool:
    return type(left) in _NUMBERS and type(right) in _NUMBERS and left == right


_NUMBERS = (int, float)  # by type: a bool is no number in JSON


def changed_paths(left: Any, right: Any) -> list[str]:
    """Every JSON path where two values differ (as JCS writes them)."""
    return sorted({json_path(parts) for parts, _, _ in jcs_differences(left, right)})


# ---- comparison ---------------------------------------------------------------------------------


def comparable(event: dict[str, Any], ignored: list[list[Any]],
               excluded: frozenset[str] = RFC_EXCLUDED_KEYS) -> dict[str, Any]:
    """What is compared of an event: its type and its data minus excluded and ignored fields (an excluded
    `run_start.<key>` is left out of run_start's data only)."""
    data = event.get("data")
    if isinstance(data, dict):
        if event.get("type") == RUN_START:
            excluded = excluded | {name[len(_RUN_START_PREFIX):] for name in excluded
                                   if name.startswith(_RUN_START_PREFIX)}
        data = {key: value for key, value in data.items() if key not in excluded}
        for path in ignored:
            data = _without(data, path)
    return {"type": event.get("type"), "data": data}


def parse_path(path: str) -> list[Any]:
    """`$.response.choices[0].id` (relative to an event's data; `*` matches any key or index) as parts."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    parts: list[Any] = []
    for piece in text.replace("[", ".[").split("."):
        if not piece:
            continue
        if piece.startswith("[") and piece.endswith("]"):
            inner = piece[1:-1].strip("'\"")
            parts.append(int(inner) if inner.lstrip("-").isdigit() else inner)
        else:
            parts.append(piece)
    return parts


def _without(value: Any, path: list[Any]) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [head] if head in value else []
        if not keys:
            return value
        copy = dict(value)
        for key in keys:
            if rest:
                copy[key] = _without(copy[key], rest)
            else:
                del copy[key]
        return copy
    if isinstance(value, list):
        indexes = range(len(value)) if head == "*" else [head] if isinstance(head, int) and -len(value) <= head < len(value) else []
        if not indexes:
            return value
        items = list(value)
        for index in sorted(indexes, reverse=True):
            if rest:
                items[index] = _without(items[index], rest)
            else:
                del items[index]
        return items
    return value


def _folded(events: Iterable[dict[str, Any]], fold: StateFold, ignored: list[list[Any]],
            excluded: frozenset[str]) -> Iterator[tuple]:
    for event in events:
        fold.apply(event)
        yield event, comparable(event, ignored, excluded)


class TwinFolds:
    """The two runs' state folds, for the diff's end states. While their folded events are the same there is one
    fold (an identical prefix is folded once). Once they part, each run folds what it writes apart in a fold of its
    own, and a channel or variable both runs go on writing alike is still folded once, in the shared fold, until its
    first write that differs (or that folds by its time, a TTL channel, at two different times); then its state is
    copied into both runs' folds. An event of the run as a whole (a declaration, the run's end) that differs parts
    everything. `finish` puts what is still shared into both runs' folds; their findings and meta leave out the
    writes folded in the shared one."""

    def __init__(self, declarations_a: dict[str, Any] | None = None,
                 declarations_b: dict[str, Any] | None = None) -> None:
        self.shared = self.a = self.b = StateFold(declarations_a)
        self.parted: set[tuple[str, str]] | None = set()  # what each run folds apart; None: everything
        if not same_json(declarations_a or {}, declarations_b or {}):  # declared apart from the start: all apart
            self.b, self.parted = StateFold(declarations_b), None

    def same(self, left: dict[str, Any], right: dict[str, Any]) -> None:
        """Fold two events equal in type and data: once, in the shared fold, while what they write is shared and they
        fold alike (the same seq, and the same time or a fold that does not read it)."""
        alike = left["seq"] == right["seq"] and (left.get("ts") == right.get("ts") or not self.shared.uses_time(left))
        if self.a is self.b:
            if alike:
                self.a.apply(left)
            else:
                self.apart(left, right)
            return
        target, parted = self.shared.target(left), self.parted
        if parted is not None and target not in parted:
            if target is None:  # the run as a whole, alike: the shared fold takes it too
                self.shared.apply(left)
            elif alike:
                self.shared.apply(left)
                return
            else:
                self._part(target)
        self._fold_apart(left, right)

    def apart(self, left: dict[str, Any] | None, right: dict[str, Any] | None) -> None:
        """Fold each run's event into its own fold (None: that run has no event here)."""
        for event in (left, right):
            if event is not None:
                self._part(self.shared.target(event))
        self._fold_apart(left, right)

    def finish(self) -> None:
        """Put what both runs still fold alike into each run's fold (call once, when the runs have ended)."""
        if self.shared is not self.a and self.parted is not None:  # (folds aligned by content never share one)
            self._part(None)

    def close(self) -> None:
        """Nothing to let go of (ForkedFolds has a process)."""

    def _fold_apart(self, left: dict[str, Any] | None, right: dict[str, Any] | None) -> None:
        if self.a is self.b:
            self.a, self.b = self.shared.fork(), self.shared.fork()
        if left is not None:
            self.a.apply(left)
        if right is not None:
            self.b.apply(right)

    def _part(self, target: tuple[str, str] | None) -> None:
        """Fold target apart from here (None: everything), its state so far copied from the shared fold."""
        if self.a is self.b:
            self.a, self.b = self.shared.fork(), self.shared.fork()
        if self.parted is None or target in self.parted:
            return
        targets = [target] if target is not None else [
            *((CHANNELS, name) for name in self.shared.channels.names()),
            *((VARIABLES, name) for name in self.shared.variables.names())]
        for each in targets:
            if each not in self.parted:
                self.a.adopt(self.shared, each)
                self.b.adopt(self.shared, each)
        if target is None:
            self.parted = None
        else:
            self.parted.add(target)


class ForkedFolds:
    """Run B read, checked and folded by a child process (diff.forked) while A is read and folded here: each run's
    own fold, as TwinFolds' end states are. `b` is B's end state once `finish` has run."""

    def __init__(self, reader_b: Any, declarations_a: dict[str, Any] | None,
                 declarations_b: dict[str, Any] | None) -> None:
        self.a = StateFold(declarations_a)
        fold_b = StateFold(declarations_b)
        self.b: FoldedElsewhere | None = None
        self.run_b = ForkedRead(reader_b, comparison_key, partial(_fold_folded, fold_b.apply),
                                lambda: FoldedElsewhere(fold_b.snapshot(), fold_b.status))

    def finish(self) -> None:
        """Take B's end state from the child (its reader's problems with it)."""
        self.b = self.run_b.finish()

    def close(self) -> None:
        """End the child, if it still runs."""
        self.run_b.close()


@dataclass(frozen=True, slots=True)
class FoldedElsewhere:
    """The end of a run's fold made in another process: its snapshot and the run's terminal status."""

    state: dict[str, Any]
    status: str | None

    def snapshot(self) -> dict[str, Any]:
        return self.state


def comparison_key(event: dict[str, Any]) -> bytes:
    """An event's type and data as compact JSON: two events with the same key are equal (same_json's first step).
    b"" for data as deep as a reader accepts (MAX_DEPTH levels), which the pair leaves no level to write: such events
    are compared value by value."""
    try:
        return dumps((event["type"], event["data"]))
    except TypeError:
        return b""


def _listed_forked(events_a: Iterable[dict[str, Any]], reader_b: Any, declarations_a: dict[str, Any] | None,
                   declarations_b: dict[str, Any] | None, max_diffs: int | None, ignored: list[list[Any]],
                   excluded: frozenset[str]) -> tuple[ForkedFolds | None, Any]:
    """(folds, _listed's result) with B read in a child; (None, None) when this process can have no child or pipe now
    (`ulimit -u`, `ulimit -n`) or the child was killed from outside: the diff then reads B itself (and A again, from
    the start), as it would have."""
    try:
        folds = ForkedFolds(reader_b, declarations_a, declarations_b)
    except OSError:
        return None, None
    try:
        return folds, _listed(_by_forked_seq(events_a, folds, ignored, excluded), folds, max_diffs, ignored, excluded)
    except ChildLost:
        return None, None


def _fold_folded(apply: Any, event: dict[str, Any]) -> None:
    if event["type"] in FOLDED_TYPES:
        apply(event)


def _by_seq(events_a: Iterable[dict[str, Any]], events_b: Iterable[dict[str, Any]], folds: TwinFolds,
            ignored: list[list[Any]], excluded: frozenset[str]) -> Iterator[tuple]:
    """(seq, op, aEvent, bEvent) for every seq whose events differ; equal events cost one comparison of their compact
    JSON."""
    for left, right in _aligned_by_seq(events_a, events_b):
        if left is not None and right is not None:
            sameness = _sameness(left, right)
            if sameness is not None:
                if left["type"] in FOLDED_TYPES:
                    if sameness:
                        folds.same(left, right)
                    else:  # one JCS value written two ways (1, 1.0): each run's state keeps its own
                        folds.apart(left, right)
                continue
        folded_left = left if left is not None and left["type"] in FOLDED_TYPES else None
        folded_right = right if right is not None and right["type"] in FOLDED_TYPES else None
        if folded_left is not None or folded_right is not None:
            folds.apart(folded_left, folded_right)
        difference = _difference(left, right, ignored, excluded)
        if difference is not None:
            yield difference


def _by_forked_seq(events_a: Iterable[dict[str, Any]], folds: ForkedFolds, ignored: list[list[Any]],
                   excluded: frozenset[str]) -> Iterator[tuple]:
    """_by_seq with B read by a child: A's events fold here; an event of A is compared with B's by their comparison
    keys, and B's event is read from its line only when the keys differ. (Two captures: seq 0..n-1 on both sides.)"""
    apply, run_b = folds.a.apply, folds.run_b
    for seq, (left, key) in enumerate(zip_longest(events_a, run_b)):
        if left is not None:
            if left["type"] in FOLDED_TYPES:
                apply(left)
            if key and key == comparison_key(left):
                continue
        right = None if key is None else run_b.event(seq)
        if _same_event(left, right):
            continue
        difference = _difference(left, right, ignored, excluded)
        if difference is not None:
            yield difference


def _sameness(left: dict[str, Any], right: dict[str, Any]) -> bool | None:
    """Two runs' events at one seq: True when their type and data are the same bytes, False when they are only the
    same JCS value (1 and 1.0), None when they differ."""
    if left["type"] != right["type"]:
        return None
    try:
        if dumps(left["data"]) == dumps(right["data"]):
            return True
    except TypeError:
        pass
    return False if same_json(left["data"], right["data"]) else None


def _same_event(left: dict[str, Any] | None, right: dict[str, Any] | None) -> bool:
    """Two runs' events at one seq equal in type and data."""
    return left is not None and right is not None and left["type"] == right["type"] \
        and same_json(left["data"], right["data"])


def _difference(left: dict[str, Any] | None, right: dict[str, Any] | None, ignored: list[list[Any]],
                excluded: frozenset[str]) -> tuple | None:
    """(seq, op, aEvent, bEvent) for two runs' events at one seq that are not the same (None: equal once the excluded
    and ignored fields are left out)."""
    if right is None:
        assert left is not None  # a pair has an event on one side at least
        return left["seq"], "removed", left, None
    if left is None:
        return right["seq"], "added", None, right
    if not same_json(comparable(left, ignored, excluded), comparable(right, ignored, excluded)):
        return left["seq"], "changed", left, right
    return None


def _aligned_by_seq(events_a: Iterable[dict[str, Any]], events_b: Iterable[dict[str, Any]]) -> Iterator[Pair]:
    """The two runs' events paired by seq (both in rising seq order: the readers see to it), None on the side that has
    no event at a seq: a run log's sequence may skip numbers, and RFC 0054 aligns by seq, not by position. Two
    captures' events (seq_from_zero) pair by position, which is the same and costs less."""
    if getattr(events_a, "seq_from_zero", False) and getattr(events_b, "seq_from_zero", False):
        return zip_longest(events_a, events_b)
    return _merged_by_seq(events_a, events_b)


def _merged_by_seq(events_a: Iterable[dict[str, Any]], events_b: Iterable[dict[str, Any]]) -> Iterator[Pair]:
    iter_a, iter_b = iter(events_a), iter(events_b)
    left, right = next(iter_a, None), next(iter_b, None)
    while left is not None or right is not None:
        if right is None or left is not None and left["seq"] < right["seq"]:
            yield left, None
            left = next(iter_a, None)
        elif left is None or right["seq"] < left["seq"]:
            yield None, right
            right = next(iter_b, None)
        else:
            yield left, right
            left, right = next(iter_a, None), next(iter_b, None)


def _by_content(stream_a: Iterator[tuple], stream_b: Iterator[tuple]) -> Iterator[tuple]:
    """Align by content: a run of events only one side has is added/removed, not a cascade of `changed`.

    Yields only the differences, like _by_seq.
    """
    ahead_a: deque = deque()
    ahead_b: deque = deque()

    def fill(buffer: deque, stream: Iterator[tuple]) -> None:
        while len(buffer) < CONTENT_WINDOW:
            item = next(stream, None)
            if item is None:
                return
            buffer.append(item)

    while True:
        fill(ahead_a, stream_a)
        fill(ahead_b, stream_b)
        if not ahead_a and not ahead_b:
            return
        if not ahead_b:
            left = ahead_a.popleft()
            yield left[0]["seq"], "removed", left[0], None
            continue
        if not ahead_a:
            right = ahead_b.popleft()
            yield right[0]["seq"], "added", None, right[0]
            continue
        left, right = ahead_a[0], ahead_b[0]
        if same_json(left[1], right[1]):
            ahead_a.popleft(), ahead_b.popleft()
            continue
        found_in_b = _position(ahead_b, left[1])
        found_in_a = _position(ahead_a, right[1])
        if found_in_b is not None and (found_in_a is None or found_in_b <= found_in_a):
            for _ in range(found_in_b):
                added = ahead_b.popleft()
                yield added[0]["seq"], "added", None, added[0]
        elif found_in_a is not None:
            for _ in range(found_in_a):
                removed = ahead_a.popleft()
                yield removed[0]["seq"], "removed", removed[0], None
        else:
            ahead_a.popleft(), ahead_b.popleft()
            yield left[0]["seq"], "changed", left[0], right[0]


def _position(buffer: deque, wanted: dict[str, Any]) -> int | None:
    for index, item in enumerate(buffer):
        if same_json(item[1], wanted):
            return index
    return None


def _item(seq: int, op: str, event_a: dict[str, Any] | None, event_b: dict[str, Any] | None,
          ignored: list[list[Any]], excluded: frozenset[str]) -> dict[str, Any]:
    item: dict[str, Any] = {"seq": seq, "op": op}
    if event_a is not None:
        item["aEvent"] = event_a
    if event_b is not None:
        item["bEvent"] = event_b
    if op == "changed":
        assert event_a is not None and event_b is not None  # a change is between two events
        item["paths"] = changed_paths(comparable(event_a, ignored, excluded)["data"],
                                      comparable(event_b, ignored, excluded)["data"]) \
            if event_a.get("type") == event_b.get("type") else ["$.type"]
    return item
