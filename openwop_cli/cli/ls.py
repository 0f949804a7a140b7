"""`wop ls`: the captures in the store."""

from typing import Any

import typer


def command(json_output: bool = typer.Option(False, "--json", help="Print the list as JSON.")) -> None:
    """List stored captures, oldest first: id, name, age, status, events, duration, command.

    At a terminal the table fits its width: the id, name, age, status and events are never cut; a long
    command keeps its program, its script and what else fits, with … for the rest, and moves to a line
    of its own under the row when the row leaves it too little room. To a pipe or a file each capture
    is one line, nothing shortened whatever COLUMNS says, of tab-separated fields: full id, name,
    created (ISO 8601), status, events, duration, command. --json is the same list as JSON.

    \b
    Examples:
      wop ls
      wop ls | grep checkout | cut -f1
      wop ls --json | jq '.[].captureId'
    """
    from openwop_cli.home import captures_root
    from openwop_cli.store import list_stored

    rows = [capture_row(entry.path, entry.manifest, entry.problem) for entry in list_stored()]
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(rows)
        return
    from openwop_cli.report.console import make_console
    from openwop_cli.report.store_table import render_store_table

    render_store_table(make_console(), rows, str(captures_root()))


def capture_row(path: Any, manifest: dict[str, Any] | None, problem: str | None = None) -> dict[str, Any]:
    """The summary of one capture that `wop ls` shows and prints as JSON."""
    if manifest is None:
        return {"captureId": path.name, "path": str(path), "status": "unreadable", "problem": problem}
    created, completed = manifest.get("createdAt"), manifest.get("completedAt")
    argv = (manifest.get("program") or {}).get("argv")
    return {
        "captureId": manifest.get("captureId"),
        "name": manifest.get("name"),
        "createdAt": created,
        "status": manifest.get("status"),
        "eventCount": manifest.get("eventCount") if manifest.get("status") != "incomplete" else None,
        "durationMs": completed - created if isinstance(created, int) and isinstance(completed, int) else None,
        "command": " ".join(map(str, argv)) if isinstance(argv, list) else None,
        "path": str(path),
    }
