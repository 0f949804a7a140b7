"""The `wop show` timeline: one row per event, streamed so a huge capture starts printing at once."""

from typing import Any, Iterable

from rich.console import Console
from rich.text import Text

from openwop_cli.report.console import status_style, type_style
from openwop_cli.report.summary import summarize

SEQ_WIDTH = 6
OFFSET_WIDTH = 10
TYPE_WIDTH = 16


def render_header(console: Console, manifest: dict[str, Any], path: str) -> None:
    """The capture's identity line above the timeline."""
    status = manifest.get("status", "?")
    title = Text.assemble(
        ("capture ", "muted"),
        (manifest.get("captureId", "?"), "bold"),
        (f"  {manifest.get('name')}" if manifest.get("name") else "", "bold"),
        ("  status ", "muted"),
        (status, status_style(status)),
        (f"  {manifest.get('eventCount', '?')} events  ", "muted"),
        (path, "path"),
    )
    console.print(title, soft_wrap=True)


def render_rows(console: Console, events: Iterable[dict[str, Any]]) -> int:
    """Print the column header and one row per event; returns how many rows were printed."""
    console.print(
        Text(f"{'seq':>{SEQ_WIDTH}}  {'offset':>{OFFSET_WIDTH}}  {'type':<{TYPE_WIDTH}}  summary", style="muted"),
        no_wrap=True,
        overflow="ellipsis",
    )
    start = None
    rows = 0
    for event in events:
        ts = event.get("ts", 0)
        start = ts if start is None else start
        row = Text.assemble(
            (f"{event.get('seq', '?'):>{SEQ_WIDTH}}", "seq"),
            "  ",
            (f"{format_offset(ts - start):>{OFFSET_WIDTH}}", "muted"),
            "  ",
            (f"{event.get('type', '?'):<{TYPE_WIDTH}}", type_style(str(event.get("type", "")))),
            "  ",
            summarize(event),
        )
        console.print(row, no_wrap=True, overflow="ellipsis")
        rows += 1
    return rows


def format_offset(milliseconds: int) -> str:
    """+1.234s for offsets under a minute, +2m03.4s above."""
    seconds = milliseconds / 1000
    if seconds < 60:
        return f"+{seconds:.3f}s"
    minutes, rest = divmod(seconds, 60)
    return f"+{int(minutes)}m{rest:04.1f}s"
