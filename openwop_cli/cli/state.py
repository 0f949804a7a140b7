"""`wop state CAPTURE [--at SEQ]`: the folded channel state of a run at any point."""

from pathlib import Path
from typing import Optional

import typer

from openwop_cli.errors import UsageError


def command(
    capture: str = typer.Argument(..., help="A capture (path, id or unique prefix, name, `last`) or an OpenWOP event log."),
    at: Optional[int] = typer.Option(None, "--at", metavar="SEQ", help="The state right after event SEQ (inclusive; default: the last event)."),
    channel: Optional[str] = typer.Option(None, "--channel", "-c", metavar="NAME", help="Only this channel (or variable)."),
    declarations: Optional[Path] = typer.Option(None, "--declarations", metavar="FILE",
                                                help="Channel declarations (JSON: {name: declaration}, or a workflow with `channels`)."),
    json_output: bool = typer.Option(False, "--json", help="Print the state as JSON."),
) -> None:
    """Fold the run's state writes with the canonical reducers and show {channels, variables} at a seq.

    Declarations come from the run (its pinned --workflow, run_start, wop.state.declare) and
    --declarations. Writes a
    compliant engine would refuse (access denied, cross-engine, schema) are listed, not applied.

    \b
    Examples:
      wop state last
      wop state last --at 6 --channel ticket
      wop state ./captures/run1 --declarations workflow.json --json
      wop state host-run.jsonl --declarations workflow.json
    """
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
    from openwop_cli.cli.show import warn_problems

    warn_problems(reader)


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
