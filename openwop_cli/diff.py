"""The RFC 0054 run diff: where two event logs part ways, event by event and in the folded state.

A pure function of two event streams. Events are aligned by seq (the RFC's rule; or, with
align="content", by content so one inserted event is one `added`) and compared on (type, payload
minus the excluded fields): ids that are run- or call-scoped, wall-clock times, transport metadata
(origin, sourceSeq, headers, traceparent). Comparison is dict equality on parsed events, so equal
events cost no serialization; only events that differ get their JSON paths (deepdiff). Both runs
are folded on the way for the state diff. Nothing holds more than the current events, the diffs
found (up to max_diffs) and the two states.
"""

from collections import deque
from typing import Any, Iterable, Iterator

from openwop_cli.format.events import RUN_START, STATE_MUTATION
from openwop_cli.state.fold import CHANNEL_WRITTEN, StateFold

EXCLUDED_DATA_KEYS = frozenset({
    "eventId", "runId", "captureId", "causationId", "correlationId", "callId", "traceparent", "tracestate",
    "headers", "writtenAt", "durationMs", "ts",
})
ALIGN_SEQ, ALIGN_CONTENT = "seq", "content"
FOLDED_TYPES = frozenset({RUN_START, STATE_MUTATION, CHANNEL_WRITTEN})
CONTENT_WINDOW = 200


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
) -> dict[str, Any]:
    """The RFC 0054 object for two runs.

    Additions to the RFC shape: changed items carry `paths` (their differing JSON paths), and the
    object says which `align` was used and the `counts` of added/removed/changed events.
    """
    ignored = [parse_path(path) for path in ignore]
    fold_a, fold_b = StateFold(), StateFold()
    if align == ALIGN_CONTENT:
        pairs = _by_content(_folded(events_a, fold_a, ignored), _folded(events_b, fold_b, ignored))
    else:
        pairs = _by_seq(events_a, events_b, fold_a, fold_b, ignored)
    diffs: list[dict[str, Any]] = []
    diverged_at = None
    counts = {"added": 0, "removed": 0, "changed": 0}
    for seq, op, event_a, event_b in pairs:
        counts[op] += 1
        if diverged_at is None:
            diverged_at = seq
        if max_diffs is None or len(diffs) < max_diffs:
            diffs.append(_item(seq, op, event_a, event_b, ignored))
    truncated = max_diffs is not None and sum(counts.values()) > len(diffs)
    return {
        "a": a,
        "b": b,
        "divergedAtSeq": diverged_at,
        "eventDiffs": diffs,
        "stateDiff": state_diff(fold_a.snapshot(), fold_b.snapshot(), status_a, status_b),
        "truncated": truncated,
        "align": align,
        "counts": counts,
    }


def state_diff(state_a: dict[str, Any], state_b: dict[str, Any], status_a: str | None,
               status_b: str | None) -> dict[str, Any]:
    """status, variables and channels of the two folded end states: what was added, removed or changed."""
    result: dict[str, Any] = {"status": {"a": status_a, "b": status_b, "changed": status_a != status_b}}
    for part in ("variables", "channels"):
        left, right = state_a.get(part, {}), state_b.get(part, {})
        changed = {}
        for name in left.keys() & right.keys():
            if left[name] != right[name]:
                changed[name] = {"a": left[name], "b": right[name], "paths": changed_paths(left[name], right[name])}
        result[part] = {
            "added": {name: right[name] for name in right.keys() - left.keys()},
            "removed": {name: left[name] for name in left.keys() - right.keys()},
            "changed": changed,
        }
    return result


def changed_paths(left: Any, right: Any) -> list[str]:
    """Every JSON path where two values differ (deepdiff, imported only when something differs)."""
    if left == right:
        return []
    from deepdiff import DeepDiff

    from openwop_cli.replay.divergence import json_path

    tree = DeepDiff(left, right, verbose_level=0, view="tree")
    return sorted({json_path(item.path(output_format="list")) for items in tree.values() for item in items})


# ---- comparison ---------------------------------------------------------------------------------


def comparable(event: dict[str, Any], ignored: list[list[Any]]) -> dict[str, Any]:
    """What is compared of an event: its type and its data minus excluded and ignored fields."""
    data = event.get("data")
    if isinstance(data, dict):
        data = {key: value for key, value in data.items() if key not in EXCLUDED_DATA_KEYS}
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
        copy = list(value)
        for index in sorted(indexes, reverse=True):
            if rest:
                copy[index] = _without(copy[index], rest)
            else:
                del copy[index]
        return copy
    return value


def _folded(events: Iterable[dict[str, Any]], fold: StateFold, ignored: list[list[Any]]) -> Iterator[tuple]:
    for event in events:
        fold.apply(event)
        yield event, comparable(event, ignored)


def _by_seq(events_a: Iterable[dict[str, Any]], events_b: Iterable[dict[str, Any]], fold_a: StateFold,
            fold_b: StateFold, ignored: list[list[Any]]) -> Iterator[tuple]:
    """(seq, op, aEvent, bEvent) for every seq whose events differ; equal events cost one dict comparison."""
    iter_a, iter_b = iter(events_a), iter(events_b)
    apply_a, apply_b = fold_a.apply, fold_b.apply
    while True:
        left, right = next(iter_a, None), next(iter_b, None)
        if left is None and right is None:
            return
        if left is not None and left["type"] in FOLDED_TYPES:
            apply_a(left)
        if right is not None and right["type"] in FOLDED_TYPES:
            apply_b(right)
        if right is None:
            yield left["seq"], "removed", left, None
        elif left is None:
            yield right["seq"], "added", None, right
        elif left["type"] == right["type"] and left["data"] == right["data"]:
            continue
        elif comparable(left, ignored) != comparable(right, ignored):
            yield left["seq"], "changed", left, right


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
        if left[1] == right[1]:
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
        if item[1] == wanted:
            return index
    return None


def _item(seq: int, op: str, event_a: dict[str, Any] | None, event_b: dict[str, Any] | None,
          ignored: list[list[Any]]) -> dict[str, Any]:
    item: dict[str, Any] = {"seq": seq, "op": op}
    if event_a is not None:
        item["aEvent"] = event_a
    if event_b is not None:
        item["bEvent"] = event_b
    if op == "changed":
        item["paths"] = changed_paths(comparable(event_a, ignored)["data"], comparable(event_b, ignored)["data"]) \
            if event_a.get("type") == event_b.get("type") else ["$.type"]
    return item
