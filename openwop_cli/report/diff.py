"""The run diff for people: a summary line, the first divergence side by side, the rest as a table, the state diff."""

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from openwop_cli.report.escape import clean
from openwop_cli.report.summary import summarize
from openwop_cli.report.tree import json_tree
from openwop_cli.report.verdict import side_by_side

MAX_ROWS = 40


def render_diff(console: Console, result: dict[str, Any], manifest_a: dict[str, Any], manifest_b: dict[str, Any]) -> None:
    """Print a diff_runs result."""
    console.print(_summary(result, manifest_a, manifest_b))
    diffs = result["eventDiffs"]
    if diffs:
        first = diffs[0]
        console.print(Text.assemble(("first divergence  ", "bold"), ("seq ", "muted"), (str(first["seq"]), "seq"),
                                    "  ", (first["op"], "error"), "  ", clean(", ".join(first.get("paths", [])))))
        console.print(side_by_side(_brief(first.get("aEvent")), _brief(first.get("bEvent")), ("A", "B")))
    if len(diffs) > 1:
        table = Table(show_edge=False, pad_edge=False, expand=True)
        table.add_column("seq", style="seq", no_wrap=True, min_width=5)
        table.add_column("op", no_wrap=True, min_width=7)
        for column in ("A", "B"):
            table.add_column(column, overflow="ellipsis", no_wrap=True, ratio=1)
        for item in diffs[1:MAX_ROWS]:
            table.add_row(str(item["seq"]), item["op"], clean(_row(item.get("aEvent"))), clean(_row(item.get("bEvent"))))
        console.print(table)
    hidden = max(len(diffs) - MAX_ROWS, 0) + result.get("omittedEventDiffs", 0)
    if hidden:
        console.print(Text(f"… {hidden} more event diffs not shown ({_more_hint(result)})", style="muted"))
    state = _state_changes(result["stateDiff"])
    if state:
        console.print(json_tree(state, "state diff (A → B)"))


def _summary(result: dict[str, Any], manifest_a: dict[str, Any], manifest_b: dict[str, Any]) -> Text:
    names = Text.assemble((clean(manifest_a.get("captureId")), "bold"), " vs ", (clean(manifest_b.get("captureId")), "bold"))
    align = f"  (aligned by {result['align']})"
    if result["divergedAtSeq"] is None and not result["stateDiff"]["status"]["changed"]:
        if _state_changes(result["stateDiff"]):  # the same events folded with other declarations (a pinned workflow)
            return Text.assemble(names, ("  same events", "ok"), ", but their end states differ (below)",
                                 (align, "muted"))
        return Text.assemble(names, ("  identical", "ok"), (align, "muted"))
    counts = result["counts"]
    parts = ", ".join(f"{counts[op]} {op}" for op in ("changed", "added", "removed") if counts[op])
    where = f"diverged at seq {result['divergedAtSeq']}" if result["divergedAtSeq"] is not None else "same events"
    truncated = " (truncated: a run was still in flight, its prefix was compared)" if result["truncated"] else ""
    return Text.assemble(names, "  ", (where, "error"), f": {parts or 'status differs'}{truncated}", (align, "muted"))


def _more_hint(result: dict[str, Any]) -> str:
    return "--max-diffs listed fewer" if result.get("omittedEventDiffs") else "--json lists them"


def _brief(event: dict[str, Any] | None) -> Any:
    return None if event is None else {"type": event.get("type"), "data": event.get("data")}


def _row(event: dict[str, Any] | None) -> str:
    return "—" if event is None else f"{event.get('type')}  {summarize(event)}"


def _state_changes(state: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    if state["status"]["changed"]:
        shown["status"] = f"{state['status']['a']} → {state['status']['b']}"
    for part in ("channels", "variables"):
        changes = {kind: values for kind, values in state[part].items() if values}
        if changes:
            shown[part] = changes
    return shown
