"""What `wop state` does once its options are parsed: the folded channel state of a run at a seq.

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

from pathlib import Path

from openwop_cli.errors import UsageError


def state(*, capture: str, at: int | None, channel: str | None, declarations: Path | None, json_output: bool) -> int:
    """Fold the capture's state writes up to `at` (None: the last event), print the state, return wop's exit code."""
    from openwop_cli.channels.fold import fold_events
    from openwop_cli.cli.sources import open_run
    from openwop_cli.runtime.program import pinned_channels

    reader = open_run(capture, resolve_blobs=True)
    count = reader.manifest.get("eventCount")
    if at is not None and count is not None and not 0 <= at < max(count, 1):
        raise UsageError(f"--at {at} is out of range: this capture has seq 0..{count - 1}")
    declared = {**pinned_channels(reader.manifest, reader.blobs),
                **(read_declarations(declarations) if declarations else {})}
    fold = fold_events(reader, at=at, declarations=declared)
    if at is not None and fold.seq < at and reader.problems:  # (a run log's sequences may skip SEQ: its state then)
        raise UsageError(f"--at {at} is past the readable events of this capture (they end at seq {fold.seq})")
    snapshot = fold.snapshot()
    if channel is not None:
        snapshot = _only(snapshot, channel)
    findings = [finding.to_json() for finding in fold.findings]
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json({"captureId": reader.manifest.get("captureId"), **snapshot, "findings": findings})
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.state import render_state

        render_state(make_console(), reader.manifest, snapshot, fold.findings, fold.meta)
    from openwop_cli.cli.show_action import warn_problems

    warn_problems(reader)
    return 0


def read_declarations(path: Path) -> dict:
    """Channel declarations from a JSON file: the map itself, or a workflow holding it under `channels`."""
    from openwop_cli.config import read_json_file

    _, content = read_json_file(path, "--declarations")
    found = content.get("channels", content) if isinstance(content, dict) else None
    if not isinstance(found, dict):
        raise UsageError(f"--declarations {path} must be an object of channel declarations")
    return found


def _only(snapshot: dict, name: str) -> dict:
    for part in ("channels", "variables"):
        if name in snapshot[part]:
            return {"atSeq": snapshot["atSeq"], part: {name: snapshot[part][name]}}
    known = ", ".join(sorted([*snapshot["channels"], *snapshot["variables"]])) or "none"
    raise UsageError(f"no channel or variable {name!r} at seq {snapshot['atSeq']} (known: {known})")
