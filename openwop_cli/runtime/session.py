"""The recording session of this process: which mode it is in and where its events go.

A process has at most one active session. It comes from the environment (WOP_MODE, read once, on
first use) or from `wop.capture(...)`. With no session, every SDK call is a plain pass-through.

Events go either to the `wop capture` parent over the channel (WOP_SINK) or, for library use and
WOP_MODE=capture without a parent, to a CaptureSink in this process.
"""

import atexit
import contextvars
import itertools
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime.callsite import program_site
from openwop_cli.runtime.lineage import running_pool_task, task_name
from openwop_cli.wire.environ import ENV_CAPTURE_DIR, ENV_MODE, ENV_PARENT_PID

MODES = ("off", "capture", "replay", "fork")
SITED_EVENTS = frozenset({"llm_request", "tool_call", "nondeterministic", "state_mutation"})
_time_ns = time.time_ns  # the real clock, whatever the program's clock reads are patched to
_running_threads: dict[int, threading.Thread] = threading._active  # type: ignore[attr-defined]  # by ident
_thread_ident = threading.get_ident
_RAW_ORIGINS_KEPT = 1024  # a program of ever new asyncio tasks starts over now and then


class Session:
    """One process's recording: assigns call ids, stamps time and origin, hands events to a recorder."""

    def __init__(self, recorder: Any, mode: str = "capture") -> None:
        """recorder: where events go; it has emit(type, data, ts, origin, source_seq), emit_later(build, args, ts,
        origin, size) (see record_later) and flush(); and queue_raw(entry, size) when it sends raw pieces (sends_raw:
        see record_raw).

        In a replay, `replayer` (set by openwop_cli.replay) answers every boundary from the capture.
        """
        self.mode = mode
        self.recorder = recorder
        self.sends_raw: bool = getattr(recorder, "sends_raw", False)
        self.replayer: Any = None
        self.pid = os.getpid()
        self._id_prefix = "" if started_by_wop() else f"p{self.pid}."
        self._counter = itertools.count(1)
        self._raw_origins: dict[tuple, tuple[Any, bytes]] = {}  # raw_origin's, by where and id(site)

    def record(self, event_type: str, data: dict[str, Any], source_seq: int | None = None,
               site: dict[str, Any] | None = None, ts: int | None = None) -> None:
        """Record one event made by the calling thread/task (source_seq: the recorded event it replays; ts: its
        epoch-ms time when the data already carries it, else now).

        A request event's origin also names its call site: `site`, else the first frame in the program's code.
        """
        origin = self.origin()
        if site is None and event_type in SITED_EVENTS:
            site = program_site(2)
        if site is not None:
            origin["site"] = site
        self.recorder.emit(event_type, data, _time_ns() // 1_000_000 if ts is None else ts, origin, source_seq)

    def record_later(self, build: Callable[..., tuple[str, dict[str, Any]]], args: tuple, *, size: int,
                     origin: dict[str, Any] | None = None, site: dict[str, Any] | None = None) -> dict[str, Any]:
        """Record one event made by the calling thread whose type and data `build(*args)` returns later, off this
        thread (by the channel's sender, as it sends the event). The call pays here only for its time and origin.
        args and what build reads must not change afterwards; size: about how many bytes the event holds (the sender
        counts its batches in bytes). origin: the event's, when the caller knows it (an answer recorded by the call
        that recorded its request); site: a request's call site (callsite.program_site, which the caller looks for
        from where it knows the program's frames start). Returns the origin recorded without its site, which that
        answer shares (a dict nobody changes afterwards).
        """
        if origin is None:
            origin = self.origin()
        recorded = origin if site is None else {**origin, "site": site}
        self.recorder.emit_later(build, args, _time_ns() // 1_000_000, recorded, size)
        return origin

    def record_raw(self, kind: str, pieces: tuple, body: bytes, *, site: dict[str, Any] | None = None,
                   answer: bool = False, size: int | None = None) -> None:
        """record_later for a recorder that sends raw pieces (sends_raw: the channel to `wop capture`, which builds
        the event from them: adapters.exchange.RawExchanges, and websockets_adapter.RawFrames for websocket frames):
        kind and pieces as those read them, body bytes.
        The entry's origin is the calling thread's as JSON (raw_origin), or None for the answer of a request this
        thread recorded raw (answer: by the call that sent it), which has that request's origin without its site.
        size: about how many bytes the pieces hold, when not the body's."""
        origin = None if answer else self.raw_origin(site)
        self.recorder.queue_raw((kind, _time_ns() // 1_000_000, origin, pieces, body),
                                len(body) if size is None else size)

    def raw_origin(self, site: dict[str, Any] | None) -> bytes:
        """origin() with site as JSON, remembered by what it holds (a program calls from a few threads, tasks and
        sites): the channel pickles one bytes object, not the 13 objects of a dict holding a site's."""
        where = self._where()
        key = (*where, id(site))
        known = self._raw_origins.get(key)
        if known is None or known[0] is not site:  # new (or a dead site's id reused)
            from openwop_cli.wire.jsonable import dumps

            origin = self._origin_of(where)
            if site is not None:
                origin["site"] = site
            if len(self._raw_origins) >= _RAW_ORIGINS_KEPT:
                self._raw_origins.clear()
            known = self._raw_origins[key] = (site, dumps(origin))
        return known[1]

    def new_call_id(self, kind: str) -> str:
        """A call id unique in the capture and stable from run to run (a counter, not a random id)."""
        return new_call_id(kind, self.new_call_number())

    def new_call_number(self) -> tuple[str, int]:
        """The next call's place in the count, with this process's prefix: new_call_id(kind, it) names the call
        once its kind is known (an HTTP exchange's, when its request is built)."""
        return self._id_prefix, next(self._counter)

    def origin(self) -> dict[str, Any]:
        """The process, thread, pool task and asyncio task making the current call (a new dict: `record` adds the
        site)."""
        return self._origin_of(self._where())

    def _where(self) -> tuple[str, str | None, str | None]:
        """The current call's thread, pool task and asyncio task (None outside one) names, as origin() has them: the
        stable names of runtime.lineage."""
        thread = _running_threads.get(_thread_ident())  # threading.current_thread() and its name, without two calls
        if thread is None:
            thread = threading.current_thread()
        name = thread.__dict__.get("_wop_lineage") or thread._name
        pool_task = running_pool_task.name
        asyncio = sys.modules.get("asyncio")
        if asyncio is None or asyncio._get_running_loop() is None:
            return name, pool_task, None
        task = asyncio.current_task()
        if task is None:
            return name, pool_task, None
        return name, pool_task, task_name(task)

    def _origin_of(self, where: tuple[str, str | None, str | None]) -> dict[str, Any]:
        thread, pool_task, task = where
        origin: dict[str, Any] = {"pid": self.pid, "thread": thread}
        if pool_task is not None:
            origin["poolTask"] = pool_task
        if task is not None:
            origin["task"] = task
        return origin

    def flush(self) -> None:
        """Make every event recorded so far durable (before slow or risky calls)."""
        self.recorder.flush()

    def after_fork(self) -> "Session | None":
        """The session a forked child continues with (None when its events cannot be told apart)."""
        reconnect = getattr(self.recorder, "reconnect_after_fork", None)
        if reconnect is None:
            return None
        reconnect()
        self.pid = os.getpid()
        self._id_prefix = f"p{self.pid}."
        self._raw_origins = {}
        return self


class AppendRecorder:
    """A session's events handed to an append function: a CaptureSink's (library use, the proxy)."""

    def __init__(self, append: Any, flush: Any = lambda: None) -> None:
        self._append = append
        self.flush = flush

    def emit(self, event_type: str, data: dict[str, Any], ts: int, origin: dict[str, Any],
             source_seq: int | None = None) -> None:
        from openwop_cli.wire.jsonable import to_json

        data = to_json(data)
        if event_type == "llm_request":
            from openwop_cli.runtime.providers import with_request_keys

            data = with_request_keys(data)
        self._append(event_type, data, ts=ts, origin=origin, source_seq=source_seq)

    def emit_later(self, build: Callable[..., tuple[str, dict[str, Any]]], args: tuple, ts: int,
                   origin: dict[str, Any], size: int) -> None:
        event_type, data = build(*args)
        self.emit(event_type, data, ts, origin)


def new_call_id(kind: str, number: tuple[str, int]) -> str:
    """The call id of a call of kind (`llm`, `h`, `t`) numbered by Session.new_call_number."""
    prefix, count = number
    return f"{prefix}{kind}{count}"


_inside_boundary: contextvars.ContextVar[bool] = contextvars.ContextVar("wop_inside_boundary", default=False)


def inside_boundary() -> bool:
    """True while a recorded boundary (wop.llm_call, @wop.tool, an HTTP adapter) is open in this thread or
    task: whatever happens below it is part of that one unit, so it records (and replays) nothing of its own."""
    return _inside_boundary.get()


def enter_boundary() -> contextvars.Token:
    """Mark a boundary open in this thread/task; pass the token to `exit_boundary` when it closes."""
    return _inside_boundary.set(True)


def exit_boundary(token: contextvars.Token) -> None:
    """Close the boundary `enter_boundary` opened."""
    try:
        _inside_boundary.reset(token)
    except ValueError:  # closed from another context (a generator finalized elsewhere): just mark it closed
        _inside_boundary.set(False)


class _Unresolved:
    pass


UNRESOLVED: Any = _Unresolved()
_state: dict[str, Any] = {"session": UNRESOLVED, "stack": []}
_activation_lock = threading.RLock()


def current() -> Session | None:
    """The active session, resolving it from the environment on first use."""
    session = _state["session"]
    if session is UNRESOLVED:
        with _activation_lock:
            if _state["session"] is UNRESOLVED:
                _state["session"] = session_from_environment()
            session = _state["session"]
    return session


def activate(session: Session) -> None:
    """Make session the active one until `deactivate` (nesting restores the previous one)."""
    with _activation_lock:
        _state["stack"].append(_state["session"])
        _state["session"] = session


def install(session: Session) -> None:
    """Make session this process's session for good (what `wop replay` does in its child)."""
    with _activation_lock:
        _state["session"] = session


def deactivate(session: Session) -> None:
    """Undo the matching `activate`."""
    with _activation_lock:
        if _state["session"] is session and _state["stack"]:
            _state["session"] = _state["stack"].pop()


def session_from_environment() -> Session | None:
    """The session WOP_MODE asks for, or None (also, with a warning, when it cannot be set up)."""
    mode = os.environ.get(ENV_MODE, "off") or "off"
    if mode == "off":
        return None
    if mode not in MODES:
        _warn(f"{ENV_MODE}={mode!r} is not one of {', '.join(MODES)}; not recording")
        return None
    if mode in ("replay", "fork"):
        _warn(f"WOP_MODE={mode} needs the runtime `wop {mode}` installs at start-up; running live and unrecorded")
        return None
    from openwop_cli.runtime.sender import ChannelSender
    from openwop_cli.wire.channel import ENV_ADDRESS

    address = os.environ.get(ENV_ADDRESS)
    if address:
        try:
            sender = ChannelSender(address)
        except OSError as exc:
            _warn(f"cannot reach `wop capture` at {address} ({exc}); not recording")
            return None
        attach_channel(sender)
        return Session(sender)
    capture_dir = os.environ.get(ENV_CAPTURE_DIR)
    if not capture_dir:
        _warn(f"{ENV_MODE}=capture needs {ENV_CAPTURE_DIR} (or run the program with `wop capture -- …`)")
        return None
    if _standalone[0] is None:
        _warn(f"{ENV_MODE}=capture with {ENV_CAPTURE_DIR} records through the SDK (`import openwop_cli`); not recording")
        return None
    return _standalone[0](capture_dir)


def register_standalone(writer: Callable[[str], "Session | None"]) -> None:
    """How this process writes a capture itself (runtime.inprocess_capture.standalone_capture, registered when it is
    imported: `import openwop_cli` brings it with the SDK), for WOP_MODE=capture without a `wop` parent."""
    _standalone[0] = writer


_standalone: list[Any] = [None]


def attach_channel(sender: Any) -> None:
    """Wire a channel sender into this process: close at exit, note which multiprocessing.Process it runs, flush
    before new processes, before messages to other processes and before an os._exit, report a crash."""
    from openwop_cli.runtime.imports import when_imported
    from openwop_cli.runtime.processname import (
        carry_identity,
        note_forks,
        note_started_processes,
        when_identified,
        when_started,
    )

    atexit.register(_close_channel, sender)
    note_forks()
    when_identified(lambda: sender.send_message({"running": True}))
    when_started(lambda told, pid: sender.send_message({"startedProcess": {"mpIdentity": told, "pid": pid}}))
    when_imported("multiprocessing.process", note_started_processes)
    when_imported("multiprocessing.spawn", carry_identity)
    _flush_before_new_processes(sender)
    _flush_before_messages(sender)
    _flush_before_hard_exit(sender)
    on_uncaught_exception(lambda exc: sender.send_message({"uncaught": describe_exception(exc)}))


def on_uncaught_exception(callback: Any) -> None:
    """Call callback(exc) when the program dies of an exception, then let Python report it as usual."""
    previous = sys.excepthook

    def hook(kind: Any, exc: BaseException, tb: Any) -> None:
        try:
            callback(exc)
        except Exception:
            pass
        previous(kind, exc, tb)

    sys.excepthook = hook


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """An exception as the capture records it: type, module and message (its str), and what a replay needs to
    raise it again the same — its args, repr and attributes as JSON (see replay.exceptions)."""
    from openwop_cli.runtime.exceptions import exception_data

    return exception_data(exc)


_open_streams: Any = weakref.WeakSet()  # recorded streams the program has not read to their end nor closed


def note_open_stream(stream: Any) -> None:
    """A response stream being recorded as the program reads it (an adapter's), with a `finish(complete)` method that
    records it once: finish_open_streams records it if it is still open when the process ends."""
    _open_streams.add(stream)


def finish_open_streams() -> None:
    """Record what the program read of each stream it still held open as the process ends (as incomplete): a program
    that dies of an exception while reading a stream keeps it open in the traceback, so it is never closed before
    the recording is; its answer was missing from the capture, and a replay could not serve the call."""
    for stream in list(_open_streams):
        try:
            stream.finish(False)
        except Exception:
            pass


def _close_channel(sender: Any) -> None:
    from openwop_cli.runtime.program import local_modules

    finish_open_streams()

    modules = local_modules(os.getcwd())
    if not modules and sender.silent and not started_by_wop():
        return  # a helper process (multiprocessing's resource tracker) with nothing to say
    try:
        sender.send_message({"modules": modules, "ended": True})
        sender.close()
    except OSError:
        pass


def started_by_wop() -> bool:
    """True in the program `wop capture` started (not in a process the program started in turn)."""
    return os.environ.get(ENV_PARENT_PID) in (None, str(os.getppid()))


def _flush_before_new_processes(sender: Any) -> None:
    """Send queued events before this process starts another, so the capture keeps their order."""
    from openwop_cli.runtime.imports import when_imported

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=sender.before_fork)
    when_imported("subprocess", lambda subprocess: _flush_before(subprocess.Popen, "_execute_child", sender))


def _flush_before_messages(sender: Any) -> None:
    """Send queued events before this process sends anything through multiprocessing (a pool worker its result):
    the capture holds them before what the message leads to, and a worker the parent then ends with SIGTERM
    (the end of a `with Pool()` block) has nothing left to lose."""
    from openwop_cli.runtime.imports import when_imported

    def patch(connection: Any) -> None:
        for name in ("Connection", "PipeConnection"):
            if hasattr(connection, name):
                _flush_before(getattr(connection, name), "_send_bytes", sender)

    when_imported("multiprocessing.connection", patch)


def _flush_before(owner: Any, name: str, sender: Any) -> None:
    """owner.name, sending the queued events first (patched once per process)."""
    method = getattr(owner, name, None)
    if method is None or getattr(method, "__wop_flushes__", False):
        return

    def flushing(*args: Any, **kwargs: Any) -> Any:
        sender.flush()
        return method(*args, **kwargs)

    flushing.__wop_flushes__ = True  # type: ignore[attr-defined]
    setattr(owner, name, flushing)


def _flush_before_hard_exit(sender: Any) -> None:
    """os._exit skips atexit, and multiprocessing's forked workers end with it: send what is queued first, and that
    the process ended on its own (not killed: see launcher's `stopped`)."""
    hard_exit = os._exit

    def exit_after_flush(status: int) -> None:
        try:
            if not sender.silent:  # a silent process has nothing queued and is not known to wop
                sender.send_message({"ended": True})
        except Exception:  # the program asked to end now: it ends, recorded or not
            pass
        hard_exit(status)

    os._exit = exit_after_flush


def _after_fork_in_child() -> None:
    session = _state["session"]
    if isinstance(session, Session):
        _state["session"] = session.after_fork()
    _state["stack"] = []


def _warn(message: str) -> None:
    print(f"wop: {message}", file=sys.stderr)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
