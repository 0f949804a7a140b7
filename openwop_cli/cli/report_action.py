"""What `wop report` does once its options are parsed: one self-contained HTML file of a run (and its diff).

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

import sys
from pathlib import Path
from typing import TextIO


def report(*, capture: str, against: str | None, output: Path, align: str) -> int:
    """Write the report of capture (with the diff against `against`, its events paired by align) to output; returns
    wop's exit code."""
    from openwop_cli.cli.output import human_size
    from openwop_cli.cli.sources import open_run
    from openwop_cli.errors import UsageError
    from openwop_cli.report.html import write_report

    reader = open_run(capture, resolve_blobs=True)
    diff = other = None
    if against is not None:
        from openwop_cli.cli.sources import diff_readers

        reader_b = open_run(against, resolve_blobs=True)
        diff = diff_readers(reader, reader_b, align=align)
        other = reader_b.manifest
    if output.is_dir():
        raise UsageError(f"--output {output} is a directory: give a file name such as {output / 'report.html'}")
    try:
        with _open_private(output) as handle:
            write_report(handle.write, reader.manifest, reader, diff=diff, against=other)
            size = handle.tell()
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    print(f"wrote {output} ({human_size(size)})", file=sys.stderr, flush=True)
    return 0


def _open_private(path: Path) -> TextIO:
    """path opened for writing text; a new file is readable by its owner only (0600), like the capture it shows."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")
