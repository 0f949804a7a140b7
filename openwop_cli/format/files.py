"""Opening the files of a capture (and the files users point wop at) as data from a stranger.

Only regular files are opened — never through a symlink, never a FIFO (which would hang) or a
device (which never ends) — and every size is known before a byte is read. A capture's own files
and the files named on the command line fail with the error class the caller gives: CorruptCapture
(exit 3) for a capture, UsageError (exit 2) for an input file.
"""

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from openwop_cli.errors import CorruptCapture, WopError

MAX_MANIFEST_BYTES = 16 << 20
MAX_INPUT_BYTES = 16 << 20
MAX_BLOB_BYTES = 256 << 20
MAX_LINE_BYTES = 64 << 20

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def open_regular(path: Path, error: type[WopError] = CorruptCapture, what: str = "", *,
                 follow: bool = False) -> BinaryIO:
    """path opened for reading if it is a regular file (not a FIFO, device or directory, and unless
    follow — for files a user names, not a capture's own — not a symlink).

    A missing file raises FileNotFoundError so callers can say what is missing; anything else that is
    not a plain file raises `error` naming it."""
    name = what or str(path)
    try:
        fd = os.open(path, _FLAGS if follow else _FLAGS | _NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise error(f"{name} is a symbolic link; wop reads only regular files") from None
        raise error(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{name} is {_kind(mode)}, not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        try:
            os.close(fd)
        except OSError:  # a Ctrl-C as fdopen returned: the file it made has closed fd already
            pass
        raise


def read_regular(path: Path, limit: int, error: type[WopError] = CorruptCapture, what: str = "", *,
                 follow: bool = False) -> bytes:
    """All bytes of a regular file of at most `limit` bytes (see open_regular); a bigger one raises `error`."""
    name = what or str(path)
    with open_regular(path, error, name, follow=follow) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise error(f"{name} is {size:,} bytes, more than the {limit:,} wop reads")
        data = handle.read(size + 1)
        if len(data) > size:  # it grew since fstat: read on, but never past the limit
            data += handle.read(limit + 1 - len(data))
    if len(data) > limit:
        raise error(f"{name} grew past {limit:,} bytes while it was read")
    return data


def bounded_lines(handle: BinaryIO, chunk_bytes: int = 1 << 20) -> Iterator[bytes]:
    """The lines of a file with their newlines (the last may lack one); stops at a line longer than
    MAX_LINE_BYTES instead of holding it in memory (callers see fewer lines than the file has)."""
    tail = b""
    while chunk := handle.read(chunk_bytes):
        lines = (tail + chunk).split(b"\n")
        tail = lines.pop()
        if len(tail) > MAX_LINE_BYTES:
            return
        for line in lines:
            yield line + b"\n"
    if tail:
        yield tail


def remove_if_empty(directory: Path) -> None:
    """Remove directory when it is empty; leave it (and say nothing) otherwise or when it is gone."""
    try:
        directory.rmdir()
    except OSError:
        pass


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"
