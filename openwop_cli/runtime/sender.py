"""The recorded process's end of the wire (wire.channel): it buffers events and sends them to `wop` in batches.

A sender sends before starting a process, at exit, around a `wop.llm_call`, and
from a background thread when 64 KiB are queued or at the latest FLUSH_SECONDS after the first queued
event (format/flusher.py), so a call an HTTP adapter records costs two list appends on the program's thread
and no system call (its lines and pickles are made when they are sent, by the thread that sends them, as a
rule while the program waits for an answer: emit_later), and a kill of `wop capture` or of the program loses
at most that window (an LLM call still waiting for its answer after FLUSH_SECONDS is on record). They
connect on their first message and load orjson on their first event, so a process that records nothing
starts as fast as without wop.
"""

import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from openwop_cli.heldsignals import with_handlers_held
from openwop_cli.runtime.processname import identity
from openwop_cli.wire.channel import (
    ENV_ADDRESS,
    FRAME_MARK,
    Chunks,
    as_builtin,
    control_line,
    process_info,
    tcp_address,
)

SEND_BATCH_BYTES = 64 * 1024
MAX_QUEUED_BYTES = 8 * 1024 * 1024  # beyond this the program waits for the parent: memory stays bounded
_time_ns = time.time_ns  # the real clock (imported before the program's clock reads are patched: runtime.bootstrap)
_LATER_BYTES = 512  # what a raw or emit_later event adds to the size it is given (its envelope, origin, headers)
_pickler: Any = None


def _connect(address: str) -> socket.socket:
    scheme, _, where = address.partition(":")
    if scheme == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(where)
        return sock
    if scheme == "tcp":
        return socket.create_connection(tcp_address(address))  # type: ignore[arg-type]
    raise ValueError(f"{ENV_ADDRESS} must be unix:PATH or tcp:HOST:PORT, got {address!r}")


def wait_for_go(address: str) -> dict[str, str]:
    """Ask `wop` whether the capture is ready and wait for its answer, on a connection of this call's own: what a
    process started before then (ENV_GATE) does in its bootstrap before anything of its program runs. Returns the
    environment variables the capture settled after this process started (its directory, ambient values on or off:
    host.launcher.ChildLaunch.settle). OSError when `wop` cannot be reached or closes the connection unanswered (it
    failed, or was killed)."""
    import json

    with _connect(address) as sock:
        sock.sendall(b'{"ready": true}\n')
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError(f"`wop` at {address} closed the connection")
            reply += chunk
    answer = json.loads(reply)
    environ = answer.get("environ") if isinstance(answer, dict) else None
    return {str(name): str(value) for name, value in environ.items()} if isinstance(environ, dict) else {}


class ChannelSender:
    """The recorded process's end: buffers event lines and sends them to the capturing parent.

    A full batch is handed to the flusher thread, which sends it while the program goes on (the socket
    write releases the GIL); only a backlog of MAX_QUEUED_BYTES, when the parent cannot keep up, makes the
    program wait for its own send. `_send_lock` keeps batches in order whichever thread sends them (reentrant: a
    signal handler may send while its thread is sending, see _send_taken).
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self._lock = threading.RLock()  # the buffer and its bookkeeping (a signal handler may record inside)
        self._send_lock = threading.RLock()  # the socket: one batch at a time, in the order taken
        self._sending = False  # a batch is on its way (by the thread holding _send_lock)
        self._buffer: list[bytes | tuple] = []  # event lines, raw pieces, and emit_later's entries built when sent
        self._buffered = 0
        self._broken = False
        self._identity_told = False
        self._sock: socket.socket | None = None
        self._dumps: Callable[[Any], bytes] | None = None
        self._flusher: Any = None  # format.flusher, loaded with orjson on the first event
        self._buffer_started = 0.0
        self._flush_scheduled = False
        self._handed_off = False
        self._loading_in: set[int] = set()  # the threads loading what events need (see _load_encoder)
        self._recorded_while_loading: list[tuple[Callable[..., None], tuple]] = []  # (emit or queue_raw, its args)

    def emit(
        self, event_type: str, data: dict[str, Any], ts: int, origin: dict[str, Any], source_seq: int | None = None
    ) -> None:
        """Queue one event; sent by the flusher thread when the batch is full or soon after, or on flush."""
        dumps = self._dumps or self._load_encoder()
        if dumps is None:
            if not self._broken:
                self._recorded_while_loading.append((self.emit, (event_type, data, ts, origin, source_seq)))
            return
        line = self._line(event_type, data, ts, origin, source_seq)
        self._queue(line, len(line))

    sends_raw = True  # Session.record_raw: raw pieces are queued as they are (queue_raw)

    def emit_later(self, build: Callable[..., tuple[str, dict[str, Any]]], args: tuple, ts: int,
                   origin: dict[str, Any], size: int) -> None:
        """Queue one event made when its batch is sent, by the thread that sends (the flusher's, as a rule, which
        runs while the program waits for an answer), not by the program's: as the type and data `build(*args)`
        makes (see Session.record_later)."""
        if self._dumps is None:  # the process's first event: what events need is loaded now
            event_type, data = build(*args)
            self.emit(event_type, data, ts, origin)
            return
        self._queue((build, args, ts, origin), size + _LATER_BYTES)

    def queue_raw(self, entry: tuple[str, int, bytes | None, tuple, bytes], size: int) -> None:
        """Queue the raw pieces of an HTTP exchange's event, (kind, ts, origin, pieces, body) as Session.record_raw
        makes them (size: the body's): sent pickled in a frame, built into the event by `wop capture`."""
        if self._dumps is None and self._load_encoder() is None:
            if not self._broken:  # a signal handler's, while its thread loads what events need: queued after it
                self._recorded_while_loading.append((self.queue_raw, (entry, size)))
            return
        self._queue(entry, size + _LATER_BYTES)

    def _line(self, event_type: str, data: dict[str, Any], ts: int, origin: dict[str, Any],
              source_seq: int | None) -> bytes:
        dumps = self._dumps
        return b"\t".join((event_type.encode(), str(ts).encode(), dumps(origin), dumps(data),
                           b"" if source_seq is None else str(source_seq).encode())) + b"\n"

    def _wire(self, queued: list[bytes | tuple]) -> list[bytes]:
        """The queue as it goes on the socket: event lines as they are, each run of raw pieces (queue_raw) one frame,
        and emit_later's entries made now into their event's line (nothing, with a warning, if wop fails to make
        one). One loop, no call of ours per raw entry: it runs for every event a process records."""
        wire: list[bytes] = []
        run: list[tuple] = []
        for entry in queued:
            if type(entry) is not bytes:
                if type(entry[0]) is str:  # raw pieces: (kind, ts, origin, pieces, body)
                    run.append(entry)
                    continue
                build, args, ts, origin = entry
                try:
                    event_type, data = build(*args)
                    entry = self._line(event_type, data, ts, origin, None)
                except Exception as exc:  # a bug in wop must cost one event, not the batch or the program
                    entry = _lost_event(exc)
            if run:
                wire += self._frame(run)
                run = []
            wire.append(entry)
        if run:
            wire += self._frame(run)
        return wire

    def _frame(self, run: list[tuple]) -> list[bytes]:
        """A frame of raw pieces (see the module docstring), as its header and the chunks of its pickles: the run
        pickled as one list (each entry alone, and any that pickle refuses left out with a warning, if the whole run
        cannot be)."""
        try:
            pickles = self._pickled(run)
        except Exception:  # a value pickle refuses (a bug in wop): that entry is lost, not the run
            pickles = [chunk for entry in run for chunk in self._pickled_alone(entry)]
        size = sum(map(len, pickles))
        if size >= 1 << 32:
            print(f"wop: {len(run)} HTTP events of {size} bytes are too large to record", file=sys.stderr)
            return []
        return [FRAME_MARK + size.to_bytes(4, "big"), *pickles]

    def _pickled(self, entries: list[tuple]) -> list[bytes]:
        """entries pickled in pickle's fast mode: no memo (raw pieces hold no object twice that matters, and no cycle),
        which takes 0.6 us an entry instead of 1.5; as the chunks the pickler wrote, taken as they are (one, unless
        the pickle is larger than 64 KiB)."""
        import pickle

        global _pickler
        if _pickler is None:
            class PlainValues(pickle.Pickler):
                def reducer_override(self, value: Any) -> Any:  # (not called for a builtin of the exact type)
                    return as_builtin(value)

            _pickler = PlainValues
        chunks = Chunks()
        pickler = _pickler(chunks, 5)
        pickler.fast = True
        pickler.dump(entries)
        return chunks

    def _pickled_alone(self, entry: tuple) -> list[bytes]:
        try:
            return self._pickled([entry])
        except Exception as exc:
            return [_lost_event(exc)]

    def _queue(self, entry: bytes | tuple, size: int) -> None:
        """Add an event line (or raw pieces, or an emit_later entry) to the queue; hand a full batch to the flusher
        thread."""
        with self._lock:
            if not self._buffer:
                self._buffer_started = time.monotonic()
                if not self._flush_scheduled:
                    self._flush_scheduled = True
                    self._flusher.flush_later(self, self._buffer_started + self._flusher.FLUSH_SECONDS)
            self._buffer.append(entry)
            self._buffered += size
            if self._buffered < SEND_BATCH_BYTES:
                return
            backlog = self._buffered >= MAX_QUEUED_BYTES
            hand_off = not self._handed_off and not backlog
            self._handed_off = self._handed_off or hand_off
        if backlog:
            self._send_queued()
        elif hand_off:
            self._flusher.flush_later(self, 0.0)

    def _load_encoder(self) -> Callable[[Any], bytes] | None:
        """Load what events need (orjson, the flusher) on the first one (the flusher first, as `_dumps` set says both
        are there). None to a signal handler that records while its thread is loading them: its event waits for the
        load, as the handler's exception (a module half loaded) would reach orjson's initialization, which then
        crashes the process. None for good, and one warning, where orjson does not load (the bootstrap found it, but
        it was built for another Python): the program runs on unrecorded rather than fail in its own call. The
        program's signal handlers wait for the load (heldsignals)."""
        thread = threading.get_ident()
        if thread in self._loading_in or self._broken:
            return None
        self._loading_in.add(thread)
        try:
            return with_handlers_held(self._load)
        finally:
            self._loading_in.discard(thread)

    def _load(self) -> Callable[[Any], bytes] | None:
        try:
            from openwop_cli.format import flusher
            from openwop_cli.wire.jsonable import dumps
        except ImportError as exc:
            self._broken = True
            self._recorded_while_loading.clear()
            print(f"wop: process {os.getpid()} ({sys.executable}) cannot load what recording needs ({exc}); its events "
                  "are not recorded", file=sys.stderr)
            return None
        self._flusher = flusher
        self._dumps = dumps
        while self._recorded_while_loading:
            record, args = self._recorded_while_loading.pop(0)
            record(*args)
        return dumps

    def before_fork(self) -> None:
        """(os.fork's hook.) Send the queue, once what the first event loads is loaded: forked while another thread
        was still importing it, the child would find that import's lock taken for good and hang on its first event."""
        if self._dumps is None:
            self._load_encoder()
        self.flush()

    @property
    def silent(self) -> bool:
        """True while this process has neither sent nor queued anything."""
        return self._sock is None and not self._buffer and not self._broken

    def send_message(self, message: dict[str, Any]) -> None:
        """Send a control message (such as the imported modules) after the events queued so far."""
        self._send_queued(control_line(message))

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a control message after the queued events and wait for the parent's one-line answer."""
        import json

        with self._send_lock:
            self._send_taken(control_line(message))
            if self._broken or self._sock is None:
                raise ConnectionError(f"no connection to `wop` at {self.address}")
            reply = bytearray()
            while not reply.endswith(b"\n"):
                chunk = self._sock.recv(65536)
                if not chunk:
                    raise ConnectionError(f"`wop` at {self.address} closed the connection")
                reply += chunk
        return json.loads(reply)

    def flush(self) -> None:
        """Send every queued event now."""
        self._send_queued()

    def flush_due(self) -> float | None:
        """(The flusher thread's call.) Send the queue if it holds a full batch or its oldest event has waited
        FLUSH_SECONDS; return when to ask again (None: nothing was queued since the last call). After a batch the
        call stays due FLUSH_SECONDS on, so the next events of a busy program need not wake the thread to be timed."""
        with self._lock:
            if not self._buffer:
                self._flush_scheduled = False
                return None
            due = self._buffer_started + self._flusher.FLUSH_SECONDS
            if self._buffered < SEND_BATCH_BYTES and time.monotonic() < due:
                return due
        self._send_queued()
        with self._lock:
            self._handed_off = False
            if self._buffer:  # queued while this batch was being sent
                return self._buffer_started + self._flusher.FLUSH_SECONDS
            return time.monotonic() + self._flusher.FLUSH_SECONDS

    def close(self) -> None:
        """Send what is queued and close the connection."""
        with self._send_lock:
            self._send_taken()
            self._broken = True
            if self._sock is not None:
                self._sock.close()

    def reconnect_after_fork(self) -> None:
        """In a forked child: drop the parent's queue and socket, open a connection of our own."""
        self._lock, self._send_lock = threading.RLock(), threading.RLock()
        self._buffer, self._buffered = [], 0
        self._flush_scheduled = self._handed_off = self._identity_told = False
        self._sock = None

    def _send_queued(self, extra: bytes | None = None) -> None:
        with self._send_lock:
            self._send_taken(extra)

    def _send_taken(self, extra: bytes | None = None) -> None:
        """Take the queue (and extra, a control line after it) and send it; the caller holds _send_lock. Called by a
        signal handler that runs while its thread is sending a batch, it only queues extra: its lines cut into that
        batch's, and waiting for it would wait for good."""
        if self._sending:
            if extra is not None:
                self._queue(extra, len(extra))
            return
        self._sending = True
        try:
            with self._lock:
                queued, self._buffer, self._buffered = self._buffer, [], 0
            lines = self._wire(queued)
            if extra is not None:
                lines.append(extra)
            if lines:
                self._send_now(lines)
        finally:
            self._sending = False

    def _send_now(self, lines: list[bytes]) -> None:
        if self._broken:
            return
        try:
            head = []
            if self._sock is None:
                self._sock = _connect(self.address)
                head.append(control_line({"hello": process_info()}))
            if not self._identity_told:  # known once this process runs its multiprocessing.Process
                told = identity()
                if told is not None:
                    head.append(control_line({"mpIdentity": told}))
                    self._identity_told = True
            self._sock.sendall(b"".join([b"@%d\n" % _time_ns(), *head, *lines]))
        except OSError as exc:
            self._broken = True
            print(f"wop: lost the connection to `wop capture` ({exc}); later events are not recorded", file=sys.stderr)


def _lost_event(exc: Exception) -> bytes:
    """Warn that an event could not be made (a bug in wop) and stand in for it with nothing."""
    print(f"wop: could not record an event ({type(exc).__name__}: {exc})", file=sys.stderr)
    return b""
