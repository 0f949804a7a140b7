"""`wop show`: a capture's timeline, or one event as a JSON tree."""

import sys
from typing import Any, Iterable

import typer

from openwop_cli.errors import UsageError

TYPE_ALIASES = {
    "llm": ("llm_request", "llm_response"),
    "tool": ("tool_call", "tool_result"),
    "state": ("state_mutation",),
    "nd": ("nondeterministic",),
    "run": ("run_start", "run_end"),
    "replay": ("replay_diverged",),
}


def command(
    capture: str = typer.Argument(..., help="A capture (path, id or unique prefix, name, `last`) or an OpenWOP event log (.jsonl/.json)."),
    types: list[str] = typer.Option(
        None, "--type", "-t", help="Only these event types (repeatable or comma-separated; aliases: llm, tool, state, nd, run)."
    ),
    seq: int = typer.Option(None, "--seq", help="Show only the event with this seq, as a JSON tree."),
    with_state: bool = typer.Option(False, "--state", help="With --seq: also the folded state right after that event."),
    json_output: bool = typer.Option(False, "--json", help="Print the events (or the one event) as JSON."),
) -> None:
    """Show a capture as a timeline: seq, time offset, type and a one-line summary per event.

    A damaged capture still shows its intact prefix, with a warning naming the first bad line.

    \b
    Examples:
      wop show last
      wop show last --type llm --type tool
      wop show 3f2a --seq 4
      wop show 3f2a --seq 4 --state
      wop show ./captures/run1 --json
    """
    from openwop_cli.cli.sources import open_run

    reader = open_run(capture, resolve_blobs=seq is not None)
    path = getattr(reader, "capture_dir", None) or reader.path
    if seq is not None:
        _show_one(reader, seq, json_output, with_state)
        return
    if with_state:
        raise UsageError("--state goes with --seq N (or use `wop state CAPTURE --at N`)")
    wanted = expand_types(types or [])
    events: Iterable[dict[str, Any]] = reader
    if wanted:
        events = (event for event in reader if event.get("type") in wanted)
    if json_output:
        _write_json(reader.manifest, events, reader)
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.timeline import render_header, render_rows

        console = make_console()
        render_header(console, reader.manifest, str(path))
        render_rows(console, events)
    warn_problems(reader)


def expand_types(values: list[str]) -> frozenset[str]:
    """Event type names from --type values (comma lists and aliases allowed); unknown ones are an error."""
    from openwop_cli.format.events import EVENT_TYPES

    wanted: set[str] = set()
    for value in values:
        for name in filter(None, (part.strip() for part in value.split(","))):
            if name in EVENT_TYPES:
                wanted.add(name)
            elif name in TYPE_ALIASES:
                wanted.update(TYPE_ALIASES[name])
            else:
                known = ", ".join(sorted(EVENT_TYPES | TYPE_ALIASES.keys()))
                raise UsageError(f"unknown event type '{name}' for --type; known: {known}")
    return frozenset(wanted)


def _show_one(reader: Any, seq: int, json_output: bool, with_state: bool) -> None:
    from openwop_cli.state.fold import StateFold

    fold = StateFold() if with_state else None
    last = -1
    for event in reader:
        last = event["seq"]
        if fold is not None:
            fold.apply(event)
        if last == seq:
            _print_event(event, fold, json_output)
            warn_problems(reader)
            return
    warn_problems(reader)
    if last < 0:
        raise UsageError(f"--seq {seq} is out of range: the capture has no readable events")
    raise UsageError(f"--seq {seq} is out of range: this capture has seq 0..{last}")


def _print_event(event: dict[str, Any], fold: Any, json_output: bool) -> None:
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(event if fold is None else {"event": event, "state": fold.snapshot()})
        return
    from openwop_cli.report.console import make_console
    from openwop_cli.report.tree import json_tree

    console = make_console()
    console.print(json_tree(event, f"seq {event['seq']} · {event['type']}"))
    if fold is not None:
        state = fold.snapshot()
        console.print(json_tree({"channels": state["channels"], "variables": state["variables"]},
                                f"state after seq {event['seq']}"))


def _write_json(manifest: dict[str, Any], events: Iterable[dict[str, Any]], reader: Any) -> None:
    from openwop_cli.cli.output import json_line

    out = sys.stdout.buffer
    out.write(b'{"capture":' + json_line(manifest) + b',\n"events":[')
    separator = b"\n"
    for event in events:
        out.write(separator + json_line(event))
        separator = b",\n"
    problems = [problem.to_json() for problem in reader.problems]
    out.write(b'\n],\n"problems":' + json_line(problems) + b"}\n")
    out.flush()


def warn_problems(reader: Any) -> None:
    """Warn about what is wrong with a capture that was read anyway (its intact prefix is shown)."""
    from openwop_cli.report.console import print_warning

    for problem in reader.problems[:5]:
        stops_reading = problem.kind in ("torn_line", "bad_json", "bad_event", "seq_gap", "blob")
        suffix = "; showing the events before it" if stops_reading else ""
        print_warning(f"{problem}{suffix} (run `wop verify` for a full check)")

