"""Where the commands that read runs get them: a capture (any CAPTURE reference) or an OpenWOP run event log file."""

from pathlib import Path
from typing import Any


def open_run(reference: str, *, resolve_blobs: bool = False) -> Any:
    """A reader for reference: RunLogReader for a .jsonl/.json OpenWOP event log, else a CaptureReader."""
    from openwop_cli.format.runlog import RunLogReader, is_run_log

    path = Path(reference).expanduser()
    if is_run_log(path):
        return RunLogReader(path)
    from openwop_cli.format.reader import CaptureReader
    from openwop_cli.store import resolve_capture

    return CaptureReader(resolve_capture(reference), resolve_blobs=resolve_blobs)
