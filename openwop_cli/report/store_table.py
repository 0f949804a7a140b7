"""The `wop ls` table of stored captures."""

import time
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from openwop_cli.report.console import clean, status_style


def render_store_table(console: Console, rows: list[dict[str, Any]], root: str) -> None:
    """One row per capture: id, name, created, status, events, duration, command."""
    if not rows:
        console.print(f"no captures in {root} yet; record one with `wop capture -- python agent.py`", style="muted")
        return
    table = Table(caption=f"{len(rows)} captures in {root}", caption_style="muted", box=None, pad_edge=False)
    for column, justify in (("id", "left"), ("name", "left"), ("created", "left"), ("status", "left"),
                            ("events", "right"), ("duration", "right"), ("command", "left")):
        table.add_column(column, justify=justify, no_wrap=column != "command", overflow="ellipsis")
    for row in rows:
        status = row["status"]
        table.add_row(
            clean(row["captureId"][:12]),
            clean(row.get("name") or ""),
            _local_time(row.get("createdAt")),
            Text(clean(status), style=status_style(status)),
            "" if row.get("eventCount") is None else str(row["eventCount"]),
            _duration(row.get("durationMs")),
            clean(row.get("command") or row.get("problem") or ""),
        )
    console.print(table)


def _local_time(epoch_ms: Any) -> str:
    if not isinstance(epoch_ms, int):
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch_ms / 1000))


def _duration(milliseconds: Any) -> str:
    if not isinstance(milliseconds, (int, float)):
        return ""
    return f"{milliseconds / 1000:.2f}s"
