"""`wop state CAPTURE [--at SEQ]`: the folded channel state of a run at any point."""

from pathlib import Path
from typing import Optional

import typer


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
    from openwop_cli.cli.state_action import state

    raise typer.Exit(state(capture=capture, at=at, channel=channel, declarations=declarations, json_output=json_output))
