"""Inside a process started by `wop replay` or `wop fork`: load the source capture and answer from it.

The child bootstrap calls `install()` when WOP_MODE is replay or fork. The process asks `wop` which
recorded process it stands for (a forked child too), loads that process's units from the source capture, attaches the
engine to its session, serves the clock, uuid and random reads its code makes (when the capture
recorded them) and, for a replay, blocks outbound network. The capture and the engine are loaded when the
program first reaches a recorded boundary.
"""

import json
import os
import threading
from pathlib import Path
from typing import Any

# What install() sets up, loaded with this module: the bootstrap imports it while the process waits for its go, and
# calls install() after it (the capture and the engine wait for the first recorded boundary: _replayer).
from openwop_cli.replay.controls import ReplayControls
from openwop_cli.runtime import adapters, ambient, children, outputmarks, patching
from openwop_cli.runtime import session as runtime_session
from openwop_cli.runtime.connections import proxy_address
from openwop_cli.runtime.netguard import block_network
from openwop_cli.runtime.sender import ChannelSender
from openwop_cli.wire.channel import ENV_ADDRESS, process_info, tcp_address
from openwop_cli.wire.environ import ENV_ALLOW_TOOLS, ENV_FROM_SEQ, ENV_OVERRIDES, ENV_POLICY, ENV_SOURCE


def install() -> None:
    """Set up this process's replay session from the environment `wop replay`/`wop fork` gave it."""
    mode = os.environ["WOP_MODE"]
    controls = ReplayControls.from_environment()
    address = os.environ[ENV_ADDRESS]
    sender = ChannelSender(address)
    sender.request({"replayHello": process_info()})
    session = runtime_session.Session(sender, mode=mode)

    def serve_from_first_use() -> None:
        session.replayer = ReplayerOnFirstUse(session, lambda: _replayer(session, mode, controls, sender))

    serve_from_first_use()
    if hasattr(os, "register_at_fork"):  # a forked child stands for a recorded process of its own
        os.register_at_fork(after_in_child=serve_from_first_use)
    if not controls.verbose:
        _shorten_tracebacks_after_a_stop(session)
    runtime_session.attach_channel(sender)
    runtime_session.install(session)
    adapters.install()
    children.watch()  # a Python child that lost the bootstrap gets it back: it was recorded, it is replayed
    outputmarks.watch_listening()
    patching.install(values=ambient.enabled(default=False))
    if mode == "replay" or controls.offline:
        channel = tcp_address(address)
        block_network({*proxy_address(), *((channel,) if channel else ())},
                      lambda *args, **kwargs: session.replayer.network_blocked(*args, **kwargs),
                      lambda host, port: servable(session.replayer.source, host, port),
                      stopped=lambda: _stopped(session),
                      unrecorded_in_capture=lambda destination: destination in session.replayer.source.unrecorded_connections)


def servable(source: Any, host: str, port: int) -> bool:
    """Whether a replay answers a raw connection to host:port from the capture (its HTTP, which the socket recorder
    kept): when the capture holds calls there, and did not name that destination as a connection it did not
    record. Any other connection is refused at once, naming the destination."""
    names = _LOOPBACK if host in _LOOPBACK else (host,)  # a client resolves localhost to an address itself
    recorded = any(f"{name}:{port}" in source.destinations for name in names)
    return recorded and f"{host}:{port}" not in source.unrecorded_connections


_LOOPBACK = ("localhost", "127.0.0.1", "::1")


class ReplayerOnFirstUse:
    """Stands in for the session's Replayer until the program first reaches a recorded boundary, and then puts the
    real one in its place: a program that reaches none never loads its capture or the replay engine, which cost
    more than a small program's whole run. A fork waits for a build under way in another thread: the child would
    find the lock (and the build's imports) taken for good; and the program's signal handlers wait for a build in the
    main thread (see heldsignals)."""

    def __init__(self, session: Any, build: Any) -> None:
        self._session = session
        self._build = build
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(before=self._lock.acquire, after_in_parent=self._lock.release,
                                after_in_child=self._lock.release)

    def __getattr__(self, name: str) -> Any:
        if self._session.replayer is self:
            from openwop_cli.heldsignals import with_handlers_held

            with_handlers_held(self._build_once)  # the handlers held back then find the replayer built
        return getattr(self._session.replayer, name)

    def _build_once(self) -> None:
        with self._lock:
            if self._session.replayer is self:
                self._session.replayer = self._build()


def _stopped(session: Any) -> bool:
    """True once a strict replay has stopped this process's program."""
    replayer = built_replayer(session)
    return replayer is not None and replayer.engine.stopped is not None


def built_replayer(session: Any) -> Any:
    """The session's Replayer if the program has reached a boundary yet, else None."""
    replayer = session.replayer
    return None if isinstance(replayer, ReplayerOnFirstUse) else replayer


def _replayer(session: Any, mode: str, controls: Any, sender: Any) -> Any:
    """The Replayer serving this process: the units of the recorded process `wop` pairs it with (asked now, when its
    multiprocessing identity is known), loaded from the source capture. A capture that cannot be loaded ends the
    process: running on would reach the network."""
    import sys

    from openwop_cli.replay.engine import ReplayEngine
    from openwop_cli.replay.source import ReplaySource
    from openwop_cli.runtime.boundaries import Replayer
    from openwop_cli.runtime.debugger import ReplayDebugger
    from openwop_cli.runtime.processname import identity

    try:
        pair = sender.request({"replayPair": {**process_info(), "mpIdentity": identity()}})
        recorded_pid = pair.get("recordedPid")
        source = ReplaySource.for_serving(Path(os.environ[ENV_SOURCE]), only_pid=recorded_pid)
        source.set_edits(list(controls.edits))
        engine = ReplayEngine(
            source,
            policy=os.environ.get(ENV_POLICY, "strict"),
            from_seq=int(os.environ.get(ENV_FROM_SEQ, "0")),
            branch=mode == "fork",
            overrides=json.loads(os.environ.get(ENV_OVERRIDES, "{}")),
            live_after_mismatch=bool(controls.edits),
        )
    except Exception as exc:
        print(f"wop: could not load the capture to {mode} from ({type(exc).__name__}: {exc}); stopping",
              file=sys.stderr)
        os._exit(3)
    debugger = ReplayDebugger(controls.pdb, controls.break_at) if controls.debugging else None
    return Replayer(session, engine, frozenset(json.loads(os.environ.get(ENV_ALLOW_TOOLS, "[]"))), debugger,
                    recorded_stopped=pair.get("recordedStopped") is True)


def _shorten_tracebacks_after_a_stop(session: Any) -> None:
    """Once a strict replay has stopped the program, the traceback that stop causes is one line: the report
    that follows says where and why (`wop replay --verbose` keeps the whole traceback)."""
    import sys

    previous, previous_thread_hook = sys.excepthook, threading.excepthook

    def one_line(kind: Any, exc: BaseException) -> None:
        message = " ".join(str(exc).split())
        message = message if len(message) <= 300 else message[:297] + "..."
        print(f"wop: the replay stopped the program here; it ended with {kind.__qualname__}: {message} "
              "(--verbose shows the traceback)", file=sys.stderr)

    def hook(kind: Any, exc: BaseException, tb: Any) -> None:
        if not _stopped(session) or kind is KeyboardInterrupt:
            previous(kind, exc, tb)
        else:
            one_line(kind, exc)

    def thread_hook(args: Any) -> None:
        if not _stopped(session) or args.exc_type is SystemExit:
            previous_thread_hook(args)
        else:
            one_line(args.exc_type, args.exc_value)

    sys.excepthook = hook
    threading.excepthook = thread_hook
