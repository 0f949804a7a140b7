"""The report of a batch of replays: each diverged replay's report, then one summary table; its JSON;
and the GitHub Actions annotations."""

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from openwop_cli.report.console import clean, status_style
from openwop_cli.report.verdict import render_replay, replay_json
from openwop_cli.trust import shown_command

_VERDICT_STYLES = {"ok": "ok", "diverged": "error", "skipped": "warning", "error": "error"}


def render_batch(console: Console, entries: list[Any]) -> None:
    """Print the report of every replay that diverged, then a table with one row per capture (BatchResults)."""
    for entry in entries:
        if entry.verdict == "diverged":
            render_replay(console, entry.outcome)
    table = Table(title=f"wop replay: {len(entries)} captures", show_edge=False, pad_edge=False)
    for column in ("capture", "id", "path", "result", "score", "divergences", "first at"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        verdict = Text(entry.verdict, status_style(_VERDICT_STYLES[entry.verdict]))
        cells = [clean(entry.name), clean(entry.capture_id), clean(entry.source), verdict]
        if entry.verdict == "skipped":
            table.add_row(*cells, "", "", clean(f"not trusted: {shown_command(entry.error.command)}"))
            continue
        if entry.error is not None:
            table.add_row(*cells, "", "", clean(entry.error.message))
            continue
        first = entry.outcome.score.get("firstDivergenceSeq")
        table.add_row(*cells, f"{entry.outcome.score.get('score', 1.0):.2f}", str(len(entry.outcome.divergences)),
                      "" if first is None else f"seq {first}")
    console.print(table)
    counts = {verdict: sum(entry.verdict == verdict for entry in entries) for verdict in _VERDICT_STYLES}
    console.print(Text(", ").join(Text(f"{count} {verdict}", status_style(_VERDICT_STYLES[verdict]))
                                  for verdict, count in counts.items() if count))
    _render_skipped(console, [entry for entry in entries if entry.verdict == "skipped"])


def _render_skipped(console: Console, skipped: list[Any]) -> None:
    """Each capture skipped because its recorded command is not trusted here: its command and why, and what to do."""
    if not skipped:
        return
    console.print(Text(f"skipped {len(skipped)} capture(s) whose recorded command is not trusted here:", "warning"))
    for entry in skipped:
        console.print(Text.assemble("  ", (clean(entry.source), "path"), f"  {clean(shown_command(entry.error.command))}"
                                    f"  ({clean(entry.error.reason)})"), soft_wrap=True)
    console.print("  replay them with your own command after --, or with --trust (WOP_TRUST=1) if you trust them",
                  style="muted")


def batch_json(entries: list[Any]) -> list[dict[str, Any]]:
    """Every capture the batch ran: name, id, path, verdict and seconds, with its replay report or its error."""
    report = []
    for entry in entries:
        item: dict[str, Any] = {"name": entry.name, "id": entry.capture_id, "path": str(entry.source),
                                "verdict": entry.verdict, "seconds": round(entry.seconds, 3)}
        if entry.verdict == "skipped":
            item.update(error=entry.error.message, exitCode=entry.error.exit_code,
                        skipped={"command": entry.error.command, "reason": entry.error.reason})
        elif entry.error is not None:
            item.update(error=entry.error.message, exitCode=entry.error.exit_code)
        else:
            item.update(replay_json(entry.outcome))
        report.append(item)
    return report


def github_annotations(entries: list[Any]) -> list[str]:
    """`::error` workflow commands: one per divergence, one per capture that could not run."""
    lines = []
    for entry in entries:
        label = f"{entry.name} ({entry.capture_id}) {entry.source}" if entry.capture_id else f"{entry.name} {entry.source}"
        title = _escape(f"wop replay: {label}")
        if entry.error is not None:
            lines.append(f"::error title={title}::{_escape(entry.error.message)}")
            continue
        for divergence in entry.outcome.divergences:
            where = f" at seq {divergence.event_seq}" if divergence.event_seq is not None else ""
            path = f" {divergence.json_path}" if divergence.json_path else ""
            lines.append(f"::error title={title}::{_escape(f'{divergence.code}{where}{path}: {divergence.detail}')}")
    return lines


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace("::", ": :")
