"""Marks around what the program prints inside a recorded call (a `@wop.tool` body, a `wop.llm_call` function).

A replay serves such a call without running its body, so what the body printed is not printed again: the output a
replay compares (replay.output) must leave it out on both sides. When wop reads the program's stdout and stderr
through pipes of its own (runtime.output), it says so in ENV_OUTPUT_MARKS (the identity of each pipe), and the
outermost recorded call of the process writes BEGIN before its body and END after it into both, right after
flushing Python's buffers, so the marks sit exactly where the body's text starts and ends. wop takes them out of the
stream before anything reaches the terminal. A mark is written only into the pipe wop made: a program that
redirected its stdout elsewhere gets none.
"""

import os
import sys
import threading

ENV_OUTPUT_MARKS = "WOP_OUTPUT_MARKS"  # "stdout-dev:ino,stderr-dev:ino" of the pipes wop reads
MARK_PREFIX = b"\x00\x1bwop"
BEGIN = MARK_PREFIX + b"<\x00"
END = MARK_PREFIX + b">\x00"

_lock = threading.Lock()
_depth = [0]
_pipes: list[tuple[int, tuple[int, int]]] = []  # (file descriptor, the identity of wop's pipe there)


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


def _mark(mark: bytes) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    for descriptor, identity in _pipes[1:]:
        try:
            status = os.fstat(descriptor)
            if (status.st_dev, status.st_ino) == identity:
                os.write(descriptor, mark)
        except OSError:
            pass


def pipe_identity(descriptor: int) -> str:
    """`dev:ino` of an open pipe or terminal end, as ENV_OUTPUT_MARKS lists it."""
    status = os.fstat(descriptor)
    return f"{status.st_dev}:{status.st_ino}"
