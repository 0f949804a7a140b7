"""`wop report CAPTURE [--against OTHER] -o report.html`: a self-contained HTML report of a run."""

from pathlib import Path
from typing import Optional

import typer

from openwop_cli.cli.diff import AlignBy


def command(
    capture: str = typer.Argument(..., help="A capture (path, id, prefix, name, `last`) or an OpenWOP event log."),
    against: Optional[str] = typer.Option(None, "--against", metavar="OTHER", help="Also show the RFC 0054 diff against this run."),
    output: Path = typer.Option(Path("wop-report.html"), "--output", "-o", metavar="FILE", help="The HTML file to write."),
    align: AlignBy = typer.Option(AlignBy.seq, "--align", metavar="seq|content", help="With --against: pair events by seq (the RFC's rule) "
                                  "or by content (one inserted or swapped call stays one difference)."),
) -> None:
    """Write one HTML file — no network, no CDN, works from file:// — with the timeline, a collapsible
    JSON tree per event, filters, the state at the selected seq and, with --against, the diff with
    the first divergence highlighted. Long runs are paged in the page, never cut: every event has its
    timeline row; the first 100,000 are embedded whole (later ones: `wop show --seq N`). The capture
    is streamed into the file, so memory stays bounded whatever its size.

    \b
    Examples:
      wop report last -o run.html
      wop report support --against support-replay -o diff.html
      wop report support --against support-replay --align content -o diff.html
    """
    from openwop_cli.cli.report_action import report

    raise typer.Exit(report(capture=capture, against=against, output=output, align=align.value))
