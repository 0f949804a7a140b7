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


def diff_readers(reader_a: Any, reader_b: Any, *, events_a: Any = None, ignore_run_metadata: bool | None = None,
                 **options: Any) -> dict[str, Any]:
    """diff_runs of two open_run readers (events_a: A's events when already read): a capture's status from its
    manifest, a run log's from its terminal event; wop's recorder bookkeeping left out when both are captures
    (unless ignore_run_metadata says otherwise)."""
    from openwop_cli.diff import diff_runs
    from openwop_cli.diff.forked import pays
    from openwop_cli.runtime.program import pinned_channels

    if ignore_run_metadata is None:
        ignore_run_metadata = not (is_log(reader_a) or is_log(reader_b))
    return diff_runs(reader_a if events_a is None else events_a, reader_b, a=str(reader_a.manifest.get("runId")), b=str(reader_b.manifest.get("runId")),
                     status_a=None if is_log(reader_a) else reader_a.manifest.get("status"),
                     status_b=None if is_log(reader_b) else reader_b.manifest.get("status"),
                     ignore_run_metadata=ignore_run_metadata,
                     declarations_a=pinned_channels(reader_a.manifest, reader_a.blobs),
                     declarations_b=pinned_channels(reader_b.manifest, reader_b.blobs),
                     fork_b=pays(reader_b), **options)


def is_log(reader: Any) -> bool:
    """True for a reader of an OpenWOP run event log (its status is not in a manifest)."""
    return reader.manifest.get("format") == "openwop-run-events"
