"""`wop replay CAPTURE [-- CMD…]`: re-run a recorded program offline and report where it diverges."""

from pathlib import Path
from typing import Optional

import typer


def command(
    capture: str = typer.Argument(..., help="The capture to replay: path, id or unique prefix, name, or `last`."),
    argv: Optional[list[str]] = typer.Argument(None, metavar="[-- CMD [ARGS]...]",
                                               help="Run this command instead of the recorded one."),
    strict: bool = typer.Option(True, "--strict/--lenient",
                                help="Stop at the first divergence (strict, for CI) or collect them all (lenient)."),
    from_seq: Optional[int] = typer.Option(None, "--from-seq", help="Check only events from seq N on."),
    allow_tool: Optional[list[str]] = typer.Option(None, "--allow-tool", metavar="NAME",
                                                   help="Let this tool run for real (repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the replay capture to DIR instead of the store."),
    name: Optional[str] = typer.Option(None, "--name", "-n", help="Name of the replay capture."),
    proxy: bool = typer.Option(False, "--proxy", help="Serve LLM calls through a local proxy too (for programs captured with --proxy)."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON (the program's output goes to stderr)."),
) -> None:
    """Re-run the recorded command with every call served from the capture, the network blocked.

    Prints a report: the determinism score, each divergence (seq, code, JSON path, expected vs
    observed) and the program files changed since the capture. The replay itself is saved as a
    new capture linked to its source. Exits 0 when the run replays exactly, 1 on any divergence,
    2 on bad input, 3 when the capture is corrupt or incomplete.

    \b
    Examples:
      wop replay last
      wop replay support_agent --lenient
      wop replay ./tests/captures/checkout --json -- python agent.py --order A-1001
      wop replay node-agent --proxy
    """
    from openwop_cli.cli.replaying import finish, run

    outcome = run(capture, argv, policy="strict" if strict else "lenient", from_seq=from_seq, branch=False,
                  overrides={}, allow_tools=list(allow_tool or []), out=out, name=name, json_output=json_output,
                  proxy=proxy)
    finish(outcome, json_output)
