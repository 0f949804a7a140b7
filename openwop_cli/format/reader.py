"""Streaming reader of a capture: events in seq order without loading the file, with integrity checks.

It reads events.jsonl in 1 MiB chunks, hashing each chunk as it goes, and stops at the first line
that is torn (no newline: cut mid-write), not JSON, not an event, or out of seq order. What it
found is kept in `problems`; the events before the first problem are the intact prefix. A
changed line is found through the manifest's whole-file sha256 and named through the per-line
crc32 checksums the sink wrote.
"""

import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson

from openwop_cli.errors import CorruptCapture, IncompleteCapture
from openwop_cli.format.blobs import BLOB_MARKER, BlobStore, find_blob_refs
from openwop_cli.format.events import envelope_problem
from openwop_cli.format.manifest import EVENTS_NAME, LINE_CHECKSUMS_NAME, STATUS_INCOMPLETE, read_manifest
from openwop_cli.format.sink import checksums_from_bytes

CHUNK_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a capture, located by 1-based line of events.jsonl and seq when known."""

    kind: str
    message: str
    line: int | None = None
    seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape of a problem, used by every `--json` output."""
        return {"kind": self.kind, "message": self.message, "line": self.line, "seq": self.seq}

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.seq is not None:
            where.append(f"seq {self.seq}")
        return f"{EVENTS_NAME} {' '.join(where)}: {self.message}" if where else self.message


class CaptureReader:
    """One pass over a capture's events; see the module docstring."""

    def __init__(self, capture_dir: Path, *, resolve_blobs: bool = False) -> None:
        self.capture_dir = Path(capture_dir)
        self.manifest = read_manifest(self.capture_dir)
        self.resolve_blobs = resolve_blobs
        self.blobs = BlobStore(self.capture_dir)
        self.problems: list[Problem] = []
        self.events_read = 0
        self.complete = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The events of the intact prefix, in seq order."""
        return self._events(stop_at_first_problem=True)

    def scan_all(self) -> Iterator[dict[str, Any]]:
        """Every readable event, continuing past problems so all of them are listed (for verify)."""
        return self._events(stop_at_first_problem=False)

    def raise_for_problems(self) -> None:
        """CorruptCapture (or IncompleteCapture) naming the first problem, if there was one."""
        if self.problems:
            first = self.problems[0]
            error = IncompleteCapture if first.kind == "incomplete" else CorruptCapture
            raise error(f"capture {self.manifest['captureId']} is damaged: {first}; run `wop verify` for details")

    def _events(self, stop_at_first_problem: bool) -> Iterator[dict[str, Any]]:
        self.problems = []
        self.events_read = 0
        self.complete = False
        digest = hashlib.sha256()
        expected_seq = 0
        lineno = 0
        loads = orjson.loads
        check_envelopes = not stop_at_first_problem and not self._hash_vouches_for_envelopes()
        path = self.capture_dir / EVENTS_NAME
        try:
            handle = open(path, "rb")
        except FileNotFoundError:
            self._problem("missing", f"{EVENTS_NAME} is missing from {self.capture_dir}")
            return
        with handle:
            tail = b""
            while chunk := handle.read(CHUNK_BYTES):
                digest.update(chunk)
                data = tail + chunk if tail else chunk
                may_hold_blobs = b"$" in data  # memchr-fast; "$blob" is checked per line only when needed
                lines = data.split(b"\n")
                tail = lines.pop()
                for line in lines:
                    lineno += 1
                    try:
                        event = loads(line)
                    except orjson.JSONDecodeError:
                        self._problem("bad_json", "not a JSON object (the line was damaged or edited)", lineno)
                        if stop_at_first_problem:
                            return
                        expected_seq += 1
                        continue
                    if check_envelopes or type(event) is not dict or event.get("seq") != expected_seq:
                        problem = self._event_problem(event, expected_seq, lineno)
                        if problem is not None:
                            if stop_at_first_problem:
                                return
                            if problem.kind == "seq_gap" and type(event.get("seq")) is int:
                                expected_seq = event["seq"]
                    expected_seq += 1
                    if may_hold_blobs and BLOB_MARKER in line:
                        event = self._with_blobs(event, lineno)
                    self.events_read += 1
                    yield event
            if tail:
                lineno += 1
                self._problem("torn_line", "torn: the last line has no newline (cut mid-write)", lineno, expected_seq)
                if stop_at_first_problem:
                    return
        self._check_totals(digest.hexdigest(), lineno)
        self.complete = not self.problems

    def _hash_vouches_for_envelopes(self) -> bool:
        """True when a finished wop capture carries its sha256: if the bytes match it, wop's sink wrote every
        envelope (and it writes only valid ones), so envelopes need checking only on lines that changed."""
        manifest = self.manifest
        return (manifest.get("status") != STATUS_INCOMPLETE and (manifest.get("tool") or {}).get("name") == "wop"
                and bool((manifest.get("integrity") or {}).get("eventsHash")))

    def _event_problem(self, event: Any, expected_seq: int, lineno: int) -> Problem | None:
        shape = envelope_problem(event)
        if shape is not None:
            return self._problem("bad_event", shape, lineno, expected_seq)
        if event["seq"] != expected_seq:
            return self._problem(
                "seq_gap", f"seq jumps from {expected_seq - 1} to {event['seq']} (expected {expected_seq})", lineno, event["seq"]
            )
        return None

    def _with_blobs(self, event: dict[str, Any], lineno: int) -> dict[str, Any]:
        for ref in find_blob_refs(event.get("data")):
            problem = self.blobs.problem(ref)
            if problem is not None:
                self._problem("blob", problem, lineno, event.get("seq"))
                return event
        if self.resolve_blobs:
            event["data"] = self.blobs.resolve(event["data"])
        return event

    def _check_totals(self, events_hash: str, lines: int) -> None:
        manifest = self.manifest
        if manifest.get("status") == STATUS_INCOMPLETE:
            self._problem(
                "incomplete",
                "the run never finalized (killed or crashed); "
                + (f"{lines} events were written, the last is seq {lines - 1}" if lines else "no events were written"),
            )
            return
        integrity = manifest.get("integrity") or {}
        recorded = integrity.get("eventsHash")
        if recorded and recorded != events_hash:
            self._locate_changed_lines(integrity)
        count = manifest.get("eventCount")
        if isinstance(count, int) and count != lines and not manifest.get("lost"):
            self._problem("count_mismatch", f"the manifest says {count} events but {EVENTS_NAME} has {lines} lines")

    def _locate_changed_lines(self, integrity: dict[str, Any]) -> None:
        """Second pass, only after a hash mismatch: name the lines whose crc32 changed."""
        checksums_path = self.capture_dir / (integrity.get("lineChecksums") or {}).get("path", LINE_CHECKSUMS_NAME)
        try:
            checksums = checksums_from_bytes(checksums_path.read_bytes())
        except OSError:
            checksums = None
            self._problem("hash_mismatch", f"{EVENTS_NAME} does not match the sha256 in the manifest: it was changed")
        changed = 0
        with open(self.capture_dir / EVENTS_NAME, "rb") as handle:
            for index, line in enumerate(handle):
                if checksums is not None and index < len(checksums) and zlib.crc32(line) == checksums[index]:
                    continue
                changed += 1
                if checksums is not None and changed <= 20:
                    self._problem("changed_line", "changed after capture (its checksum does not match)", index + 1, index)
                self._check_changed_envelope(line, index)
        if checksums is None:
            return
        if changed == 0:
            self._problem("hash_mismatch", f"{EVENTS_NAME} does not match the sha256 in the manifest: it was changed")

    def _check_changed_envelope(self, line: bytes, index: int) -> None:
        """A line the hash no longer vouches for: its envelope is checked too (the main pass skipped it)."""
        if not self._hash_vouches_for_envelopes():
            return
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            return  # the main pass already named it
        shape = envelope_problem(event)
        if shape is not None:
            self._problem("bad_event", shape, index + 1, index)

    def _problem(self, kind: str, message: str, line: int | None = None, seq: int | None = None) -> Problem:
        problem = Problem(kind, message, line, seq)
        self.problems.append(problem)
        return problem


def read_events(capture_dir: Path, *, resolve_blobs: bool = True) -> Iterator[dict[str, Any]]:
    """Every event of a capture, raising CorruptCapture at the first problem (for replay and diff)."""
    reader = CaptureReader(capture_dir, resolve_blobs=resolve_blobs)
    yield from reader
    reader.raise_for_problems()
