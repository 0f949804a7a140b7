"""`wop fork CAPTURE (--from-seq N | --edit SEQ PATH=JSON…) [--set KEY=VALUE…] [-- CMD…]`: what if."""

from pathlib import Path
from typing import Optional

import typer


def command(
    capture: str = typer.Argument(..., help="The capture to fork: path, id or unique prefix, name, or `last`."),
    argv: Optional[list[str]] = typer.Argument(None, metavar="[-- CMD [ARGS]...]",
                                               help="Run this command instead of the recorded one."),
    from_seq: Optional[int] = typer.Option(None, "--from-seq", metavar="N", help="Branch point: calls before seq N are served from the capture."),
    edits: Optional[list[str]] = typer.Option(
        None, "--edit", metavar="SEQ PATH=JSON",
        help="Serve the recorded result at SEQ with the value at PATH (a JSONPath into that event's data) replaced by "
             "JSON; later calls are served while they still match, then run live. Repeatable."),
    offline: bool = typer.Option(False, "--offline", help="With --edit: stop at the first call the capture cannot "
                                 "answer instead of running it live (the network stays blocked)."),
    set_values: Optional[list[str]] = typer.Option(
        None, "--set", metavar="KEY=VALUE",
        help="Override a recorded value (a nondeterministic key or version id); VALUE is JSON or text, read as what "
             "the capture recorded under KEY. A key it never recorded, or a value that cannot stand for the recorded "
             "one, is refused before the program runs. Repeatable."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Write the fork's capture to DIR instead of the store."),
    name: Optional[str] = typer.Option(None, "--name", "-n", metavar="NAME", help="Name of the fork's capture."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON (the program's output goes to stderr)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Keep the program's whole traceback."),
    trust: bool = typer.Option(False, "--trust", help="Run the command the capture recorded even though the capture "
                               "is not trusted here (not signed by you, and not a Python script of this directory); "
                               "WOP_TRUST=1 does the same."),
) -> None:
    """What if: serve the recorded calls before seq N — or every call, with one answer edited — then let the
    program run live, recording it.

    With --from-seq N, calls before the branch point are answered from the capture and everything
    after runs for real (network and tools included). With --edit SEQ PATH=JSON, the program gets
    the recorded result at SEQ with one value changed ("what if the model had refused?"); calls that
    still match the capture are served from it, and from the first call that no longer matches the
    run goes live (--offline: it stops there instead). The report lists the calls the edit changed;
    the fork is a new capture to diff against the original. `--set greeting=0` changes a recorded
    value. As with `wop replay`, the recorded command runs only when the capture is trusted here
    (signed by you, or a Python script of this directory's tree); else give a command after --, or --trust.

    \b
    Examples:
      wop fork last --from-seq 6
      wop fork support_agent --from-seq 5 --set greeting=0
      wop fork last --from-seq 6 -- python examples/support_agent.py --warm
      wop fork last --edit 7 '$.response.choices[0].message.content="I cannot help with that."'
      wop fork last --edit 3 '$.result.status="lost"' --offline
    """
    from openwop_cli.cli.fork_action import fork

    fork(capture=capture, argv=argv, from_seq=from_seq, edits=edits, offline=offline, set_values=set_values, out=out,
         name=name, json_output=json_output, verbose=verbose, trust=trust)
