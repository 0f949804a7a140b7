"""`wop show`: a capture's timeline, or one event as a JSON tree."""

import typer


def command(
    capture: str = typer.Argument(..., help="A capture (path, id or unique prefix, name, `last`) or an OpenWOP event log (.jsonl/.json)."),
    types: list[str] = typer.Option(
        None, "--type", "-t", metavar="TYPE", help="Only these event types (repeatable or comma-separated; aliases: llm, tool, state, nd, run)."
    ),
    node: str = typer.Option(None, "--node", metavar="NAME", help="Only calls and writes of this node, tool, channel, thread or task."),
    grep: str = typer.Option(None, "--grep", metavar="TEXT", help="Only events whose data contains TEXT (case-insensitive)."),
    from_seq: int = typer.Option(None, "--from", metavar="N", help="Only events from seq N on."),
    to_seq: int = typer.Option(None, "--to", metavar="N", help="Only events up to seq N."),
    seq: int = typer.Option(None, "--seq", metavar="N", help="Show only the event with this seq, as a JSON tree, with the state after it."),
    with_state: bool = typer.Option(False, "--state", help="With --seq --json: include the folded state after that event."),
    sites: bool = typer.Option(False, "--sites", help="Show where in the program each call was made "
                               "(file:line and function, from origin.site)."),
    no_pager: bool = typer.Option(False, "--no-pager", help="Do not page long output through $PAGER on a terminal."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object: the manifest as `capture`, the `events` "
                                     "(streamed, one event per line) and the `problems` found (with --seq: the one event)."),
    json_lines: bool = typer.Option(False, "--jsonl", help="Print JSON Lines: one event per line and nothing else "
                                    "(problems go to stderr as warnings), for jq and other line tools."),
) -> None:
    """Show a run as a timeline: each call on one row (request → result, duration, tokens), nested
    under the call its thread or task was waiting on; state writes, values and divergences between.

    On a terminal the timeline is a styled table paged through $PAGER; to a pipe or file it is the same
    columns as plain text, one line per row, streamed without holding the capture in memory.
    A damaged capture still shows its intact prefix, with a warning naming the first bad line.

    \b
    Examples:
      wop show last
      wop show last --type llm --type tool
      wop show last --sites
      wop show last --grep refund --from 100 --to 200
      wop show 3f2a --seq 4
      wop show 3f2a --seq 4 --state --json
      wop show ./captures/run1 --json
      wop show last --jsonl | jq -c 'select(.type == "llm_request")'
      wop show last > timeline.txt
    """
    from openwop_cli.cli.show_action import show

    raise typer.Exit(show(capture=capture, types=types, node=node, grep=grep, from_seq=from_seq, to_seq=to_seq, seq=seq,
                          with_state=with_state, sites=sites, no_pager=no_pager, json_output=json_output,
                          json_lines=json_lines))
