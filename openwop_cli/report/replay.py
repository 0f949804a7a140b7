"""The replay/fork report: a header with the score, one panel per divergence, the files changed since capture."""

from typing import Any

import orjson
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from openwop_cli.format.schema import dumps_wrapping
from openwop_cli.report.console import clean

MAX_PANELS = 20
WINDOW = 48


def render_replay(console: Console, outcome: Any) -> None:
    """Print a ReplayOutcome for people (see `replay_json` for machines)."""
    console.print(_header(outcome))
    for divergence in outcome.divergences[:MAX_PANELS]:
        console.print(_panel(divergence))
    if len(outcome.divergences) > MAX_PANELS:
        console.print(Text(f"… and {len(outcome.divergences) - MAX_PANELS} more divergences (--json lists all)",
                           style="muted"))
    if outcome.changed_files:
        console.print(Text("program files changed since the capture:", style="warning"))
        for changed in outcome.changed_files:
            state = "deleted" if changed["today"] is None else "changed"
            console.print(Text.assemble("  ", (clean(changed["path"]), "path"), f"  {state}"))
    console.print(_verdict(outcome))


def replay_text(outcome: Any, width: int = 100) -> str:
    """The report as plain text without colour codes (what a failing pytest test prints)."""
    import io

    from openwop_cli.report.console import THEME

    buffer = io.StringIO()
    render_replay(Console(file=buffer, width=width, no_color=True, force_terminal=False, theme=THEME,
                          highlight=False), outcome)
    return buffer.getvalue()


def replay_json(outcome: Any) -> dict[str, Any]:
    """The stable JSON report of a replay or fork."""
    capture = outcome.capture
    return {
        "mode": "fork" if outcome.branch else "replay",
        "source": {"captureId": outcome.source_manifest.get("captureId"), "path": str(outcome.source_dir)},
        "replay": {"captureId": capture.capture_id, "path": str(capture.path), "exitCode": capture.exit_code,
                   "status": capture.manifest.get("status")},
        "policy": None if outcome.branch else outcome.policy,
        "fromSeq": outcome.from_seq,
        "score": outcome.score,
        "diverged": outcome.diverged,
        "divergences": [divergence.to_json() for divergence in outcome.divergences],
        "changedFiles": outcome.changed_files,
    }


def _header(outcome: Any) -> Text:
    score = outcome.score
    source = outcome.source_manifest
    label = "fork" if outcome.branch else f"replay ({outcome.policy})"
    text = Text.assemble(
        (label, "bold"), " of ", (clean(source.get("captureId")), "bold"), clean(f" {source.get('name') or ''}".rstrip()),
        "  score ", (f"{score.get('score', 1.0):.2f}", "ok" if not outcome.diverged else "warning"),
        f" ({score.get('matchedEvents')}/{score.get('comparedEvents')} matched)",
    )
    if outcome.from_seq:
        text.append(f"  from seq {outcome.from_seq}")
    text.append("\n")
    text.append_text(Text.assemble(("new capture ", "muted"), clean(outcome.capture.capture_id), "  ",
                                   (clean(outcome.capture.path), "path")))
    return text


def _panel(divergence: Any) -> Panel:
    title = Text.assemble(
        ("seq ", "muted"), (str(divergence.event_seq) if divergence.event_seq is not None else "-", "seq"),
        "  ", (clean(divergence.code), "error"), "  ", clean(divergence.event_type or ""),
    )
    parts: list[Any] = [Text(clean(divergence.detail))]
    if divergence.json_path:
        parts.append(Text.assemble(("at ", "muted"), (clean(divergence.json_path), "path")))
    if divergence.expected is not None or divergence.observed is not None:
        parts.append(side_by_side(divergence.expected, divergence.observed))
    return Panel(Group(*parts), title=title, title_align="left", border_style="observed")


def side_by_side(expected: Any, observed: Any, titles: tuple[str, str] = ("expected (capture)", "observed (today)")) -> Table:
    """Two values in two columns, trimmed to a window around their first difference."""
    was, now = _text(expected), _text(observed)
    start = _first_difference(was, now)
    table = Table(show_edge=False, expand=True, pad_edge=False)
    table.add_column(titles[0], style="expected", ratio=1, overflow="fold")
    table.add_column(titles[1], style="observed", ratio=1, overflow="fold")
    table.add_row(clean(_around(was, start)), clean(_around(now, start)))
    return table


def _text(value: Any) -> str:
    if value is None:
        return "(absent)"
    if isinstance(value, str):
        return value
    return dumps_wrapping(value, orjson.OPT_SORT_KEYS).decode()


def _first_difference(a: str, b: str) -> int:
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return index
    return min(len(a), len(b))


def _around(text: str, index: int) -> str:
    """text trimmed to a window around index, with ellipses where it was cut."""
    start = max(0, index - WINDOW // 2)
    end = min(len(text), start + WINDOW * 2)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _verdict(outcome: Any) -> Text:
    if not outcome.diverged:
        what = "the history before the branch point replayed exactly" if outcome.branch else "no divergence: the run replays exactly"
        return Text(what, style="ok")
    count = len(outcome.divergences)
    first = outcome.score.get("firstDivergenceSeq")
    where = f", first at seq {first}" if first is not None else ""
    return Text(f"{count} divergence{'s' if count != 1 else ''}{where}", style="error")
