"""What `wop ls` does: list the captures in the store.

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

from typing import Any


def list_captures(*, json_output: bool) -> int:
    """Print the store's captures, a table or JSON (see `wop ls --help`); returns wop's exit code."""
    from openwop_cli.home import captures_root
    from openwop_cli.store import list_stored

    rows = [capture_row(entry.path, entry.manifest, entry.problem) for entry in list_stored()]
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(rows)
        return 0
    from openwop_cli.report.console import make_console
    from openwop_cli.report.store_table import render_store_table

    render_store_table(make_console(), rows, str(captures_root()))
    return 0


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
