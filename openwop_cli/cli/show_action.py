"""What `wop show` does once its options are parsed: a capture's timeline, or one event as a JSON tree.

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

import sys
from collections.abc import Iterable
from typing import Any

from openwop_cli.errors import UsageError

TYPE_ALIASES = {
    "llm": ("llm_request", "llm_response"),
    "tool": ("tool_call", "tool_result"),
    "state": ("state_mutation",),
    "nd": ("nondeterministic",),
    "run": ("run_start", "run_end"),
    "replay": ("replay_diverged",),
}


def show(*, capture: str, types: list[str] | None, node: str | None, grep: str | None, from_seq: int | None,
         to_seq: int | None, seq: int | None, with_state: bool, sites: bool, no_pager: bool, json_output: bool,
         json_lines: bool) -> int:
    """Show the capture (see `wop show --help`) and return wop's exit code."""
    from openwop_cli.cli.sources import open_run

    if json_output and json_lines:
        raise UsageError("--json and --jsonl are two forms of the same output: choose one")
    reader = open_run(capture, resolve_blobs=seq is not None)
    path = getattr(reader, "capture_dir", None) or reader.path
    if seq is not None:
        _show_one(reader, seq, "lines" if json_lines else "object" if json_output else None,
                  with_state or not (json_output or json_lines))
        return 0
    if with_state:
        raise UsageError("--state goes with --seq N (or use `wop state CAPTURE --at N`)")
    keep = EventFilter(expand_types(types or []), node, grep, from_seq, to_seq)
    if json_output:
        _write_json(reader.manifest, (event for event in reader if keep.event(event)), reader)
    elif json_lines:
        _write_json_lines(event for event in reader if keep.event(event))
    elif not sys.stdout.isatty():
        from openwop_cli.report.timeline import header, write_plain_rows

        sys.stdout.write(header(reader.manifest, str(path)).plain + "\n")
        write_plain_rows(sys.stdout.write, reader, keep.row, sites=sites)
        sys.stdout.flush()
    else:
        from openwop_cli.report.console import paged_console
        from openwop_cli.report.timeline import render_header, render_rows

        with paged_console(not no_pager) as console:
            render_header(console, reader.manifest, str(path))
            render_rows(console, reader, keep.row, sites=sites)
    warn_problems(reader)
    return 0


class EventFilter:
    """--type, --node, --grep, --from/--to, for single events (--json) and for timeline rows (a call matches
    when its request or its result does)."""

    def __init__(self, types: frozenset[str], node: str | None, grep: str | None, first: int | None,
                 last: int | None) -> None:
        self.types, self.node, self.first, self.last = types, node, first, last
        self.grep = grep.lower() if grep else None

    def event(self, event: dict[str, Any]) -> bool:
        return self._in_range(event) and self._matches([event])

    def row(self, row: Any) -> bool:
        return self._in_range(row.event) and self._matches(row.events)

    def _in_range(self, event: dict[str, Any]) -> bool:
        seq = event.get("seq", 0)
        return (self.first is None or seq >= self.first) and (self.last is None or seq <= self.last)

    def _matches(self, events: list[dict[str, Any]]) -> bool:
        if self.types and not any(event.get("type") in self.types for event in events):
            return False
        if self.node is not None and not any(self.node in _names(event) for event in events):
            return False
        if self.grep is not None:
            import orjson

            text = b" ".join(orjson.dumps(event.get("data"), default=repr) for event in events)
            return self.grep in text.decode("utf-8", "replace").lower()
        return True


def _names(event: dict[str, Any]) -> set[str]:
    data = event.get("data") or {}
    origin = event.get("origin") or {}
    return {str(value) for value in (data.get("nodeId"), data.get("name"), data.get("channel"), data.get("key"),
                                     origin.get("thread"), origin.get("task")) if value is not None}


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


def _show_one(reader: Any, seq: int, json_output: str | None, with_state: bool) -> None:
    """The event with this seq (and the state after it) as a tree, or as JSON: an indented "object" or one "lines"."""
    from openwop_cli.channels.fold import StateFold

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


def _print_event(event: dict[str, Any], fold: Any, json_output: str | None) -> None:
    if json_output:
        from openwop_cli.cli.output import json_line, print_json

        shown = event if fold is None else {"event": event, "state": fold.snapshot()}
        if json_output == "lines":
            sys.stdout.buffer.write(json_line(shown) + b"\n")
            sys.stdout.flush()
        else:
            print_json(shown)
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


def _write_json_lines(events: Iterable[dict[str, Any]]) -> None:
    from openwop_cli.cli.output import json_line

    out = sys.stdout.buffer
    batch: list[bytes] = []
    for event in events:
        batch.append(json_line(event))
        if len(batch) == 256:
            out.write(b"\n".join(batch) + b"\n")
            batch = []
    if batch:
        out.write(b"\n".join(batch) + b"\n")
    out.flush()


def warn_problems(reader: Any) -> None:
    """Warn about what is wrong with a capture that was read anyway (its intact prefix is shown)."""
    from openwop_cli.report.console import print_warning

    for problem in reader.problems[:5]:
        if problem.kind == "blob":  # the reader goes on: only that event's payload is missing
            suffix = "; its event is read with the blob reference in place of the payload"
        elif problem.kind in ("torn_line", "bad_json", "bad_event", "seq_gap"):
            suffix = "; showing the events before it"
        else:
            suffix = ""
        print_warning(f"{problem}{suffix} (run `wop verify` for a full check)")

