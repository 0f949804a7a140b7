"""The report of a batch of replays: each diverged replay's report, then one summary table; its JSON;
and the GitHub Actions annotations."""

from typing import Any

from rich.console import Console
from rich.text import Text

from openwop_cli.report.console import status_style
from openwop_cli.report.escape import clean, clean_inline
from openwop_cli.report.fitted import Layout, Row, print_fitted, shortened_path
from openwop_cli.report.verdict import render_replay, replay_json
from openwop_cli.trust import shown_command

_VERDICT_STYLES = {"ok": "ok", "diverged": "error", "skipped": "warning", "error": "error"}
LAYOUT = Layout(headers=("capture", "result", "score", "divergences", "first at", "id", "path"),
                shorten=shortened_path, right=frozenset({2, 3}), moved=2, under=0, indent=2, wrapped=0)


def render_batch(console: Console, entries: list[Any]) -> None:
    """Print the report of every replay that diverged, then a table with one row per capture (BatchResults)."""
    for entry in entries:
        if entry.verdict == "diverged":
            render_replay(console, entry.outcome)
    console.print(f"wop replay: {len(entries)} captures", style="table.title", soft_wrap=True)
    print_fitted(console, LAYOUT, [_summary_row(entry, console.is_terminal) for entry in entries],
                 console.width if console.is_terminal else None)
    counts = {verdict: sum(entry.verdict == verdict for entry in entries) for verdict in _VERDICT_STYLES}
    console.print(Text(", ").join(Text(f"{count} {verdict}", status_style(_VERDICT_STYLES[verdict]))
                                  for verdict, count in counts.items() if count))
    _render_skipped(console, [entry for entry in entries if entry.verdict == "skipped"])


def _summary_row(entry: Any, at_terminal: bool) -> Row:
    """A capture's line of the summary: name, verdict, score, divergences, first at, id (12 characters at a
    terminal), path; the error of one that could not run on a line of its own."""
    verdict = Text(entry.verdict, status_style(_VERDICT_STYLES[entry.verdict]))
    capture_id = clean_inline(entry.capture_id or "")
    score = divergences = first_at = ""
    if entry.error is None:
        first = entry.outcome.score.get("firstDivergenceSeq")
        score, divergences = f"{entry.outcome.score.get('score', 1.0):.2f}", str(len(entry.outcome.divergences))
        first_at = "" if first is None else f"seq {first}"
    note = None if entry.error is None or entry.verdict == "skipped" else Text(clean_inline(entry.error.message),
                                                                                "error")
    return Row(cells=(Text(clean_inline(entry.name)), verdict, Text(score), Text(divergences), Text(first_at),
                      Text(capture_id[:12] if at_terminal else capture_id)),
               last=clean_inline(entry.source), note=note)


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
