"""Streaming reader of a capture: events in seq order without loading the file, with integrity checks.

It reads events.jsonl (a regular file, never followed through a link) in 1 MiB chunks, hashing each chunk as it goes
and taking its lines with memchr (io.BytesIO), and stops at the first line that is torn (no newline: cut mid-write),
longer than wop reads, not JSON (orjson, the one parser), or not an event of this capture by format/shape.py — every
field wop reads has its type — or out of seq order. Lines are checked in groups of about 32 KiB with
the validator's shapes (one msgspec call for the group: a call per event would cost more than its checks); a group
where one line is not the usual event goes line by line through the validator's whole check, which names the problem
(tests/format/test_reader_verdict.py: the same verdict as the validator's, line by line). What it found is
kept in `problems`; the events before the first problem are the intact prefix. A changed line is found through the
manifest's whole-file sha256 and named through the per-line crc32 checksums the sink wrote. A matching hash proves
nothing about a line (anyone can recompute it), so every line is checked whatever the hash says.
"""

import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import BytesIO
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from openwop_cli.errors import CorruptCapture, IncompleteCapture
from openwop_cli.format.blobs import BLOB_MARKER, BlobStore, find_blob_refs
from openwop_cli.format.digest import BackgroundHash
from openwop_cli.format.files import MAX_LINE_BYTES, bounded_lines, open_regular, read_regular
from openwop_cli.format.manifest import EVENTS_NAME, LINE_CHECKSUMS_NAME, STATUS_INCOMPLETE, read_manifest
from openwop_cli.format.schema import MAX_INT, too_deep

if TYPE_CHECKING:
    from openwop_cli.format.shape import EventValidator

CHUNK_BYTES = 1 << 20
GROUP_BYTES = 32 << 10  # lines checked at once: their events are held meanwhile
MAX_LISTED_CHANGES = 20


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

    seq_from_zero = True  # what it yields has seq 0, 1, 2… with no gap (a gap is a problem it stops at)

    def __init__(self, capture_dir: Path, *, resolve_blobs: bool = False) -> None:
        self.capture_dir = Path(capture_dir)
        self.manifest = read_manifest(self.capture_dir)
        self.resolve_blobs = resolve_blobs
        self.blobs = BlobStore(self.capture_dir)
        self.problems: list[Problem] = []
        self.events_read = 0
        self.complete = False
        self._line_check: Callable[..., str | None] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The events of the intact prefix, in seq order."""
        return self._events(stop_at_first_problem=True)

    def scan_all(self) -> Iterator[dict[str, Any]]:
        """Every readable event, continuing past problems so all of them are listed (for verify),
        and the blobs the manifest pins checked too."""
        return self._events(stop_at_first_problem=False)

    def raise_for_problems(self) -> None:
        """CorruptCapture (or IncompleteCapture) naming the first problem, if there was one."""
        if self.problems:
            first = self.problems[0]
            error = IncompleteCapture if first.kind == "incomplete" else CorruptCapture
            raise error(f"capture {self.manifest['captureId']} is damaged: {first}; run `wop verify` for details")

    def _events(self, stop_at_first_problem: bool) -> Iterator[dict[str, Any]]:
        from msgspec import ValidationError, convert  # loaded when a read starts, not at import

        from openwop_cli.format.shape import SCAN_BYTES, SERVED, Group, nests_too_deep, shallow_lines

        self.problems = []
        self.events_read = 0
        self.complete = False
        expected_seq = 0
        lineno = 0
        loads = orjson.loads
        validator = self._validator()
        check, ids = validator.problem, (validator.capture_id, validator.run_id)
        seq_of, type_of, data_of, ids_of = itemgetter("seq"), itemgetter("type"), itemgetter("data"), itemgetter(
            "captureId", "runId")
        unusual = (orjson.JSONDecodeError, ValidationError, KeyError, TypeError)
        handle = self._open_events()
        if handle is None:
            return
        events_read = 0
        scan = os.fstat(handle.fileno()).st_size >= SCAN_BYTES
        digest = BackgroundHash()  # (a small file is hashed on this thread: see INLINE_BYTES)
        try:
            with handle:
                tail: list[bytes] = []  # the line the last chunks began, in pieces
                while chunk := handle.read(CHUNK_BYTES):
                    digest.update(chunk)
                    # The chunk's lines are found in the chunk itself (BytesIO shares its bytes), never in a copy of it
                    # joined to the last one's tail: a fresh megabyte a chunk cost a page fault every 4 KiB.
                    lines = BytesIO(chunk)
                    first: list[bytes] = []  # the line the tail began, when it ends in this chunk
                    if tail:
                        tail.append(lines.readline())
                        if tail[-1][-1:] == b"\n":
                            first, tail = [b"".join(tail)], []
                        elif sum(map(len, tail)) > MAX_LINE_BYTES:
                            self._problem("too_long", f"a line is longer than the {MAX_LINE_BYTES:,} bytes wop reads",
                                          lineno + 1, expected_seq)
                            return
                        else:
                            continue
                    may_hold_blobs = b"$" in chunk or any(b"$" in line for line in first)  # memchr-fast
                    shallow = shallow_lines(chunk, scan) and (not first or shallow_lines(first[0]))  # none too deep
                    whole = chunk.rfind(b"\n") + 1  # the lines end there; what follows goes with the next chunk
                    if whole < len(chunk):
                        tail = [chunk[whole:]]
                    for group in _line_groups(first, lines, bool(tail)):
                        # The usual events, checked here at once as the validator checks each: their types' shapes
                        # (one msgspec call), this capture's ids, the values a replay serves, nesting, seqs in order.
                        events: list[Any] = []  # (left empty when a line is no JSON)
                        try:
                            events = list(map(loads, group))
                            convert({"events": events}, Group)
                            count = len(events)
                            usual = (list(map(seq_of, events)) == list(range(expected_seq, expected_seq + count))
                                     and list(map(ids_of, events)).count(ids) == count
                                     and (SERVED.keys().isdisjoint(map(type_of, events)) or all(
                                         SERVED[event["type"]](event["data"]) is None for event in events
                                         if event["type"] in SERVED))
                                     and (shallow or not any(map(nests_too_deep, map(data_of, events), group))))
                        except unusual:
                            usual = False
                        if usual:
                            expected_seq += count
                            events_read += count
                            if may_hold_blobs:
                                for index, line in enumerate(group):
                                    if BLOB_MARKER in line:
                                        events[index] = self._with_blobs(events[index], lineno + index + 1)
                            lineno += count
                            yield from events
                            continue
                        for index, line in enumerate(group):  # one is not: each line is checked whole, in order
                            lineno += 1
                            event, expected_seq, found = self._unusual_line(
                                line, lineno, expected_seq, check, events[index] if events else None)
                            if found and stop_at_first_problem:
                                return
                            if event is None:
                                continue
                            if may_hold_blobs and BLOB_MARKER in line:
                                event = self._with_blobs(event, lineno)
                            events_read += 1
                            yield event
                if tail:
                    lineno += 1
                    self._problem("torn_line", "torn: the last line has no newline (cut mid-write)", lineno,
                                  expected_seq)
                    if stop_at_first_problem:
                        return
                events_hash = digest.hexdigest()
        finally:
            self.events_read = events_read
            digest.close()  # its thread ends, whether or not every event was read
        self._check_totals(events_hash, lineno)
        if not stop_at_first_problem:
            self._check_manifest_blobs()
        self.complete = not self.problems

    def _unusual_line(self, line: bytes, lineno: int, expected_seq: int, check: Callable[..., str | None],
                      event: Any = None) -> tuple[dict[str, Any] | None, int, bool]:
        """A line checked whole (event: what it reads as, when already read): the event to yield (None: none), the seq
        expected next, and whether a problem was found (a seq gap's event is still yielded)."""
        if event is None:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                self._problem("bad_json", "not a JSON object (the line was damaged or edited)", lineno, expected_seq)
                return None, expected_seq + 1, True
        problem = check(event, line)
        if problem is not None:
            self._problem("bad_event", problem, lineno, expected_seq)
            return None, expected_seq + 1, True
        seq = event["seq"]
        if seq == expected_seq:
            return event, expected_seq + 1, False
        if not 0 <= seq <= MAX_INT:
            self._problem("bad_event", "field seq must be a non-negative integer", lineno, expected_seq)
            return None, expected_seq + 1, True
        self._problem("seq_gap", f"seq jumps from {expected_seq - 1} to {seq} (expected {expected_seq})", lineno, seq)
        return event, seq + 1, True

    def line_event(self, line: bytes, lineno: int) -> dict[str, Any]:
        """The event one line of events.jsonl holds (1-based lineno), read and checked as a pass over the file reads
        it: for a caller that holds a line such a pass accepted, in another process (diff.forked). CorruptCapture
        when the line is not one it would accept (the file changed since)."""
        if self._line_check is None:
            self._line_check = self._validator().problem
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            event = None
        problem = "not a JSON object" if event is None else self._line_check(event, line)
        if problem is None and event["seq"] != lineno - 1:
            problem = f"seq {event['seq']} on line {lineno}"
        if problem is not None:
            raise CorruptCapture(f"capture {self.manifest['captureId']} changed while it was read: {EVENTS_NAME} "
                                 f"line {lineno}: {problem}")
        return self._with_blobs(event, lineno) if BLOB_MARKER in line else event

    def _validator(self) -> "EventValidator":
        """The one validator (format/shape.py) for this capture's events; msgspec is loaded here, when a read starts."""
        from openwop_cli.format.shape import EventValidator

        return EventValidator(self.manifest["captureId"], self.manifest["runId"])

    def _open_events(self) -> BinaryIO | None:
        try:
            return open_regular(self.capture_dir / EVENTS_NAME)
        except FileNotFoundError:
            self._problem("missing", f"{EVENTS_NAME} is missing from {self.capture_dir}")
        except CorruptCapture as exc:
            self._problem("unreadable", exc.message)
        return None

    def _with_blobs(self, event: dict[str, Any], lineno: int) -> dict[str, Any]:
        for ref in find_blob_refs(event["data"]):
            problem = self.blobs.problem(ref)
            if problem is not None:
                self._problem("blob", problem, lineno, event["seq"])
                return event
        if self.resolve_blobs:
            try:
                resolved = {**event, "data": self.blobs.resolve(event["data"])}
            except CorruptCapture as exc:
                self._problem("blob", exc.message, lineno, event["seq"])
                return event
            if too_deep(resolved["data"]):
                self._problem("blob", "the event nests too deep once its blobs are put back", lineno, event["seq"])
                return event
            return resolved
        return event

    def _check_manifest_blobs(self) -> None:
        """The blobs the manifest pins (program sources, workflow): present and matching their sha256."""
        for ref in find_blob_refs(self.manifest):
            problem = self.blobs.problem(ref)
            if problem is not None:
                self._problem("blob", f"pinned in the manifest: {problem}")

    def _check_totals(self, events_hash: str, lines: int) -> None:
        manifest = self.manifest
        if manifest["status"] == STATUS_INCOMPLETE:
            self._problem(
                "incomplete",
                "the run never finalized (killed or crashed); "
                + (f"{lines} events were written, the last is seq {lines - 1}" if lines else "no events were written"),
            )
            return
        integrity = manifest.get("integrity") or {}
        recorded = integrity.get("eventsHash")
        if recorded and recorded != events_hash:
            self._locate_changed_lines(lines)
        count = manifest.get("eventCount")
        if count is not None and count != lines and not manifest.get("lost"):
            self._problem("count_mismatch", f"the manifest says {count} events but {EVENTS_NAME} has {lines} lines")

    def _locate_changed_lines(self, lines: int) -> None:
        """Second pass, only after a hash mismatch: name the lines whose crc32 changed."""
        from openwop_cli.format.sink import checksums_from_bytes  # the sink and its imports: only when a hash differs

        try:
            checksums = checksums_from_bytes(read_regular(self.capture_dir / LINE_CHECKSUMS_NAME, 4 * lines + 4))
        except (OSError, CorruptCapture):
            self._problem("hash_mismatch", f"{EVENTS_NAME} does not match the sha256 in the manifest: it was changed")
            return
        changed = 0
        handle = self._open_events()
        if handle is None:
            return
        with handle:
            for index, line in enumerate(bounded_lines(handle)):
                if index < len(checksums) and zlib.crc32(line) == checksums[index]:
                    continue
                changed += 1
                if changed <= MAX_LISTED_CHANGES:
                    self._problem("changed_line", "changed after capture (its checksum does not match)", index + 1, index)
        if changed == 0:
            self._problem("hash_mismatch", f"{EVENTS_NAME} does not match the sha256 in the manifest: it was changed")

    def _problem(self, kind: str, message: str, line: int | None = None, seq: int | None = None) -> Problem:
        problem = Problem(kind, message, line, seq)
        self.problems.append(problem)
        return problem


def _line_groups(first: list[bytes], lines: BytesIO, unfinished: bool) -> Iterator[list[bytes]]:
    """A chunk's whole lines (each with its newline) in groups of about GROUP_BYTES: first, then the chunk's own, found
    by memchr; its last, unfinished line (when unfinished) is left for the next chunk."""
    group = first + lines.readlines(GROUP_BYTES)
    while group:
        if unfinished and group[-1][-1:] != b"\n":
            del group[-1]
            if not group:
                return
        yield group
        group = lines.readlines(GROUP_BYTES)


def read_events(capture_dir: Path, *, resolve_blobs: bool = True) -> Iterator[dict[str, Any]]:
    """Every event of a capture, raising CorruptCapture at the first problem (for replay and diff)."""
    reader = CaptureReader(capture_dir, resolve_blobs=resolve_blobs)
    yield from reader
    reader.raise_for_problems()
