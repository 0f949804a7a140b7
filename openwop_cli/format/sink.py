"""The capture sink: start / append / finalize, append-only and safe to call from many threads.

- start takes the writer's lock (format/writerlock.py: `wop rm`/`wop gc` leave the capture alone until
  finalize), reserves the space finalize needs (a store without it is refused at once), writes
  manifest.json atomically with status "incomplete" and creates events.jsonl; it refuses a directory
  that already holds a capture.
- append assigns the next seq under one lock and buffers the serialized line; big or binary values
  are redacted at once and moved to blobs. The buffer is written when it is full, on flush, and at
  the latest FLUSH_SECONDS after its first line (format/flusher.py: one thread, one write per
  batch), so a kill loses at most that window. It is first scanned for secrets in one pass (only
  the flagged lines are redacted), then written, hashed (sha256 of the whole file) and checksummed
  per line (crc32, so `wop verify` can name an edited line). Secrets live only in memory until then.
- finalize writes the per-line checksums and replaces the manifest with the final one, signed with
  this user's key (format/signature.py): how a replay knows a capture made here (an incomplete
  capture, which no replay runs, is unsigned).
A crash at any point leaves a readable capture whose manifest says "incomplete". An I/O failure
(disk full, read-only) never stops the program: it is reported once, a line cut off by it is
trimmed, and the manifest — written into space reserved at start — says from which seq events
were lost. Everything is created readable by its owner only (0700 directory, 0600 files).
"""

import errno
import os
import sys
import threading
import time
import zlib
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from openwop_cli._version import __version__
from openwop_cli.errors import UsageError
from openwop_cli.format import writerlock
from openwop_cli.format.blobs import DEFAULT_THRESHOLD, BlobStore, write_private
from openwop_cli.format.digest import BackgroundHash
from openwop_cli.format.events import EVENT_TYPES, EVENT_VERSION, LLM_REQUEST, ORIGIN_SCHEME, new_id
from openwop_cli.format.flusher import FLUSH_SECONDS, flush_later
from openwop_cli.format.manifest import (
    EVENTS_NAME,
    FORMAT_VERSION,
    LINE_CHECKSUMS_NAME,
    STATUS_ERROR,
    STATUS_INCOMPLETE,
    STATUSES,
    manifest_path,
    write_manifest_atomic,
)
from openwop_cli.format.redact import Redactor
from openwop_cli.format.schema import MAX_DEPTH, cut_nesting
from openwop_cli.format.signature import SIGNATURE_FIELD, signature_for

DEFAULT_BUFFER_BYTES = 64 * 1024
RESERVE_NAME = ".wop-reserve"
RESERVE_BYTES = 256 * 1024  # room for the final manifest and checksums when the disk fills up
_NEWLINE = orjson.OPT_APPEND_NEWLINE
_NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
DELETED = "the capture directory was deleted while wop was writing it: nothing of this run was kept"


def now_ms() -> int:
    """Wall-clock epoch milliseconds, the unit of every event's ts."""
    return time.time_ns() // 1_000_000


class CaptureSink:
    """Writes one capture directory; see the module docstring for the guarantees."""

    def __init__(
        self,
        capture_dir: Path,
        *,
        redactor: Redactor | None = None,
        blob_threshold: int = DEFAULT_THRESHOLD,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        on_warning: Callable[[str], None] | None = None,
        durable: bool = True,
    ) -> None:
        """durable=False: no fsync, no disk reserve and no timed flush (its events are written when the buffer fills
        and at finalize), for a capture made anew from a source that stays (an import: thousands of captures in one
        run, each written again from its trace if the machine goes down meanwhile)."""
        self.capture_dir = Path(capture_dir)
        self.durable = durable
        self.redactor = redactor if redactor is not None else Redactor.from_environment()
        self.blobs = BlobStore(self.capture_dir)
        self.blob_threshold = blob_threshold
        self.buffer_bytes = buffer_bytes
        self.on_warning = on_warning
        self.manifest: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._next_seq = 0
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._written = 0
        self._hash = BackgroundHash()
        self._line_checksums = array("I")
        self._file: Any = None
        self._failure: str | None = None
        self._lost_from_seq: int | None = None
        self._torn = False
        self._buffer_started = 0.0
        self._flush_scheduled = False
        self._model: dict[str, Any] | None = None
        self._capture_id = ""
        self._run_id = ""
        self._lock_fd: int | None = None
        self._events_identity: tuple[int, int] | None = None
        self._warned: set[str] = set()

    @property
    def event_count(self) -> int:
        """How many events have been appended (written or still buffered)."""
        return self._next_seq

    def start(self, seed: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create the capture: directory, writer's lock, the space finalize needs, empty events.jsonl, incomplete
        manifest. A store without that space, or any of it failing, is a UsageError, and what was made is removed."""
        made_directory = not self.capture_dir.exists()
        try:
            self.capture_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the capture directory {self.capture_dir}: {exc.strerror or exc}") from None
        if manifest_path(self.capture_dir).exists() or (self.capture_dir / EVENTS_NAME).exists():
            raise UsageError(f"{self.capture_dir} already holds a capture; choose another --out directory")
        try:
            self._lock_fd = writerlock.hold(self.capture_dir)
        except BlockingIOError:
            raise UsageError(f"{self.capture_dir} is being written by another wop; choose another --out directory") from None
        except OSError as exc:
            raise UsageError(f"cannot create a capture in {self.capture_dir}: {exc.strerror or exc}") from None
        fields = dict(seed or {})
        self._capture_id = fields.pop("captureId", None) or new_id()
        self._run_id = fields.pop("runId", None) or new_id()
        self.manifest = {
            "version": FORMAT_VERSION,
            "captureId": self._capture_id,
            "runId": self._run_id,
            "name": fields.pop("name", None),
            "createdAt": fields.pop("createdAt", None) or now_ms(),
            "mode": fields.pop("mode", "capture"),
            "status": STATUS_INCOMPLETE,
            "eventCount": 0,
            "eventLogPath": EVENTS_NAME,
            "redaction": {"enabled": self.redactor.active, "profile": self.redactor.profile},
            "originScheme": fields.pop("originScheme", ORIGIN_SCHEME),
            "tool": {"name": "wop", "version": __version__},
            **self.redactor.redact_flagged(fields),
        }
        self._line_prefix = (b'{"version":%d,"captureId":%s,"runId":%s,"seq":' % (
            EVENT_VERSION, orjson.dumps(self._capture_id), orjson.dumps(self._run_id)))
        try:
            if self.durable:
                _reserve(self.capture_dir / RESERVE_NAME, RESERVE_BYTES)
            self._file = _create_private(self.capture_dir / EVENTS_NAME)
            self._events_identity = _identity(os.fstat(self._file.fileno()))
            write_manifest_atomic(self.capture_dir, self.manifest, durable=False)  # finalize's is the durable one
        except OSError as exc:
            self._abandon(made_directory)
            if exc.errno in _NO_SPACE:
                raise UsageError(f"cannot capture in {self.capture_dir}: its file system has less free than the "
                                 f"{RESERVE_BYTES // 1024} KiB a capture keeps for its final manifest "
                                 f"({exc.strerror}); free some space, or write it elsewhere with --out DIR") from None
            raise UsageError(f"cannot create a capture in {self.capture_dir}: {exc.strerror or exc}") from None
        return self.manifest

    def append(
        self,
        event_type: str,
        data: dict[str, Any],
        *,
        ts: int | None = None,
        origin: dict[str, Any] | None = None,
        source_seq: int | None = None,
    ) -> int:
        """Record one event and return its seq; never raises for I/O trouble (see module doc).

        origin ({pid, thread, task}) says which process, thread and asyncio task made the event;
        source_seq, in a replay, the seq of the recorded event it was served from.
        """
        if event_type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {event_type!r}")
        with self._lock:
            seq = self._next_seq
            self._next_seq = seq + 1
            if self._failure is not None:
                return seq
            if self._model is None and event_type == LLM_REQUEST:
                self._model = {"provider": data.get("provider"), "model": data.get("model")}
            event = {
                "version": EVENT_VERSION,
                "captureId": self._capture_id,
                "runId": self._run_id,
                "seq": seq,
                "ts": ts if ts is not None else time.time_ns() // 1_000_000,
                "type": event_type,
                "data": data,
            }
            if origin is not None:
                event["origin"] = origin
            if source_seq is not None:
                event["sourceSeq"] = source_seq
            line = _dumps_or_none(event)
            if line is None or len(line) > self.blob_threshold or self.redactor.strict:
                try:
                    line = self._serialize_now(event, data)
                except OSError as exc:  # a blob could not be stored: what came before still goes to disk
                    self._write_buffer()
                    if self._failure is None:
                        self._fail(seq, exc)
                    return seq
            if not self._buffer:
                self._start_batch()
            self._buffer.append(line)
            self._buffered += len(line)
            if self._buffered >= self.buffer_bytes:
                self._write_buffer()
            return seq

    def append_raw(self, event_type: str, data_json: bytes, *, ts: int, origin_json: bytes | None = None,
                   source_seq: int | None = None) -> int:
        """append() for data already serialized (the capture channel's bytes): spliced into the line, not parsed.

        Anything append() must look inside (big values for blobs, the strict profile, the first
        llm_request's model) takes the parsed path; data with bytes in it must come through append().
        """
        if event_type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {event_type!r}")
        if len(data_json) > self.blob_threshold or self.redactor.strict or (
                self._model is None and event_type == LLM_REQUEST):
            origin = orjson.loads(origin_json) if origin_json else None
            return self.append(event_type, orjson.loads(data_json), ts=ts, origin=origin, source_seq=source_seq)
        with self._lock:
            seq = self._next_seq
            self._next_seq = seq + 1
            if self._failure is not None:
                return seq
            line = b'%s%d,"ts":%d,"type":"%s","data":%s%s%s}\n' % (
                self._line_prefix, seq, ts, event_type.encode(), data_json,
                b',"origin":' + origin_json if origin_json else b"",
                b',"sourceSeq":%d' % source_seq if source_seq is not None else b"")
            if not self._buffer:
                self._start_batch()
            self._buffer.append(line)
            self._buffered += len(line)
            if self._buffered >= self.buffer_bytes:
                self._write_buffer()
            return seq

    def flush(self) -> None:
        """Write buffered events to the file now (the runtime calls this before slow external calls)."""
        with self._lock:
            self._write_buffer()

    def flush_due(self) -> float | None:
        """(The flusher thread's call.) Write the buffer if its oldest event has waited FLUSH_SECONDS; else
        return when it will have."""
        with self._lock:
            due = self._buffer_started + FLUSH_SECONDS
            if self._buffer and time.monotonic() < due:
                return due
            self._write_buffer()
            self._flush_scheduled = False
            return None

    def _start_batch(self) -> None:
        """The first line of a new buffer: note when, and have the flusher write it FLUSH_SECONDS later."""
        self._buffer_started = time.monotonic()
        if self.durable and not self._flush_scheduled:
            self._flush_scheduled = True
            flush_later(self, self._buffer_started + FLUSH_SECONDS)

    def finalize(self, status: str = "ok", error: str | None = None, **fields: Any) -> dict[str, Any]:
        """Write everything, then replace the manifest with the final, signed one (status, counts, integrity) and
        let go of the writer's lock. A capture whose directory was deleted meanwhile is not written again: its
        manifest says so (status error, everything lost), and only the caller learns it."""
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        with self._lock:
            self._write_buffer()
            self._close_events()
            manifest = dict(self.manifest)
            completed_at = fields.pop("completedAt", None) or now_ms()
            manifest.update(self.redactor.redact_flagged(fields))
            manifest.update(
                status=status,
                completedAt=completed_at,
                eventCount=self._next_seq,
                model=self.redactor.redact_flagged(self._model),
                integrity=self._integrity(),
            )
            if error is not None:
                manifest["error"] = self.redactor.scrub_text(error)
            if self._deleted():
                manifest.update(status=STATUS_ERROR, lost={"fromSeq": 0, "events": self._next_seq, "reason": DELETED})
                manifest["error"] = DELETED
                self.manifest = manifest
                writerlock.release(self.capture_dir, self._lock_fd)
                return manifest
            if self.durable:
                (self.capture_dir / RESERVE_NAME).unlink(missing_ok=True)
            if not self._write_line_checksums():
                manifest["integrity"].pop("lineChecksums", None)
            if self._failure is not None:
                manifest["status"] = STATUS_ERROR
                manifest["lost"] = self._lost_report()
                manifest["error"] = manifest["lost"]["reason"]
            manifest = self._signed(manifest)
            try:
                write_manifest_atomic(self.capture_dir, manifest, durable=self.durable)
            except OSError as exc:
                self._warn(f"wop: could not finalize the capture manifest in {self.capture_dir}: {exc}")
            writerlock.release(self.capture_dir, self._lock_fd)
            self.manifest = manifest
            return manifest

    def _signed(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """manifest with its signature under this user's key (format.signature), when the key can be used."""
        content = {name: value for name, value in manifest.items() if name != SIGNATURE_FIELD}
        signature = signature_for(content, self._warn_once)
        return content if signature is None else {**content, SIGNATURE_FIELD: signature}

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self._warn(message)

    def _deleted(self) -> bool:
        """True when the capture's events file is no longer the one this sink wrote (its directory deleted or
        replaced under it)."""
        try:
            return _identity(os.stat(self.capture_dir / EVENTS_NAME, follow_symlinks=False)) != self._events_identity
        except OSError:
            return True

    def _abandon(self, made_directory: bool) -> None:
        """Remove what a start that failed had made (the directory too, when it made it and it is empty)."""
        for name in (RESERVE_NAME, EVENTS_NAME):
            try:
                (self.capture_dir / name).unlink(missing_ok=True)
            except OSError:
                pass
        if self._file is not None:
            self._file.close()
            self._file = None
        writerlock.release(self.capture_dir, self._lock_fd)
        self._lock_fd = None
        if made_directory:
            try:
                self.capture_dir.rmdir()
            except OSError:
                pass

    def _serialize_now(self, event: dict[str, Any], data: dict[str, Any]) -> bytes:
        """The line of an event that cannot wait for the buffer scan: redacted, big values in blobs."""
        line = _dumps_or_none(event)
        if line is None:
            data = event["data"] = cut_nesting(data, MAX_DEPTH - 1)
            line = _dumps_or_none(event)
        if line is None or self.redactor.suspicious(line):
            data = event["data"] = self.redactor.redact_event(event["type"], data)
            line = _dumps_or_none(event)
        if line is None or len(line) > self.blob_threshold:
            threshold = self.blob_threshold
            event["data"] = {key: self.blobs.externalize(value, threshold) for key, value in data.items()}
            line = orjson.dumps(event, option=_NEWLINE)
        return line

    def _redacted_buffer(self) -> list[bytes]:
        """The buffered lines with every line the prefilter flags redacted (one pass when none is)."""
        lines, redactor = self._buffer, self.redactor
        if not redactor.suspicious(b"".join(lines)):
            return lines
        return [self._redact_line(line) if redactor.suspicious(line) else line for line in lines]

    def _redact_line(self, line: bytes) -> bytes:
        event = orjson.loads(line)
        event["data"] = self.redactor.redact_event(event["type"], event["data"])
        return orjson.dumps(event, option=_NEWLINE)

    def _write_buffer(self) -> None:
        if not self._buffer or self._failure is not None or self._file is None or self._file.closed:
            return
        lines = self._redacted_buffer()
        chunk = b"".join(lines)
        first_seq = self._next_seq - len(self._buffer)
        written, error = _write_all(self._file, chunk)
        if error is not None:
            written = self._keep_whole_lines(chunk, written)
            lines = lines[:chunk.count(b"\n", 0, written)]
            chunk = chunk[:written]
        self._hash.update(chunk)
        self._line_checksums.extend(map(zlib.crc32, lines))
        self._written += len(chunk)
        self._buffer.clear()
        self._buffered = 0
        if error is not None:
            self._fail(first_seq + len(lines), error)

    def _keep_whole_lines(self, chunk: bytes, written: int) -> int:
        """After a failed write: cut the file back to the last whole line (a torn line would read as damage)."""
        whole = chunk.rfind(b"\n", 0, written) + 1
        if whole != written:
            try:
                os.ftruncate(self._file.fileno(), self._written + whole)
            except OSError:
                self._torn = True
        return whole

    def _fail(self, first_lost_seq: int, exc: OSError) -> None:
        self._failure = f"{exc.strerror or exc} ({type(exc).__name__})"
        self._lost_from_seq = first_lost_seq
        self._buffer.clear()
        self._buffered = 0
        self._warn(
            f"wop: capture writes to {self.capture_dir} failed at seq {first_lost_seq}: {self._failure}; "
            "the program keeps running and later events are not recorded"
        )

    def _lost_report(self) -> dict[str, Any]:
        lost = self._next_seq - (self._lost_from_seq or 0)
        torn = "; the last line written is cut off" if self._torn else ""
        return {
            "fromSeq": self._lost_from_seq,
            "events": lost,
            "reason": f"capture sink failed at seq {self._lost_from_seq}: {self._failure}; "
                      f"{lost} events were not written{torn}",
        }

    def _integrity(self) -> dict[str, Any]:
        integrity: dict[str, Any] = {"algorithm": "sha256", "eventsHash": None, "eventsBytes": self._written}
        if not self._torn:
            integrity["eventsHash"] = self._hash.hexdigest()
            integrity["lineChecksums"] = {"algorithm": "crc32", "path": LINE_CHECKSUMS_NAME}
        return integrity

    def _write_line_checksums(self) -> bool:
        """events.crc32 for the lines written; False when it could not be written (the hash still vouches)."""
        if self._torn:
            return False
        path = self.capture_dir / LINE_CHECKSUMS_NAME
        try:
            write_private(path, checksums_to_bytes(self._line_checksums))
        except OSError as exc:
            path.unlink(missing_ok=True)
            self._warn(f"wop: could not write {path}: {exc.strerror or exc}; `wop verify` can still check the sha256")
            return False
        return True

    def _close_events(self) -> None:
        if self._file is None or self._file.closed:
            return
        try:
            if self.durable:
                os.fsync(self._file.fileno())
        except OSError as exc:
            if self._failure is None:
                self._fail(self._next_seq, exc)
        self._file.close()

    def _warn(self, message: str) -> None:
        if self.on_warning is not None:
            self.on_warning(message)


def _write_all(file: Any, data: bytes) -> tuple[int, OSError | None]:
    """Write every byte (an unbuffered file may take fewer than asked: a signal, a nearly full disk);
    returns how many were written and the error that stopped it, if one did."""
    view = memoryview(data)
    done = 0
    try:
        while done < len(data):
            written = file.write(view[done:])
            if not written:
                raise OSError(28, "No space left on device")
            done += written
    except OSError as exc:
        return done, exc
    return done, None


def _create_private(path: Path) -> Any:
    """A new file only its owner can read (0600), opened for unbuffered appends; an existing one is refused."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o600)
    return os.fdopen(fd, "wb", buffering=0)


def _reserve(path: Path, size: int) -> None:
    """Hold size bytes of disk in a file finalize deletes, so the final manifest still fits on a full disk. A file
    system without that room raises (ENOSPC, EDQUOT); one that cannot reserve space ahead is let be (the capture
    goes on, and finalize tries anyway)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)
            else:
                os.write(fd, bytes(size))
        finally:
            os.close(fd)
    except OSError as exc:
        path.unlink(missing_ok=True)
        if exc.errno in _NO_SPACE:
            raise


def _identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


def _dumps_or_none(event: dict[str, Any]) -> bytes | None:
    """The event's JSON line, or None when it holds bytes (which only blobs can store)."""
    try:
        return orjson.dumps(event, option=_NEWLINE)
    except TypeError:
        return None


def checksums_to_bytes(checksums: array) -> bytes:
    """Per-line crc32 values as little-endian uint32, the events.crc32 file format."""
    if sys.byteorder == "big":
        checksums = array("I", checksums)
        checksums.byteswap()
    return checksums.tobytes()


def checksums_from_bytes(data: bytes) -> array:
    """The inverse of checksums_to_bytes."""
    checksums = array("I")
    checksums.frombytes(data[: len(data) - len(data) % 4])
    if sys.byteorder == "big":
        checksums.byteswap()
    return checksums
