"""The `wop replay --repeat` report: where N replays of one capture disagree (uncaptured nondeterminism)."""

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from openwop_cli.replay.nondeterminism import site_text
from openwop_cli.report.escape import clean
from openwop_cli.report.verdict import render_replay, replay_json, trimmed

MAX_PANELS = 20


def render_repeat(console: Console, outcome: Any) -> None:
    """Print a RepeatOutcome for people: the first replay that diverged in full, then each difference."""
    diverged = next((replay for replay in outcome.replays if replay.diverged), None)
    if diverged is not None:
        render_replay(console, diverged)
    console.print(_summary(outcome))
    for found in outcome.nondeterminism[:MAX_PANELS]:
        console.print(_panel(found))
    if len(outcome.nondeterminism) > MAX_PANELS:
        console.print(Text(f"… and {len(outcome.nondeterminism) - MAX_PANELS} more (--json lists all)", style="muted"))
    console.print(_verdict(outcome))


def repeat_json(outcome: Any) -> dict[str, Any]:
    """The stable JSON report of `wop replay --repeat`."""
    return {
        "repeat": len(outcome.replays),
        "nondeterministic": bool(outcome.nondeterminism),
        "diverged": any(replay.diverged for replay in outcome.replays),
        "uncapturedNondeterminism": [found.to_json() for found in outcome.nondeterminism],
        "replays": [replay_json(replay) for replay in outcome.replays],
    }


def _summary(outcome: Any) -> Text:
    source = outcome.replays[0].source_manifest
    text = Text.assemble((f"{len(outcome.replays)} replays", "bold"), " of ", (clean(source.get("captureId")), "bold"),
                         clean(f" {source.get('name') or ''}".rstrip()))
    for number, replay in enumerate(outcome.replays, start=1):
        score = replay.score.get("score", 1.0)
        state = "diverged" if replay.diverged else "exact"
        text.append(f"\n  replay {number}: score {score:.2f}, {state}  ")
        text.append(clean(replay.capture.path), "path")
    return text


def _panel(found: Any) -> Panel:
    title = Text.assemble((clean(f"{found.event_type} #{found.ordinal}"), "bold"), "  ",
                          ("uncaptured nondeterminism", "error"), "  ", (f"looks like: {found.kind}", "warning"))
    parts: list[Any] = [Text.assemble(("at ", "muted"), (clean(found.json_path), "path"), ("  made at ", "muted"),
                                      (clean(site_text(found.site)), "path"))]
    table = Table(show_edge=False, expand=True, pad_edge=False, show_header=False)
    table.add_column("replay", style="muted", no_wrap=True)
    table.add_column("value", style="observed", ratio=1, overflow="fold")
    shown = trimmed([value if present else "(not made)" for value, present in zip(found.values, found.present)])
    for number, value in enumerate(shown, start=1):
        table.add_row(f"replay {number}", clean(value))
    parts.append(table)
    parts.append(Text.assemble(("fix: ", "muted"), clean(found.fix)))
    return Panel(Group(*parts), title=title, title_align="left", border_style="observed")


def _verdict(outcome: Any) -> Text:
    count = len(outcome.nondeterminism)
    if count:
        places = f"{count} place differs" if count == 1 else f"{count} places differ"
        return Text(f"uncaptured nondeterminism: {places} between the replays: the program reads something the "
                    "capture does not hold", style="error")
    if any(replay.diverged for replay in outcome.replays):
        return Text("the replays agree with each other, but diverge from the capture", style="error")
    return Text(f"all {len(outcome.replays)} replays are identical and match the capture", style="ok")
