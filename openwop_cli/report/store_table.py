"""The `wop ls` list of stored captures: a table fitted to the terminal, or one tab-separated line a capture when
the reader is not a terminal."""

import time
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.text import Text

from openwop_cli.report.console import status_style
from openwop_cli.report.escape import clean_inline
from openwop_cli.report.fitted import Layout, Row, print_fitted, shortened_command

LAYOUT = Layout(headers=("id", "name", "age", "status", "events", "duration", "command"),
                shorten=shortened_command, right=frozenset({4, 5}), moved=1, under=1, wrapped=1)


def render_store_table(console: Console, rows: list[dict[str, Any]], root: str) -> None:
    """At a terminal, one row per capture fitted to its width: id, name, age, status, events, duration, command
    (none but the command ever shortened: in the middle, or on a line of its own under the row). Otherwise one
    tab-separated line a capture with every field whole (see `listed_line`)."""
    if not rows:
        console.print(f"no captures in {root} yet; record one with `wop capture -- python agent.py`", style="muted")
        return
    if not console.is_terminal:
        console.file.write("".join(listed_line(row) + "\n" for row in rows))
        console.file.flush()
        return
    now = time.time()
    print_fitted(console, LAYOUT, [_table_row(row, now) for row in rows], console.width)
    console.print(f"{len(rows)} captures in {root}", style="muted")


def listed_line(row: dict[str, Any]) -> str:
    """A capture as the fields `wop ls` prints to a pipe, tab-separated: full id, name, created (ISO 8601),
    status, events, duration, command; a tab or newline inside a field shown as an escape."""
    fields = (row["captureId"], row.get("name") or "", _iso_time(row.get("createdAt")), row["status"],
              "" if row.get("eventCount") is None else row["eventCount"], _duration(row.get("durationMs")),
              row.get("command") or row.get("problem") or "")
    return "\t".join(clean_inline(field) for field in fields)


def _table_row(row: dict[str, Any], now: float) -> Row:
    status = row["status"]
    return Row(cells=(Text(clean_inline(row["captureId"][:12])), Text(clean_inline(row.get("name") or "")),
                      Text(_age(row.get("createdAt"), now)), Text(clean_inline(status), style=status_style(status)),
                      Text("" if row.get("eventCount") is None else str(row["eventCount"])),
                      Text(_duration(row.get("durationMs")))),
               last=clean_inline(row.get("command") or row.get("problem") or ""))


def _age(epoch_ms: Any, now: float) -> str:
    """How long ago, as kubectl prints an age: `45s`, `5m`, `3h`, `12d`."""
    if not isinstance(epoch_ms, int):
        return "?"
    seconds = max(0, int(now - epoch_ms / 1000))
    for limit, unit, suffix in ((60, 1, "s"), (3600, 60, "m"), (86400, 3600, "h")):
        if seconds < limit:
            return f"{seconds // unit}{suffix}"
    return f"{seconds // 86400}d"


def _iso_time(epoch_ms: Any) -> str:
    if not isinstance(epoch_ms, int):
        return ""
    return datetime.fromtimestamp(epoch_ms / 1000).astimezone().isoformat(timespec="seconds")


def _duration(milliseconds: Any) -> str:
    if not isinstance(milliseconds, (int, float)):
        return ""
    return f"{milliseconds / 1000:.2f}s"
