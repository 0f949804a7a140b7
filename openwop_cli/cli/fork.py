"""`wop fork CAPTURE --from-seq N [--set KEY=VALUE…] [-- CMD…]`: replay history up to N, run live from there."""

from pathlib import Path
from typing import Optional

import typer


def command(
    capture: str = typer.Argument(..., help="The capture to fork: path, id or unique prefix, name, or `last`."),
    argv: Optional[list[str]] = typer.Argument(None, metavar="[-- CMD [ARGS]...]",
                                               help="Run this command instead of the recorded one."),
    from_seq: Optional[int] = typer.Option(None, "--from-seq", metavar="N", help="Branch point: calls before seq N are served from the capture."),
    set_values: Optional[list[str]] = typer.Option(None, "--set", metavar="KEY=VALUE",
                                                   help="Override a recorded value (a nondeterministic key or version id); VALUE is JSON or text. Repeatable."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Write the fork's capture to DIR instead of the store."),
    name: Optional[str] = typer.Option(None, "--name", "-n", metavar="NAME", help="Name of the fork's capture."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON (the program's output goes to stderr)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Keep the program's whole traceback."),
) -> None:
    """What if: serve the recorded calls before seq N, then let the program run live, recording it.

    Calls the program makes before the branch point are answered from the capture; everything
    after runs for real (network and tools included) and is recorded in a new capture you can
    diff against the original. `--set greeting=0` changes a recorded value for the what-if.

    \b
    Examples:
      wop fork last --from-seq 6
      wop fork support_agent --from-seq 5 --set greeting=0
      wop fork last --from-seq 6 -- python agent.py --warm
    """
    from openwop_cli.cli.replaying import finish, parse_overrides, run

    outcome = run(capture, argv, policy="lenient", from_seq=from_seq, branch=True,
                  overrides=parse_overrides(set_values or []), allow_tools=[], out=out, name=name,
                  json_output=json_output, proxy=False, verbose=verbose)
    finish(outcome, json_output)
