"""The replay/fork report: a header with the score, one panel per divergence, what could not be reproduced
exactly (notes), the files changed since capture.

A panel shows the values at the divergence's JSON path side by side; when there is no path (a call
the capture does not have, one today's run never made) it shows the calls themselves.
"""

from typing import Any

import orjson
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from openwop_cli.format.imported import DESCRIPTIONS, NOT_IN_TRACE, hidden_spans, not_in_trace
from openwop_cli.format.schema import dumps_wrapping
from openwop_cli.replay.divergence import EVENT_MISSING
from openwop_cli.replay.nondeterminism import divergence_hint, site_text
from openwop_cli.report.escape import clean
from openwop_cli.report.replay_lines import header_lines, stopping_divergence, verdict_line
from openwop_cli.report.summary import plural, summarize

MAX_PANELS = 20
WINDOW = 48


def render_replay(console: Console, outcome: Any) -> None:
    """Print a ReplayOutcome for people (see `replay_json` for machines).

    When the program ended before making recorded calls, the report leads with how it ended and what it
    last wrote to stderr, and the calls it never made are one line, not a panel each."""
    shown = outcome.divergences
    if outcome.early_exit is not None:
        console.print(_early_exit(outcome))
        shown = [divergence for divergence in shown
                 if divergence.code != EVENT_MISSING and divergence.json_path != "$.exitCode"]
    console.print(_header(outcome))
    if outcome.edits:
        console.print(_edits(outcome))
        shown = [divergence for divergence in shown if divergence.code != EVENT_MISSING]
    for index, divergence in enumerate(shown[:MAX_PANELS]):
        console.print(_panel(divergence, hint(outcome, divergence)))
        if index == 0 and outcome.source_change is not None:
            console.print(_source_panel(outcome.source_change))
    if len(shown) > MAX_PANELS:
        console.print(Text(f"… and {len(shown) - MAX_PANELS} more divergences (--json lists all)", style="muted"))
    if outcome.edits:
        console.print(_consequences(outcome))
    for note in outcome.notes:
        console.print(_note(note))
    if outcome.changed_files:
        console.print(Text("program files changed since the capture:", style="warning"))
        for changed in outcome.changed_files:
            state = "deleted" if changed["today"] is None else "changed"
            console.print(Text.assemble("  ", (clean(changed["path"]), "path"), f"  {state}"))
    traced = _from_trace(outcome)
    if traced is not None:
        console.print(traced)
    live = outcome.live_values
    if live:
        reads = sum(note["count"] for note in live)
        why = ("not in the trace" if not_in_trace(outcome.source_manifest) else
               "the capture has no (more) values recorded at these call sites (new or moved code)")
        console.print(Text(f"{reads} clock/uuid/random read{'s' if reads != 1 else ''} got a live value: {why}:",
                           style="muted" if not_in_trace(outcome.source_manifest) else "warning"))
        for note in live[:MAX_PANELS]:
            console.print(Text.assemble("  ", (clean(site_text(note.get("site"))), "path"),
                                        clean(f"  {note.get('source')} {note.get('key')} ×{note.get('count')}")))
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
    """The stable JSON report of a replay or fork. It starts with the fork Response of openwop-replay-and-fork.md:
    `runId` (the new run), `sourceRunId`, `fromSeq` and `mode` (`replay`, or `branch` for `wop fork`)."""
    capture = outcome.capture
    early_exit = None
    if outcome.early_exit is not None:
        early_exit = {**outcome.early_exit, "error": capture.manifest.get("error"), "stderrTail": capture.stderr_tail}
    return {
        "runId": capture.manifest.get("runId"),
        "sourceRunId": outcome.source_manifest.get("runId"),
        "mode": "branch" if outcome.branch else "replay",
        "source": {"captureId": outcome.source_manifest.get("captureId"), "path": str(outcome.source_dir)},
        "replay": {"captureId": capture.capture_id, "path": str(capture.path), "exitCode": capture.exit_code,
                   "status": capture.manifest.get("status")},
        "policy": None if outcome.branch else outcome.policy,
        "fromSeq": outcome.from_seq,
        "score": outcome.score,
        "diverged": outcome.diverged,
        "divergences": [_with_hint(divergence.to_json(), hint(outcome, divergence))
                        for divergence in outcome.divergences],
        "stoppedBy": stopping_divergence(outcome).to_json() if stopping_divergence(outcome) else None,
        "earlyExit": early_exit,
        "edits": outcome.edits,
        "diff": outcome.diff,
        "notes": outcome.notes,
        "changedFiles": outcome.changed_files,
        "sourceChange": outcome.source_change,
        "liveValues": outcome.live_values,
        "compared": outcome.compared,
        "notInTrace": sorted(not_in_trace(outcome.source_manifest)),
        "hiddenInTrace": hidden_spans(outcome.source_manifest),
    }


def _from_trace(outcome: Any) -> Group | None:
    """For a capture imported from a trace: what the trace could not hold (read live, never a divergence) and the
    spans whose content it hid (their calls cannot be compared or served)."""
    missing = not_in_trace(outcome.source_manifest)
    if not missing:
        return None
    listed = "; ".join(DESCRIPTIONS.get(name, name) for name in NOT_IN_TRACE if name in missing)
    lines: list[Any] = [Text(f"imported from a trace; not in the trace (read live, not compared): {listed}",
                             style="muted")]
    hidden = hidden_spans(outcome.source_manifest)
    if hidden:
        lines.append(Text(f"the trace hid the content of {plural(len(hidden), 'span')}:", style="warning"))
        for span in hidden[:MAX_PANELS]:
            lines.append(Text.assemble("  ", clean(f"{span.get('kind')} span {span.get('spanId')} {span.get('name')!r}: "
                                                   f"{', '.join(map(str, span.get('hidden') or []))}")))
    return Group(*lines)


def _early_exit(outcome: Any) -> Group:
    early = outcome.early_exit
    count = early["missingCalls"]
    lines: list[Any] = [Text(f"the program exited with code {early['exitCode']} before making "
                             f"{plural(count, 'recorded call')} (the recorded run exited with "
                             f"{early['recordedExitCode']})", style="error")]
    error = outcome.capture.manifest.get("error")
    if error:
        lines.append(Text.assemble(("  ", ""), (clean(error), "observed")))
    if outcome.capture.stderr_tail:
        lines.append(Text("  its last lines on stderr:", style="muted"))
        lines.extend(Text(f"    {clean(line)}", style="muted") for line in outcome.capture.stderr_tail)
    missing = [divergence for divergence in outcome.divergences if divergence.code == EVENT_MISSING]
    if missing:
        first = missing[0]
        lines.append(Text(f"{plural(len(missing), 'recorded call')} never made "
                          f"(event_missing), the first at seq {first.event_seq}: {clean(_text(first.sides()[0]))}",
                          style="warning"))
    return Group(*lines)


def _edits(outcome: Any) -> Group:
    """What an edited fork changed: each edit, then the recorded calls that did not happen because of it."""
    lines: list[Any] = []
    for edit in outcome.edits:
        lines.append(Text.assemble(("edited ", "warning"), ("seq ", "muted"), (str(edit["seq"]), "seq"), "  ",
                                   (clean(edit["path"]), "path")))
        lines.append(side_by_side(edit["recorded"], edit["edited"], ("recorded", "edited")))
    changed = [divergence for divergence in outcome.divergences if divergence.code != EVENT_MISSING]
    if changed:
        first = changed[0]
        at = f"seq {first.event_seq}" if first.event_seq is not None else "a call the recording does not have"
        lines.append(Text(f"served from the capture until {at}, the first call the edit changed:", style="muted"))
    return Group(*lines)


def _consequences(outcome: Any) -> Group:
    """After an edited fork's panels: the recorded calls that did not happen, and the RFC 0054 diff's verdict."""
    lines: list[Any] = []
    missing = [divergence for divergence in outcome.divergences if divergence.code == EVENT_MISSING]
    if missing:
        lines.append(Text(f"{plural(len(missing), 'recorded call')} did not happen in the fork:", style="warning"))
        for divergence in missing[:MAX_PANELS]:
            what = summarize(divergence.expected) if isinstance(divergence.expected, dict) else ""
            lines.append(Text.assemble("  ", ("seq ", "muted"), (str(divergence.event_seq), "seq"), "  ",
                                       clean(divergence.event_type or ""), "  ", clean(what)))
    diff = outcome.diff
    if diff is not None:
        counts = diff.get("counts") or {}
        where = "identical" if diff["divergedAtSeq"] is None else f"diverges at seq {diff['divergedAtSeq']}"
        lines.append(Text(f"the fork against the original (RFC 0054): {where}; {counts.get('changed', 0)} changed, "
                          f"{counts.get('added', 0)} added, {counts.get('removed', 0)} removed "
                          f"(`wop diff {clean(outcome.source_dir)} {clean(outcome.capture.path)}`)", style="muted"))
    return Group(*lines)


def _note(note: dict[str, Any]) -> Group:
    seq = note.get("eventSeq")
    parts: list[Any] = [Text.assemble(("note ", "muted"), (f"seq {seq}  " if seq is not None else "", "seq"),
                                      (clean(note.get("code")), "warning"), "  ", clean(note.get("detail")))]
    if note.get("recorded") is not None or note.get("observed") is not None:
        parts.append(side_by_side(note.get("recorded"), note.get("observed"), ("recorded", "today")))
    return Group(*parts)


def hint(outcome: Any, divergence: Any) -> dict[str, Any] | None:
    """The explanation of a divergence whose values differ only in timestamps, uuids or random ids (else None)."""
    return divergence_hint(divergence.expected_value, divergence.observed_value,
                           outcome.source_manifest.get("ambient") is True,
                           outcome.live_values)


def _with_hint(data: dict[str, Any], found: dict[str, Any] | None) -> dict[str, Any]:
    if found is not None:
        data["hint"] = found
    return data


def _header(outcome: Any) -> Text:
    return Text("\n").join(Text.assemble(*line) for line in header_lines(outcome))


def _source_panel(change: dict[str, Any]) -> Panel:
    """The unified diff of the changed program file the divergent call was made in, nearest hunk first."""
    title = Text.assemble(("source changed since the capture  ", "warning"),
                          (clean(f"{change['file']}:{change['line']}"), "path"), clean(f"  in {change['function']}()"))
    lines: list[Any] = []
    for hunk in change["hunks"]:
        lines.append(Text(clean(hunk["header"]), style="muted"))
        for line in hunk["lines"]:
            style = "observed" if line.startswith("+") else "expected" if line.startswith("-") else ""
            lines.append(Text(clean(line), style=style))
    if not lines:
        lines.append(Text(f"sha256 {clean(change['pinnedSha256'])[:12]}… then, {change['currentSha256'][:12]}… now "
                          "(the capture holds no copy of the file to diff against)", style="muted"))
    return Panel(Group(*lines), title=title, title_align="left", border_style="warning")


def _panel(divergence: Any, found: dict[str, Any] | None = None) -> Panel:
    where = (("seq ", str(divergence.event_seq)) if divergence.event_seq is not None
             else ("before seq ", str(divergence.point)) if divergence.point is not None else ("seq ", "-"))
    title = Text.assemble(
        (where[0], "muted"), (where[1], "seq"),
        "  ", (clean(divergence.code), "error"), "  ", clean(divergence.event_type or ""),
    )
    parts: list[Any] = [Text(clean(divergence.detail))]
    if divergence.site:
        site = divergence.site
        parts.append(Text.assemble(("called from ", "muted"), (clean(f"{site.get('file')}:{site.get('line')}"), "path"),
                                   clean(f" in {site.get('function')}()")))
    if divergence.json_path:
        parts.append(Text.assemble(("at ", "muted"), (clean(divergence.json_path), "path")))
    expected, observed = divergence.sides()
    if expected is not None or observed is not None:
        parts.append(side_by_side(expected, observed))
    if found is not None:
        parts.append(Text(clean(found["message"]), style="warning"))
        parts.append(Text.assemble(("fix: ", "muted"), clean(found["fix"])))
    return Panel(Group(*parts), title=title, title_align="left", border_style="observed")


def side_by_side(expected: Any, observed: Any, titles: tuple[str, str] = ("expected (capture)", "observed (today)")) -> Table:
    """Two values in two columns, trimmed to a window around their first difference."""
    was, now = _text(expected), _text(observed)
    start = _first_difference(was, now) if was != now else 0
    table = Table(show_edge=False, expand=True, pad_edge=False)
    table.add_column(titles[0], style="expected", ratio=1, overflow="fold")
    table.add_column(titles[1], style="observed", ratio=1, overflow="fold")
    table.add_row(clean(_around(was, start)), clean(_around(now, start)))
    return table


def trimmed(values: list[Any]) -> list[str]:
    """Values as text, each trimmed to a window around the first place where they differ."""
    texts = [_text(value) for value in values]
    start = min((_first_difference(texts[0], text) for text in texts[1:] if text != texts[0]), default=0)
    return [_around(text, start) for text in texts]


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
    return Text.assemble(*verdict_line(outcome))
