"""The `wop show` timeline: calls on one row each (request → response, duration, tokens), nested
under the call that was pending in the same thread/task when they were made, streamed so a huge
capture starts printing at once.
"""

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.text import Text

from openwop_cli.report.console import status_style, type_style
from openwop_cli.report.escape import clean, clean_inline
from openwop_cli.report.summary import short_json, summarize

SEQ_WIDTH = 9
OFFSET_WIDTH = 10
DURATION_WIDTH = 8
SITE_WIDTH = 30
TYPE_WIDTH = 16
MAX_WAITING_ROWS = 500
PLAIN_BATCH_ROWS = 256
_CALLS = {"tool_call": "tool_result", "llm_request": "llm_response"}
_RESULTS = frozenset(_CALLS.values())


@dataclass(eq=False)
class Row:
    """One line of the timeline: an event, or a call with its result; parent is the call it is nested under."""

    event: dict[str, Any]
    depth: int = 0
    result: dict[str, Any] | None = None
    waiting: bool = False
    origin: tuple = field(default_factory=tuple)
    group: list[dict[str, Any]] = field(default_factory=list)
    parent: "Row | None" = None

    @property
    def events(self) -> list[dict[str, Any]]:
        if self.group:
            return self.group
        return [self.event] if self.result is None else [self.event, self.result]


def render_header(console: Console, manifest: dict[str, Any], path: str) -> None:
    """The capture's identity line above the timeline."""
    console.print(header(manifest, path), soft_wrap=True)


def header(manifest: dict[str, Any], path: str) -> Text:
    """The capture's identity: id, name, status, event count, where it is (and what it was forked from)."""
    status = clean(manifest.get("status", "?"))
    title = Text.assemble(
        ("capture ", "muted"),
        (clean(manifest.get("captureId", "?")), "bold"),
        (f"  {clean(manifest.get('name'))}" if manifest.get("name") else "", "bold"),
        ("  status ", "muted"),
        (status, status_style(status)),
        (f"  {clean(manifest.get('eventCount', '?'))} events  ", "muted"),
        (clean(path), "path"),
    )
    if manifest.get("source"):
        source = manifest["source"]
        title.append(clean(f"  {source.get('mode')} of {source.get('captureId')}"), "muted")
    return title


def render_rows(console: Console, events: Iterable[dict[str, Any]], keep: Callable[[Row], bool] = lambda row: True,
                sites: bool = False) -> int:
    """Print the column header and one row per call or event that `keep` accepts; returns how many.

    sites: end each row with where in the program the call was made (origin.site)."""
    console.print(Text(column_header(sites), style="muted"), no_wrap=True, overflow="ellipsis")
    printed = 0
    for row, start in _kept(events, keep):
        console.print(Text.assemble(*_cells(row, start, sites)), no_wrap=True, overflow="ellipsis")
        printed += 1
    return printed


def write_plain_rows(write: Callable[[str], Any], events: Iterable[dict[str, Any]],
                     keep: Callable[[Row], bool] = lambda row: True, sites: bool = False) -> int:
    """render_rows as plain text for a pipe or file: the same columns, no styling, no width cut, one line per row
    (recorded text escaped as on a terminal), written in batches; returns how many rows."""
    write(column_header(sites) + "\n")
    batch: list[str] = []
    printed = 0
    for row, start in _kept(events, keep):
        batch.append("".join([cell[0] for cell in _cells(row, start, sites)]))
        printed += 1
        if len(batch) == PLAIN_BATCH_ROWS:
            write("\n".join(batch) + "\n")
            batch = []
    if batch:
        write("\n".join(batch) + "\n")
    return printed


def column_header(sites: bool) -> str:
    """The timeline's column names."""
    site_column = f"{'site':<{SITE_WIDTH}}  " if sites else ""
    return (f"{'seq':>{SEQ_WIDTH}}  {'offset':>{OFFSET_WIDTH}}  {'took':>{DURATION_WIDTH}}  "
            f"{'type':<{TYPE_WIDTH}}  {site_column}summary")


def _kept(events: Iterable[dict[str, Any]], keep: Callable[[Row], bool]) -> Iterator[tuple[Row, int]]:
    """The rows `keep` accepts, each with the run's first ts (offsets count from the first row, kept or not)."""
    start = None
    for row in ambient_grouped(paired_rows(events)):
        if start is None:
            start = row.event.get("ts", 0)
        if keep(row):
            yield row, start


def paired_rows(events: Iterable[dict[str, Any]]) -> Iterator[Row]:
    """Rows in the order calls were made; a call waits for its result (up to MAX_WAITING_ROWS rows)."""
    pending: dict[Any, Row] = {}
    open_by_origin: dict[tuple, list[Row]] = {}
    queue: deque[Row] = deque()
    for event in events:
        event_type = event.get("type")
        data = event.get("data") or {}
        origin = _origin(event)
        if event_type in _RESULTS and data.get("callId") in pending:
            row = pending.pop(data["callId"])
            row.result = event
            row.waiting = False
            open_by_origin[row.origin].remove(row)
        else:
            calls = open_by_origin.setdefault(origin, [])
            row = Row(event, depth=len(calls), origin=origin, parent=calls[-1] if calls else None)
            queue.append(row)
            if event_type in _CALLS and data.get("callId") is not None:
                row.waiting = True
                pending[data["callId"]] = row
                calls.append(row)
        while queue and (not queue[0].waiting or len(queue) > MAX_WAITING_ROWS):
            yield queue.popleft()
    yield from queue


def ambient_grouped(rows: Iterable[Row]) -> Iterator[Row]:
    """Rows with each run of consecutive ambient values (clock, uuid, random read by unmodified code) folded
    into one row per call site; `wop show --seq N` shows any one of them in full."""
    run: dict[tuple, Row] = {}
    for row in rows:
        if not _is_ambient(row.event):
            yield from run.values()
            run = {}
            yield row
            continue
        site = (row.event.get("origin") or {}).get("site") or {}
        where = (site.get("file"), site.get("line"), site.get("function"))
        found = run.get(where)
        if found is None:
            run[where] = Row(row.event, depth=row.depth, origin=row.origin, group=[row.event])
        else:
            found.group.append(row.event)
    yield from run.values()


def ambient_text(events: list[dict[str, Any]]) -> str:
    """One call site's ambient values: where, then each source and key with its count, first and last value."""
    site = (events[0].get("origin") or {}).get("site") or {}
    by_key: dict[tuple, list[Any]] = {}
    for event in events:
        data = event.get("data") or {}
        by_key.setdefault((data.get("source"), data.get("key")), []).append(data.get("value"))
    parts = []
    for (source, key), values in by_key.items():
        shown = short_json(values[0], 40)
        if len(values) > 1:
            shown = f"×{len(values)} {shown} … {short_json(values[-1], 40)}"
        parts.append(f"{source} {key} {shown}")
    where = f"{site.get('file')}:{site.get('line')} {site.get('function')}" if site else "(no site)"
    return f"{where} · " + " · ".join(parts)


def _is_ambient(event: dict[str, Any]) -> bool:
    return event.get("type") == "nondeterministic" and (event.get("data") or {}).get("ambient") is True


def format_offset(milliseconds: int) -> str:
    """+1.234s for offsets under a minute, +2m03.4s above."""
    seconds = milliseconds / 1000
    if seconds < 60:
        return f"+{seconds:.3f}s"
    minutes, rest = divmod(seconds, 60)
    return f"+{int(minutes)}m{rest:04.1f}s"


def row_text(row: Row) -> str:
    """The summary of a row: the call → its result (or the event alone, or a call site's ambient values)."""
    if row.group:
        return ambient_text(row.group)
    text = summarize(row.event)
    if row.result is not None:
        return f"{text}  →  {summarize(row.result)}"
    if row.waiting:
        return f"{text}  →  (no result recorded)"
    return text


def site_cell(event: dict[str, Any]) -> str:
    """`support_agent.py:61`, padded to the site column: where the program made this call ("" if not recorded);
    a long path keeps its end."""
    site = (event.get("origin") or {}).get("site")
    text = clean_inline(f"{site.get('file')}:{site.get('line')}") if isinstance(site, dict) else ""
    if len(text) > SITE_WIDTH:
        text = "…" + text[-(SITE_WIDTH - 1):]
    return f"{text:<{SITE_WIDTH}}"


def _cells(row: Row, start: int, sites: bool) -> tuple[tuple[str, str], ...]:
    """A row's columns as (text, theme style) pieces: rich assembles them, a pipe gets their text."""
    event = row.event
    ts = event.get("ts", 0)
    seq = str(event.get("seq", "?"))
    took = ""
    if row.result is not None:
        seq = f"{seq}–{row.result.get('seq', '?')}"
        took = _duration(row.result.get("ts", ts) - ts)
    elif len(row.group) > 1:
        seq = f"{seq}…{row.group[-1].get('seq', '?')}"
    event_type = str(event.get("type", ""))
    label = {"tool_call": "tool", "llm_request": "llm"}.get(event_type, event_type) if row.result is not None else event_type
    if event_type == "tool_call" and (event.get("data") or {}).get("kind") == "mcp":
        label = "mcp"
    if row.group:
        label = "ambient"
    diverged = event_type == "replay_diverged"
    failed = diverged or (row.result is not None and (row.result.get("data") or {}).get("ok") is False)
    return (
        (f"{seq:>{SEQ_WIDTH}}", "seq"), ("  ", ""),
        (f"{format_offset(ts - start):>{OFFSET_WIDTH}}", "muted"), ("  ", ""),
        (f"{took:>{DURATION_WIDTH}}", "muted"), ("  ", ""),
        (f"{clean_inline(label):<{TYPE_WIDTH}}", type_style(event_type)), ("  ", ""),
        (site_cell(event) + "  " if sites else "", "path"),
        ("  " * row.depth, ""), ("✗ " if diverged else "", "error"),
        (clean_inline(row_text(row)), "error" if failed else ""),
    )


def _duration(milliseconds: int) -> str:
    if milliseconds < 1000:
        return f"{milliseconds}ms"
    return f"{milliseconds / 1000:.2f}s"


def _origin(event: dict[str, Any]) -> tuple:
    origin = event.get("origin") or {}
    return origin.get("pid"), origin.get("thread"), origin.get("task")
