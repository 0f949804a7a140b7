"""Marks around what the program prints inside a recorded call (a `@wop.tool` body, a `wop.llm_call` function).

A replay serves such a call without running its body, so what the body printed is not printed again: the output a
replay compares (replay.output) must leave it out on both sides. When wop reads the program's stdout and stderr
through pipes of its own (host.output), it says so in ENV_OUTPUT_MARKS (the identity of each pipe), and the
outermost recorded call of the process writes BEGIN before its body and END after it into both, right after
flushing Python's buffers, so the marks sit exactly where the body's text starts and ends. wop takes them out of the
stream before anything reaches the terminal. A mark is written only into the pipe wop made: a program that
redirected its stdout elsewhere gets none.
"""

import atexit
import os
import sys
import threading
from typing import Any

ENV_OUTPUT_MARKS = "WOP_OUTPUT_MARKS"  # "stdout-dev:ino,stderr-dev:ino" of the pipes wop reads
MARK_PREFIX = b"\x00\x1bwop"
BEGIN = MARK_PREFIX + b"<\x00"
END = MARK_PREFIX + b">\x00"

_lock = threading.Lock()
_depth = [0]
_pipes: list[tuple[int, tuple[int, int]]] = []  # (file descriptor, the identity of wop's pipe there)
_serving: list[bool] = []
_PIECE = 4096 - len(BEGIN) - len(END)  # a marked piece in one write of PIPE_BUF bytes at most


def begin() -> None:
    """A recorded call's body starts (counted: only the outermost one in the process is marked)."""
    if not _read():
        return
    with _lock:
        _depth[0] += 1
        if _depth[0] == 1:
            _mark(BEGIN)


def end() -> None:
    """The body `begin` announced has ended."""
    if not _read():
        return
    with _lock:
        _depth[0] -= 1
        if _depth[0] == 0:
            _mark(END)


def _read() -> bool:
    """Whether wop reads this process's output through its own pipes (ENV_OUTPUT_MARKS, read once)."""
    if not _pipes:
        _pipes.append((-1, (0, 0)))  # read: nothing to mark unless the variable names pipes
        for descriptor, identity in zip((1, 2), os.environ.get(ENV_OUTPUT_MARKS, "").split(",")):
            device, _, inode = identity.partition(":")
            if device.isdigit() and inode.isdigit():
                _pipes.append((descriptor, (int(device), int(inode))))
    return len(_pipes) > 1


def flush_standard_streams() -> None:
    """Write out what sys.stdout and sys.stderr hold (either may be None, closed or broken: then nothing)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


def _mark(mark: bytes) -> None:
    flush_standard_streams()
    for descriptor, identity in _pipes[1:]:
        try:
            status = os.fstat(descriptor)
            if (status.st_dev, status.st_ino) == identity:
                os.write(descriptor, mark)
        except OSError:
            pass


def enabled() -> bool:
    """Whether wop reads this process's output through its own pipes and compares it (marks are written)."""
    return _read()


def forward_child_output(options: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
    """Popen options for a child started inside a recorded call (an MCP stdio server): its stdout and stderr, where
    it would share this process's, go through pipes a thread of this process copies back marked as the call's (a
    replay does not start it). Returns the options and the descriptors to close once the child has started."""
    if not _read():
        return options, []
    started: list[int] = []
    for name, descriptor in (("stdout", 1), ("stderr", 2)):
        given = options.get(name)
        if given is None or given == descriptor or _fileno(given) == descriptor:
            reading, writing = os.pipe()
            _forward(reading, descriptor)
            options = {**options, name: writing}
            started.append(writing)
    return options, started


def mark_this_process() -> None:
    """Everything this process writes from now on is marked as a recorded call's: it serves connections (it
    listens on a TCP port), and what a server prints is its traffic, which a replay does not send it. Its stdout and
    stderr go through pipes a thread copies to where they went, marked."""
    if not _read() or _serving:
        return
    _serving.append(True)
    flush_standard_streams()
    restores = []
    for descriptor in (1, 2):
        try:
            original = os.dup(descriptor)
            reading, writing = os.pipe()
            os.dup2(writing, descriptor)
            os.close(writing)
        except OSError:
            continue
        restores.append((descriptor, original, _forward(reading, original)))
    atexit.register(_stop_forwarding, restores)


def watch_listening() -> None:
    """Mark this process's output once it listens on a TCP port (mark_this_process), when marks are written."""
    if not _read():
        return
    from openwop_cli.runtime.imports import when_imported

    when_imported("socket", _patch_listen)


def _patch_listen(module: Any) -> None:
    listen = module.socket.listen
    if getattr(listen, "__wop_marks__", False):
        return

    def marking_listen(sock: Any, *args: Any) -> Any:
        if sock.family in (module.AF_INET, module.AF_INET6):
            mark_this_process()
        return listen(sock, *args)

    marking_listen.__wop_marks__ = True  # type: ignore[attr-defined]
    module.socket.listen = marking_listen


def _forward(reading: int, descriptor: int) -> threading.Thread:
    """A thread copying what comes on reading to descriptor, each piece between BEGIN and END in one write (writes
    of up to PIPE_BUF bytes are never interleaved with other processes')."""

    def copy() -> None:
        with os.fdopen(reading, "rb", buffering=0) as source:
            while chunk := source.read(_PIECE):
                try:
                    os.write(descriptor, BEGIN + chunk + END)
                except OSError:
                    pass

    thread = threading.Thread(target=copy, name="wop-output-marks", daemon=True)
    thread.start()
    return thread


def _stop_forwarding(restores: list[tuple[int, int, threading.Thread]]) -> None:
    """At exit: this process's stdout and stderr back where they were, and what was still on its way copied."""
    flush_standard_streams()
    for descriptor, original, thread in restores:
        try:
            os.dup2(original, descriptor)  # the pipe's last writer gone: the thread reads its end, then stops
        except OSError:
            continue
        thread.join(1.0)


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno() if hasattr(stream, "fileno") else None
    except (OSError, ValueError):
        return None


def pipe_identity(descriptor: int) -> str:
    """`dev:ino` of an open pipe or terminal end, as ENV_OUTPUT_MARKS lists it."""
    status = os.fstat(descriptor)
    return f"{status.st_dev}:{status.st_ino}"
