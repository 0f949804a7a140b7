"""The `wop` process's end of the wire (wire.channel): it accepts any number of recorded processes and hands their
events, in order, to the capture's sink.

The parent alone assigns seq and writes the capture, so concurrent processes can never interleave bytes in
events.jsonl, and building HTTP events (runtime.adapters.exchange.RawExchanges), redaction, disk I/O and the LLM
requests' cache keys happen outside the recorded program.
"""

import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from openwop_cli.wire.channel import (
    BYTES_MARKER,
    MAX_SOCKET_PATH,
    SENT_MARK,
    frame_entries,
    take_messages,
)

COLLECTOR_NICENESS = 10  # where SCHED_IDLE is refused: see _yield_to_recorded_processes


def _yield_to_recorded_processes(thread: int, yielding: bool) -> None:
    """Run a thread (its native id) only on otherwise idle cores (Linux's SCHED_IDLE, per thread; nice 10 where that is
    refused): the collector builds and writes events in the time the recorded processes and the servers they talk
    to leave free, and where they keep the cores busy their events wait in the channel (bounded by the senders'
    MAX_QUEUED_BYTES). At nice 10 it still took the core a loopback server needed: an httpx call under capture
    took 378 us against 325 plain, 363 at SCHED_IDLE, 359 with the collector doing nothing. For `wop capture`
    only: a replay's collector also answers the replayed program, which a lagging collector would keep waiting
    (a served call cost 16.5 us instead of 12.5 at 10,000 recorded calls, bench_replay). The collector yields once
    it has handled a first message: that one may be a gated process asking for its go (ENV_GATE), which the whole
    program waits for. yielding False: back to the usual priority once the program has ended (what is left is on the
    way to the capture's end; a process without the privilege to raise its nice value back keeps nice 10)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        os.sched_setscheduler(thread, os.SCHED_IDLE if yielding else os.SCHED_OTHER, os.sched_param(0))
    except (AttributeError, OSError):
        try:
            os.setpriority(os.PRIO_PROCESS, thread, COLLECTOR_NICENESS if yielding else 0)
        except OSError:
            pass


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

        from openwop_cli.wire.jsonable import dumps, revive_bytes

        self._loads, self._dumps, self._revive_bytes = orjson.loads, dumps, revive_bytes
        self._merge = heapq.merge
        self._recorded_at = itemgetter(0)  # what _received lists: (when recorded, handler, its arguments)
        self._raw_exchanges: Any = None  # adapters.exchange.RawExchanges, on the first frame
        self._raw_frames: Any = None  # adapters.websockets_adapter.RawFrames, on the first frame
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
        self._priority_lock = threading.Lock()  # stop's return to the usual priority never precedes the yield
        self._yielding = False
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
        with self._priority_lock:
            self._stop_at = time.monotonic() + grace_seconds
            if self._yield_cores and self._thread.native_id is not None:
                _yield_to_recorded_processes(self._thread.native_id, False)
        self._wake_write.send(b"x")
        self._thread.join()
        self._wake_read.close()
        self._wake_write.close()
        self._listener.remove()

    def _serve(self) -> None:
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
            if self._yield_cores and not self._yielding:
                self._yield()

    def _yield(self) -> None:
        """Run on idle cores from now on (_yield_to_recorded_processes), unless stop came first: after the first
        control message, a gated process's question for its go (answered by now) or another's hello."""
        self._yielding = True
        with self._priority_lock:
            if self._stop_at is None:
                _yield_to_recorded_processes(threading.get_native_id(), True)

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
            from openwop_cli.runtime.adapters.websockets_adapter import RawFrames

            self._raw_exchanges, self._raw_frames = RawExchanges(), RawFrames()
        events: list[tuple[str, int, bytes, bytes, None]] = []
        entries = frame_entries(payload)
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
            event = (self._raw_frames if kind in self._raw_frames.KINDS else self._raw_exchanges).event(
                kind, pieces, body, origin)
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
