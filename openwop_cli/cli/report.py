"""`wop report CAPTURE [--against OTHER] -o report.html`: a self-contained HTML report of a run."""

from pathlib import Path
from typing import Optional, TextIO

import typer

from openwop_cli.cli.diff import AlignBy
from openwop_cli.cli.output import human_size


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
    from openwop_cli.cli.sources import open_run
    from openwop_cli.errors import UsageError
    from openwop_cli.report.html import write_report

    reader = open_run(capture, resolve_blobs=True)
    diff = other = None
    if against is not None:
        from openwop_cli.cli.sources import diff_readers

        reader_b = open_run(against, resolve_blobs=True)
        diff = diff_readers(reader, reader_b, align=align.value)
        other = reader_b.manifest
    if output.is_dir():
        raise UsageError(f"--output {output} is a directory: give a file name such as {output / 'report.html'}")
    try:
        with _open_private(output) as handle:
            write_report(handle.write, reader.manifest, reader, diff=diff, against=other)
            size = handle.tell()
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {output} ({human_size(size)})", err=True)


def _open_private(path: Path) -> TextIO:
    """path opened for writing text; a new file is readable by its owner only (0600), like the capture it shows."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")
