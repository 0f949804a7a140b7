"""The channel between recorded processes and the `wop capture` process that owns the capture.

Every Python process started under `wop capture` (the child, and any Python it starts) connects to
the address in WOP_SINK and sends lines: control messages (hello, modules, questions) as JSON
objects, events as `type TAB ts TAB origin-json TAB data-json TAB source-seq` — JSON never holds
a raw tab or newline, so the parent can splice the data bytes into the event line without parsing
them again — and, in frames, the raw pieces of HTTP exchanges (Session.record_raw: method, URL, headers and
body as the program holds them, credentials included, so the program's thread neither decodes nor filters
them): a frame is a NUL byte (no text line holds one), the payload's length (4 bytes, big endian) and pickles
(protocol 5) of lists of (kind, ts, origin JSON or None, pieces, body), one after the other. The parent loads them
with builtin values only (a class or function named in one is refused) and builds the events the process would have
built (adapters.exchange.RawExchanges), leaving credentials and secret URL parameters out. Each batch starts with
a line `@` and when it was sent (time.time_ns()), which orders the events processes recorded in the same
millisecond (see Collector._handle_round). The parent alone
assigns seq and writes the capture, so concurrent processes can never interleave bytes in events.jsonl, and
building HTTP events, redaction, disk I/O and the LLM requests' cache keys happen outside the recorded
program.

Senders buffer and send in batches (before starting a process, at exit, around a `wop.llm_call`, and
from a background thread when 64 KiB are queued or at the latest FLUSH_SECONDS after the first queued
event — format/flusher.py), so a call an HTTP adapter records costs two list appends on the program's thread
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
from typing import Any, Callable, Iterator

from openwop_cli.runtime.heldsignals import with_handlers_held
from openwop_cli.runtime.processname import identity

ENV_ADDRESS = "WOP_SINK"
ENV_GATE = "WOP_GATE"  # set for a child started before its capture was ready: it waits for the parent's go
SEND_BATCH_BYTES = 64 * 1024
MAX_QUEUED_BYTES = 8 * 1024 * 1024  # beyond this the program waits for the parent: memory stays bounded
COLLECTOR_NICENESS = 10  # where SCHED_IDLE is refused: see _yield_to_recorded_processes
_time_ns = time.time_ns  # the real clock (imported before the program's clock reads are patched: runtime.bootstrap)
FRAME_MARK = b"\x00"  # starts a frame of raw pieces (see the module docstring)
SENT_MARK = b"@"  # starts the line saying when a batch was sent (see the module docstring)
_FRAME_HEADER = 5  # the mark and the length
_LATER_BYTES = 512  # what a raw or emit_later event adds to the size it is given (its envelope, origin, headers)
BYTES_MARKER = b'"$bytes"'  # jsonable.BYTES_TAG as it appears in a line (jsonable loads orjson)
MAX_SOCKET_PATH = 103  # bytes a unix socket's path may have everywhere (sun_path: 108 on Linux, 104 on macOS)


def _connect(address: str) -> socket.socket:
    scheme, _, where = address.partition(":")
    if scheme == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(where)
        return sock
    if scheme == "tcp":
        return socket.create_connection(tcp_address(address))  # type: ignore[arg-type]
    raise ValueError(f"{ENV_ADDRESS} must be unix:PATH or tcp:HOST:PORT, got {address!r}")


def wait_for_go(address: str) -> None:
    """Ask `wop` whether the capture is ready and wait for its answer, on a connection of this call's own: what a
    process started before then (ENV_GATE) does in its bootstrap before anything of its program runs. OSError when
    `wop` cannot be reached or closes the connection unanswered (it failed, or was killed)."""
    with _connect(address) as sock:
        sock.sendall(b'{"ready": true}\n')
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = sock.recv(64)
            if not chunk:
                raise ConnectionError(f"`wop` at {address} closed the connection")
            reply += chunk


def tcp_address(address: str) -> tuple[str, int] | None:
    """(host, port) of a `tcp:HOST:PORT` channel address; None for a unix socket."""
    if not address.startswith("tcp:"):
        return None
    host, _, port = address[4:].rpartition(":")
    return host, int(port)


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
                    return _as_builtin(value)

            _pickler = PlainValues
        chunks = _Chunks()
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
        program's signal handlers wait for the load (runtime.heldsignals)."""
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
            from openwop_cli.runtime.jsonable import dumps
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
        self._send_queued(_control_line(message))

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a control message after the queued events and wait for the parent's one-line answer."""
        import json

        with self._send_lock:
            self._send_taken(_control_line(message))
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
                head.append(_control_line({"hello": process_info()}))
            if not self._identity_told:  # known once this process runs its multiprocessing.Process
                told = identity()
                if told is not None:
                    head.append(_control_line({"mpIdentity": told}))
                    self._identity_told = True
            self._sock.sendall(b"".join([b"@%d\n" % _time_ns(), *head, *lines]))
        except OSError as exc:
            self._broken = True
            print(f"wop: lost the connection to `wop capture` ({exc}); later events are not recorded", file=sys.stderr)


def _lost_event(exc: Exception) -> bytes:
    """Warn that an event could not be made (a bug in wop) and stand in for it with nothing."""
    print(f"wop: could not record an event ({type(exc).__name__}: {exc})", file=sys.stderr)
    return b""


def _yield_to_recorded_processes(thread: int, yielding: bool) -> None:
    """Run a thread (its native id) only on otherwise idle cores (Linux's SCHED_IDLE, per thread; nice 10 where that is
    refused): the collector builds and writes events in the time the recorded processes and the servers they talk
    to leave free, and where they keep the cores busy their events wait in the channel (bounded by the senders'
    MAX_QUEUED_BYTES). At nice 10 it still took the core a loopback server needed: an httpx call under capture
    took 378 us against 325 plain, 363 at SCHED_IDLE, 359 with the collector doing nothing. For `wop capture`
    only: a replay's collector also answers the replayed program, which a lagging collector would keep waiting
    (a served call cost 16.5 us instead of 12.5 at 10,000 recorded calls, bench_replay). yielding False: back to
    the usual priority once the program has ended (what is left is on the way to the capture's end; a process
    without the privilege to raise its nice value back keeps nice 10)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        os.sched_setscheduler(thread, os.SCHED_IDLE if yielding else os.SCHED_OTHER, os.sched_param(0))
    except (AttributeError, OSError):
        try:
            os.setpriority(os.PRIO_PROCESS, thread, COLLECTOR_NICENESS if yielding else 0)
        except OSError:
            pass


def take_messages(pending: bytearray) -> tuple[list[tuple[bool, bytes]], int, int]:
    """The whole messages at the start of pending, removed from it, as (is a frame, its line or its payload); with
    how many bytes pending must hold before the incomplete frame it then starts with is whole (0: none), and how
    many lines were cut by a frame (no sender writes one: they are dropped)."""
    messages: list[tuple[bool, bytes]] = []
    start, size, awaiting, torn = 0, len(pending), 0, 0
    while start < size:
        if pending[start] == 0:
            if size - start < _FRAME_HEADER:
                awaiting = _FRAME_HEADER
                break
            end = start + _FRAME_HEADER + int.from_bytes(pending[start + 1:start + _FRAME_HEADER], "big")
            if end > size:
                awaiting = end - start
                break
            messages.append((True, bytes(pending[start + _FRAME_HEADER:end])))
            start = end
            continue
        mark = pending.find(FRAME_MARK, start)
        last = pending.rfind(b"\n", start, size if mark < 0 else mark)
        if last < 0:
            if mark < 0:
                break  # the rest of the line is still to come
            torn += 1
            start = mark
            continue
        messages.extend((False, line) for line in bytes(pending[start:last + 1]).splitlines())
        start = last + 1
    del pending[:start]
    return messages, awaiting, torn


_pickler: Any = None
_unpickler: Any = None


class _Chunks(list):
    """A pickler's file that keeps what it writes as it is (io.BytesIO would copy it in, and again out)."""

    write = list.append


def _frame_entries(payload: bytes) -> Iterator[Any]:
    """The entries of a frame's pickles (lists of entries), loaded with builtin values only: a class or function
    named in one is refused."""
    global _unpickler
    import io
    import pickle

    if _unpickler is None:
        class BuiltinsOnly(pickle.Unpickler):
            def find_class(self, module: str, name: str) -> Any:
                if module == "builtins" and name in _EXACT:
                    return _EXACT[name]
                raise pickle.UnpicklingError(f"a frame names {module}.{name}: only builtin values are accepted")

        _unpickler = BuiltinsOnly
    stream = io.BytesIO(payload)
    while stream.tell() < len(payload):
        entries = _unpickler(stream).load()  # an unpickler of its own: each pickle numbers its memo from 0
        if type(entries) is not list:
            raise ValueError("a frame's pickle is not a list of entries")
        yield from entries


def _as_builtin(value: Any) -> Any:
    """How a frame's pickler writes a value of a subclass of str, bytes, int or float (a StrEnum header, a URL of a
    str subclass): as the builtin value it holds, taken back by _EXACT on the other side. Anything else is pickled
    pickle's own way (and a class it names is refused there, with its frame)."""
    for kind, plain in _PLAIN.items():
        if isinstance(value, kind):
            return kind, (plain(value),)
    return NotImplemented


def _exactly(kind: type) -> Callable[[Any], Any]:
    """What a frame's loader calls for builtins.<kind>: the value itself, when it is exactly one (as _as_builtin
    writes it); anything else (bytes(10**12), a stranger's int("…")) is a malformed frame."""
    def taken(value: Any) -> Any:
        if type(value) is not kind:
            import pickle

            raise pickle.UnpicklingError(f"a frame makes a {kind.__name__} of a {type(value).__name__}")
        return value

    return taken


_PLAIN = {str: str.__str__, bytes: bytes.__bytes__, int: int.__int__, float: float.__float__}
_EXACT = {kind.__name__: _exactly(kind) for kind in _PLAIN}


def _control_line(message: dict[str, Any]) -> bytes:
    """A control message (hello, modules, uncaught) as a line; stdlib json keeps orjson unloaded."""
    import json

    return json.dumps(message, default=repr).encode() + b"\n"


def process_info() -> dict[str, Any]:
    """Who is speaking: pid, parent pid, interpreter and argv of this process."""
    return {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "argv": sys.argv,
    }


class Listener:
    """The channel's listening socket, in a private temporary directory (a unix socket; TCP on 127.0.0.1 where there
    is none). Made before the collector that serves it, so a child can be started while the parent gets ready:
    what the child sends waits in the socket."""

    def __init__(self) -> None:
        import tempfile

        self._dir = tempfile.mkdtemp(prefix="wop-")
        if hasattr(socket, "AF_UNIX"):
            path = os.path.join(self._dir, "sink")
            if len(os.fsencode(path)) > MAX_SOCKET_PATH and os.path.isdir("/tmp"):  # a long TMPDIR
                os.rmdir(self._dir)
                self._dir = tempfile.mkdtemp(prefix="wop-", dir="/tmp")
                path = os.path.join(self._dir, "sink")
            self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.socket.bind(path)
            self.address = f"unix:{path}"
        else:
            self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.socket.bind(("127.0.0.1", 0))
            self.address = f"tcp:127.0.0.1:{self.socket.getsockname()[1]}"
        self.socket.listen(64)
        self.socket.setblocking(False)

    def remove(self) -> None:
        """Close the socket and remove it and its directory."""
        self.socket.close()
        for remove, path in ((os.unlink, os.path.join(self._dir, "sink")), (os.rmdir, self._dir)):
            try:
                remove(path)
            except OSError:
                pass


class Collector:
    """The parent's end: accepts any number of processes and appends their events to one sink.

    `append` is called from the collector's thread, per connection in the order sent (or
    `append_raw(type, data_json, ts=, origin_json=, source_seq=)` when given: no re-parsing); what several
    connections sent before one reading is merged by each event's ts, so a process's events come before those
    another process recorded after it ended (see _handle_round). Messages
    that are not events (hello, modules) go to `on_message` with the sender's pid; what it returns,
    if anything, is sent back as the answer. `on_idle` runs
    whenever everything readable has been handled (the launcher flushes the sink there, so a
    killed `wop capture` leaves every event it had received on disk).
    """

    def __init__(
        self,
        append: Callable[..., Any],
        on_message: Callable[[int | None, dict[str, Any]], dict[str, Any] | None],
        on_idle: Callable[[], None] = lambda: None,
        append_raw: Callable[..., Any] | None = None,
        listener: "Listener | None" = None,
        yield_cores: bool = False,
    ) -> None:
        """yield_cores: the collector runs at a lower priority (see _yield_to_recorded_processes)."""
        import heapq
        import selectors
        from operator import itemgetter

        import orjson

        from openwop_cli.runtime.jsonable import dumps, revive_bytes

        self._loads, self._dumps, self._revive_bytes = orjson.loads, dumps, revive_bytes
        self._merge = heapq.merge
        self._recorded_at = itemgetter(0)  # what _received lists: (when recorded, handler, its arguments)
        self._raw_exchanges: Any = None  # adapters.exchange.RawExchanges, on the first frame
        self._append = append
        self._append_raw = append_raw
        self._yield_cores = yield_cores
        self._on_message = on_message
        self._on_idle = on_idle
        self._listener = listener or Listener()
        self.address = self._listener.address
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._readable = selectors.EVENT_READ
        self._selector.register(self._listener.socket, self._readable, "accept")
        self._selector.register(self._wake_read, self._readable, "wake")
        self._pending: dict[socket.socket, bytearray] = {}
        self._awaiting: dict[socket.socket, int] = {}  # bytes pending must hold before an incomplete frame is whole
        self._pids: dict[socket.socket, int | None] = {}
        self._sent: dict[socket.socket, int] = {}  # when the batch being read was sent (its SENT_MARK line)
        self._stop_at: float | None = None
        self.torn_messages = 0
        self.bad_messages = 0
        self.left_running: list[int | None] = []
        self._thread = threading.Thread(target=self._serve, name="wop-collector", daemon=True)

    def start(self) -> None:
        """Serve connections on a background thread."""
        self._thread.start()

    def stop(self, grace_seconds: float) -> None:
        """Read until every connection has closed, or grace_seconds have passed; then stop. The program has ended:
        what it sent is all that is left to do, and now urgent, so a collector that yielded the cores stops
        yielding them (from this thread: at SCHED_IDLE on a busy machine, its own might not run for long)."""
        if self._yield_cores and self._thread.native_id is not None:
            _yield_to_recorded_processes(self._thread.native_id, False)
        self._stop_at = time.monotonic() + grace_seconds
        self._wake_write.send(b"x")
        self._thread.join()
        self._wake_read.close()
        self._wake_write.close()
        self._listener.remove()

    def _serve(self) -> None:
        if self._yield_cores:
            _yield_to_recorded_processes(threading.get_native_id(), True)
        stopping = False
        while True:
            timeout = None
            if self._stop_at is not None:
                if not stopping:
                    stopping = True
                    self._accept_waiting()
                timeout = self._stop_at - time.monotonic()
                if not self._pending or timeout <= 0:
                    break
            ready = []
            for key, _ in self._selector.select(timeout):
                if key.data == "wake":
                    self._wake_read.recv(64)
                elif key.data == "conn":
                    ready.append(key.fileobj)
            self._handle_round([*ready, *self._accept_waiting()])
            self._on_idle()
        self._shut_down()

    def _accept_waiting(self) -> list[socket.socket]:
        """Accept every connection waiting in the listener's backlog (a process that connected, sent its events and
        ended before this thread ran: at SCHED_IDLE on a busy machine it may not run for long)."""
        accepted = []
        while (conn := self._accept()) is not None:
            accepted.append(conn)
        return accepted

    def _accept(self) -> socket.socket | None:
        try:
            conn, _ = self._listener.socket.accept()
        except BlockingIOError:
            return None
        conn.setblocking(False)
        self._pending[conn] = bytearray()
        self._pids[conn] = None
        self._selector.register(conn, self._readable, "conn")
        return conn

    def _handle_round(self, conns: list[socket.socket]) -> None:
        """Handle what conns have sent, merged by the time each event was recorded: each process's messages stay in
        the order it sent them, and the events of a process that ended before another recorded one (a child its
        parent waited for) come first, whichever connection is read first. Events recorded in the same millisecond
        go in the order they were sent: a child sends what it has before it ends, its parent what it recorded after
        waiting for it only later, and what it recorded before starting it before it does."""
        streams = [stream for stream in map(self._received, conns) if stream]
        merged = streams[0] if len(streams) == 1 else self._merge(*streams, key=self._recorded_at)
        for _, handle, args in merged:
            handle(*args)

    def _received(self, conn: socket.socket) -> list[tuple[tuple[int, int], Callable[..., None], tuple]]:
        """The whole messages conn has sent since last read, as ((ts, when sent), handler, its arguments): an event's
        ts, and a control message the ts of the event before it (so it keeps its place)."""
        try:
            chunk = conn.recv(1 << 20)
        except BlockingIOError:
            return []
        except OSError:
            chunk = b""
        pending = self._pending[conn]
        if not chunk:
            if pending:
                self.torn_messages += 1
            self._drop(conn)
            return []
        pending += chunk
        if len(pending) < self._awaiting.get(conn, 0):
            return []  # the rest of a frame is still to come
        messages, self._awaiting[conn], torn = take_messages(pending)
        self.torn_messages += torn
        received: list[tuple[tuple[int, int], Callable[..., None], tuple]] = []
        ts, sent = 0, self._sent.get(conn, 0)
        for is_frame, message in messages:
            if is_frame:
                for event in self._frame_events(message):
                    ts = event[1]
                    received.append(((ts, sent), self._deliver_sent, event))
            elif message.startswith(b"{"):
                received.append(((ts, sent), self._handle, (conn, message)))
            elif message.startswith(SENT_MARK):
                sent = self._sent_at(message, sent)
            elif (event := self._event_line(message)) is not None:
                ts = event[1]
                received.append(((ts, sent), self._deliver_sent, event))
        self._sent[conn] = sent
        return received

    def _sent_at(self, line: bytes, before: int) -> int:
        """When a batch was sent, from its SENT_MARK line (before: one no wop sends, counted)."""
        try:
            return int(line[1:])
        except ValueError:
            self.bad_messages += 1
            return before

    def _handle(self, conn: socket.socket, line: bytes) -> None:
        """A control message (hello, modules, a question): to on_message, and its answer, if any, back to conn."""
        try:
            message = self._loads(line)
        except ValueError:
            self.torn_messages += 1
            return
        if type(message) is dict:
            hello = message.get("hello")
            if type(hello) is dict:
                self._pids[conn] = hello.get("pid")
            reply = self._on_message(self._pids[conn], message)
            if reply is not None:
                self._answer(conn, reply)

    def _event_line(self, line: bytes) -> tuple[str, int, bytes, bytes, int | None] | None:
        """(type, ts, origin JSON, data JSON, source seq) of an event line; None, counted, for one no wop sends."""
        parts = line.split(b"\t")
        if len(parts) != 5:
            self.torn_messages += 1
            return None
        kind, ts, origin, data, source = parts
        try:
            return kind.decode(), int(ts), origin, data, int(source) if source else None
        except ValueError:
            self.bad_messages += 1
            return None

    def _frame_events(self, payload: bytes) -> list[tuple[str, int, bytes, bytes, None]]:
        """The events a frame of raw pieces (ChannelSender.queue_raw) holds, each entry built into its event as if
        sent as one; an entry wop cannot build an event from is counted and skipped."""
        if self._raw_exchanges is None:
            from openwop_cli.runtime.adapters.exchange import RawExchanges

            self._raw_exchanges = RawExchanges()
        events: list[tuple[str, int, bytes, bytes, None]] = []
        entries = _frame_entries(payload)
        while True:
            try:
                entry = next(entries)
            except StopIteration:
                return events
            except Exception:  # not pickles, or ones naming a class: nothing any wop sends; the rest is lost with it
                self.bad_messages += 1
                return events
            built = self._raw_event(entry)
            if built is None:
                self.bad_messages += 1
                continue
            events.append((*built, None))

    def _raw_event(self, entry: Any) -> tuple[str, int, bytes, bytes] | None:
        """(type, ts, origin JSON, data JSON) of the event a frame's entry is the raw pieces of; None when wop cannot
        build one from it (pieces no wop sends, an answer to no request, or a bug in wop: one event lost)."""
        try:
            kind, ts, origin, pieces, body = entry
            if type(kind) is not str or type(ts) is not int or type(body) is not bytes or (
                    origin is not None and type(origin) is not bytes):
                return None
            event = self._raw_exchanges.event(kind, pieces, body, origin)
            if event is None:
                return None
            return event[0], ts, self._dumps(event[2]), self._dumps(event[1])
        except Exception:
            return None

    def _deliver_sent(self, event_type: str, ts: int, origin: bytes, data: bytes, source_seq: int | None) -> None:
        """_deliver an event a process sent; one whose data is not what wop sends is counted and skipped."""
        try:
            self._deliver(event_type, ts, origin, data, source_seq)
        except (TypeError, ValueError):
            self.bad_messages += 1

    def _deliver(self, event_type: str, ts: int, origin: bytes, data: bytes, source_seq: int | None) -> None:
        """Append an event whose data and origin are JSON bytes (spliced into the line, unless it holds bytes)."""
        if self._append_raw is not None and BYTES_MARKER not in data:
            self._append_raw(event_type, data, ts=ts, origin_json=origin, source_seq=source_seq)
            return
        payload = self._loads(data)
        if BYTES_MARKER in data:
            payload = self._revive_bytes(payload)
        self._append(event_type, payload, ts=ts, origin=self._loads(origin), source_seq=source_seq)

    def _answer(self, conn: socket.socket, reply: dict[str, Any]) -> None:
        import orjson

        conn.setblocking(True)
        try:
            conn.sendall(orjson.dumps(reply) + b"\n")
        except OSError:
            pass
        finally:
            conn.setblocking(False)

    def _drop(self, conn: Any) -> None:
        self._selector.unregister(conn)
        conn.close()
        del self._pending[conn]
        del self._pids[conn]
        self._awaiting.pop(conn, None)
        self._sent.pop(conn, None)

    def _shut_down(self) -> None:
        self.left_running = [self._pids[conn] for conn in self._pending]
        for conn in list(self._pending):
            self._drop(conn)
        self._selector.unregister(self._listener.socket)
        self._listener.socket.close()
        self._selector.close()
