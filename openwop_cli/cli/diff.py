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
    max_diffs: Optional[int] = typer.Option(None, "--max-diffs", min=1, metavar="N", help="List at most N event diffs (sets truncated)."),
    align: AlignBy = typer.Option(AlignBy.seq, "--align", metavar="seq|content", help="seq (RFC 0054: event k against event k) or content (an inserted event is one `added`)."),
    json_output: bool = typer.Option(False, "--json", help="Print the RFC 0054 diff object as JSON."),
) -> None:
    """Compare two runs: the first seq where they diverge, every added/removed/changed event, the state diff.

    Run- and call-scoped ids, wall-clock times and transport metadata are not compared. Exits 0
    when the runs are identical, 1 when they differ, 2/3 on bad input.

    \b
    Examples:
      wop diff support-agent support-agent-replay
      wop diff fixtures/support-agent fixtures/support-agent-changed --json
      wop diff last 3f2a --ignore '$.response.id' --align content
      wop diff run-a.jsonl run-b.jsonl
    """
    from openwop_cli.cli.sources import open_run
    from openwop_cli.config import load_settings
    from openwop_cli.diff import diff_runs

    ignore = [*(ignore or []), *load_settings().ignore]
    reader_a, reader_b = open_run(run_a, resolve_blobs=True), open_run(run_b, resolve_blobs=True)
    result = diff_runs(reader_a, reader_b, a=str(reader_a.manifest.get("runId")), b=str(reader_b.manifest.get("runId")),
                       status_a=reader_a.manifest.get("status"), status_b=reader_b.manifest.get("status"),
                       ignore=ignore or [], max_diffs=max_diffs, align=align.value)
    for reader in (reader_a, reader_b):
        _refuse_damaged(reader)
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(result)
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.diff import render_diff

        render_diff(make_console(), result, reader_a.manifest, reader_b.manifest)
    if result["divergedAtSeq"] is not None or result["stateDiff"]["status"]["changed"]:
        raise typer.Exit(1)


def _refuse_damaged(reader) -> None:
    """A diff of a damaged capture would compare a prefix as if it were the run: refuse (exit 3)."""
    from openwop_cli.errors import CorruptCapture

    problems = getattr(reader, "problems", [])
    if problems:
        where = getattr(reader, "capture_dir", "")
        raise CorruptCapture(f"cannot diff {where}: {problems[0]} (run `wop verify` for a full check)")
