"""wop's standard streams when they fail: stdout's failures end wop with a documented code, stderr's are dropped.

A reader that stops early (`wop show last | head`) ends wop quietly with exit 0, as `git log | head` does (Typer
would make a broken pipe exit 1 — in wop, "differences found"); any other failure to write the output (a full
disk: ENOSPC, a descriptor closed with `>&-`) is one line on stderr and exit 2. Standard output is wrapped so those
raise PipeClosed and OutputFailed, which no layer below mistakes for an I/O error of its own. Standard error is
where wop says what went wrong, so with none usable (`2>&-`, a closed pipe) there is nowhere to say it: its failures
are dropped and the exit code alone tells how the command went (a capture is kept as it would be).
"""

import errno
import os
import sys
from typing import Any


class PipeClosed(Exception):
    """Whoever read wop's standard output has gone away."""


class OutputFailed(Exception):
    """Writing wop's standard output failed for another reason than a closed pipe."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.reason = error.strerror or str(error)


class _Closed:
    """A standard stream whose descriptor was closed when wop started (Python leaves None there): writes fail as
    writes to a closed descriptor do."""

    encoding = "utf-8"

    def __init__(self, name: str) -> None:
        self._name = name

    def write(self, data: Any) -> int:
        raise OSError(errno.EBADF, f"standard {self._name} is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, f"standard {self._name} is closed")

    @property
    def buffer(self) -> "_Closed":
        return self


class _Guarded:
    """A stream (text or binary) whose failed writes raise PipeClosed or OutputFailed; everything else is the
    stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            return self._stream.write(data)
        except BrokenPipeError:
            raise PipeClosed() from None
        except OSError as exc:
            raise OutputFailed(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise PipeClosed() from None
        except OSError as exc:
            raise OutputFailed(exc) from None

    @property
    def buffer(self) -> Any:
        return _Guarded(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Unfailing:
    """A stream (text or binary) whose failed writes are dropped; everything else is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            return self._stream.write(data)
        except OSError:
            return len(data)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            pass

    @property
    def buffer(self) -> Any:
        return _Unfailing(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_streams() -> None:
    """Wrap sys.stdout and sys.stderr (once) as the module docstring says."""
    if not isinstance(sys.stdout, _Guarded):
        sys.stdout = _Guarded(sys.stdout if sys.stdout is not None else _Closed("output"))  # type: ignore[assignment]
    if not isinstance(sys.stderr, _Unfailing):
        sys.stderr = _Unfailing(sys.stderr if sys.stderr is not None else _Closed("error"))  # type: ignore[assignment]


def silence_stdout() -> None:
    """After PipeClosed or OutputFailed: point stdout at /dev/null so the interpreter's last flush does not fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
    except (OSError, AttributeError, ValueError):
        pass
