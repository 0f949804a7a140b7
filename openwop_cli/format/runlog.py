"""OpenWOP run event logs (RunEventDoc records) read as if they were captures, so hosts' runs can be shown and diffed.

A log is JSON Lines (one RunEventDoc per line) or a JSON array of them. Each record's `sequence`,
`type`, `payload`, `eventId` and `timestamp` (ISO 8601 or epoch ms) become an event's seq, type,
data, eventId and ts; the run's id comes from the records' `runId` (else the file name). The log is
read like a capture: a regular file of bounded size, every event checked by format/shape.py. Nothing
redacted a host's log on its way to disk, so each event's data passes the one redactor (the default
profile, and the values of this machine's secret environment variables) as it is read: what `wop diff`,
`wop state` and `wop show` print of a log never holds a key it carried.
"""

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from openwop_cli.errors import CorruptCapture
from openwop_cli.format.files import MAX_LINE_BYTES, bounded_lines, open_regular
from openwop_cli.format.redact import Redactor

LOG_SUFFIXES = (".jsonl", ".ndjson", ".json")
MAX_ARRAY_BYTES = MAX_LINE_BYTES


def is_run_log(path: Path) -> bool:
    """True for a file that is an OpenWOP event log rather than a capture directory."""
    return path.is_file() and path.suffix.lower() in LOG_SUFFIXES and path.name != "manifest.json"


class RunLogReader:
    """Iterate an OpenWOP event log as wop events; `manifest` is what can be said of the run."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.problems: list[Any] = []
        self.events_read = 0
        first = self._first_record()
        run_id = str(first.get("runId") or self.path.stem) if first else self.path.stem
        self.manifest: dict[str, Any] = {"captureId": run_id, "runId": run_id, "name": self.path.name,
                                         "status": "ok", "format": "openwop-run-events"}
        self.blobs = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from openwop_cli.format.shape import EventValidator

        check = EventValidator(run_log=True).problem
        redact = Redactor.from_environment().redact_flagged
        previous = -1
        for index, record in enumerate(self._records()):
            if not isinstance(record, dict):
                raise CorruptCapture(f"{self.path}: record {index + 1} is not an object")
            event = to_event(record, index, self.manifest["runId"])
            problem = check(event)
            if problem is not None:
                raise CorruptCapture(f"{self.path}: record {index + 1}: {problem}")
            event["data"] = redact(event["data"])
            if event["seq"] <= previous:  # events fold and align in sequence order (gaps are fine)
                order = f"does not come after {previous}" if previous >= 0 else "is below 0"
                raise CorruptCapture(f"{self.path}: record {index + 1}: sequence {event['seq']} {order}")
            previous = event["seq"]
            self.events_read += 1
            yield event

    def _records(self) -> Iterator[Any]:
        with open_regular(self.path, follow=True) as handle:
            head = handle.read(1)
            while head.isspace():
                head = handle.read(1)
            handle.seek(0)
            if head == b"[":
                yield from _parsed(handle.read(MAX_ARRAY_BYTES + 1), self.path)
                return
            for number, line in enumerate(bounded_lines(handle), start=1):
                if line.strip():
                    try:
                        yield orjson.loads(line)
                    except orjson.JSONDecodeError as exc:
                        raise CorruptCapture(f"{self.path}: line {number} is not JSON ({exc})") from None

    def _first_record(self) -> dict[str, Any] | None:
        for record in self._records():
            return record if isinstance(record, dict) else None
        return None


def to_event(record: dict[str, Any], index: int, run_id: str) -> dict[str, Any]:
    """One RunEventDoc as a wop event (envelope names; payload as data)."""
    seq = record.get("sequence", record.get("seq", index))
    event = {"version": 1, "captureId": run_id, "runId": str(record.get("runId", run_id)), "seq": seq,
             "ts": _epoch_ms(record.get("timestamp", record.get("ts"))), "type": str(record.get("type", "?")),
             "data": record.get("payload", record.get("data")) or {}}
    if "eventId" in record:
        event["eventId"] = record["eventId"]
    return event


def _parsed(content: bytes, path: Path) -> list[Any]:
    if len(content) > MAX_ARRAY_BYTES:
        raise CorruptCapture(f"{path} is more than the {MAX_ARRAY_BYTES:,} bytes wop reads as one JSON array; "
                             "write the log as JSON Lines")
    try:
        records = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        raise CorruptCapture(f"{path} is not JSON ({exc})") from None
    if not isinstance(records, list):
        raise CorruptCapture(f"{path} must hold a JSON array of run events (or one event per line)")
    return records


def _epoch_ms(value: Any) -> int:
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except (ValueError, OverflowError, OSError):
            return 0
    return 0
