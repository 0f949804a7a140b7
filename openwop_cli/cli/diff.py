"""`wop diff A B`: the RFC 0054 diff of two runs — where they part ways, event by event and in the state."""

from enum import Enum
from typing import Optional

import typer


class AlignBy(str, Enum):
    """How two runs' events are paired: by seq (RFC 0054) or by content."""

    seq = "seq"
    content = "content"


def command(
    run_a: str = typer.Argument(..., metavar="A", help="A capture (path, id, prefix, name, `last`) or an OpenWOP event log (.jsonl/.json)."),
    run_b: str = typer.Argument(..., metavar="B", help="The run to compare A with (same forms)."),
    ignore: Optional[list[str]] = typer.Option(None, "--ignore", metavar="JSONPATH",
                                               help="Leave this field of every event's data out of the comparison, e.g. $.response.id "
                                                    "(repeatable; * matches any key; [tool.wop] ignore adds more)."),
    max_diffs: Optional[int] = typer.Option(None, "--max-diffs", min=1, metavar="N",
                                            help="List at most N event diffs (--detail counts the rest in omittedEventDiffs)."),
    align: AlignBy = typer.Option(AlignBy.seq, "--align", metavar="seq|content", help="seq (RFC 0054: event k against event k) or content (an inserted event is one `added`)."),
    run_metadata: Optional[bool] = typer.Option(None, "--compare-run-metadata/--ignore-run-metadata",
                                                help="Compare run metadata — where a run happened, not what it did: run_start's "
                                                     "env (variable names), platform, hostname, cwd and python, and wop's "
                                                     "recorder bookkeeping (callId, captureId, writtenAt, durationMs) — or "
                                                     "leave it out. Default: left out when both runs are wop captures, "
                                                     "compared for OpenWOP event logs."),
    json_output: bool = typer.Option(False, "--json", help="Print the RFC 0054 diff object as JSON (exactly the RFC's schema)."),
    detail: bool = typer.Option(False, "--detail", help="With --json, add wop's detail: each changed event's `paths`, `align`, "
                                                        "`counts`, `omittedEventDiffs` and the `excluded` fields."),
) -> None:
    """Compare two runs: the first seq where they diverge, every added/removed/changed event, the state diff.

    The fields RFC 0054 excludes are not compared: eventId, runId, causationId, correlationId,
    wall-clock ts and transport metadata (traceparent, tracestate, delivery headers); nor, for two
    captures, run metadata (two runs from two shells, with another PS1 exported, are identical:
    --compare-run-metadata compares it). The status
    of a run log comes from its terminal event (run.completed, run.failed, run.cancelled); a log
    without one is an in-flight prefix, and the diff says `truncated`. Exits 0 when the runs are
    identical, 1 when they differ, 2/3 on bad input.

    \b
    Examples:
      wop diff support-agent support-agent-replay
      wop diff fixtures/support-agent fixtures/support-agent-changed --json
      wop diff fixtures/support-agent fixtures/support-agent-changed --json --detail
      wop diff last 3f2a --ignore '$.response.id' --align content
      wop diff run-a.jsonl run-b.jsonl --ignore-run-metadata
    """
    from openwop_cli.cli.diff_action import diff

    raise typer.Exit(diff(run_a=run_a, run_b=run_b, ignore=ignore, max_diffs=max_diffs, align=align.value,
                          run_metadata=run_metadata, json_output=json_output, detail=detail))
