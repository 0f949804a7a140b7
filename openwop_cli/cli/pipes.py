"""A reader that stops early (`wop show last | head`) ends wop quietly with exit 0, as `git log | head` does.

Typer turns a broken pipe into exit 1 — in wop, "differences found". Standard output is wrapped so a
write to a closed pipe raises PipeClosed, which no layer below mistakes for an I/O error of its own.
"""

import os
import sys
from typing import Any


class PipeClosed(Exception):
    """Whoever read wop's standard output has gone away."""


class _Guarded:
    """A stream (text or binary) whose writes to a closed pipe raise PipeClosed; everything else is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            return self._stream.write(data)
        except BrokenPipeError:
            raise PipeClosed() from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise PipeClosed() from None

    @property
    def buffer(self) -> Any:
        return _Guarded(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Wrap sys.stdout (once) so a closed pipe raises PipeClosed."""
    if not isinstance(sys.stdout, _Guarded) and sys.stdout is not None:
        sys.stdout = _Guarded(sys.stdout)  # type: ignore[assignment]


def silence_stdout() -> None:
    """After PipeClosed: point stdout at /dev/null so the interpreter's last flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
    except (OSError, AttributeError, ValueError):
        pass
