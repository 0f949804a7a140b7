"""The wire between recorded processes and the `wop` process that owns the capture: addresses, messages and frames.

Every Python process started under `wop capture` or `wop replay` (the child, and any Python it starts) connects to
the address in WOP_SINK (runtime.sender) and the `wop` process collects what it sends (host.collector). A sender
sends lines: control messages (hello, modules, questions) as JSON objects, events as
`type TAB ts TAB origin-json TAB data-json TAB source-seq` — JSON never holds a raw tab or newline, so the collector
can splice the data bytes into the event line without parsing them again — and, in frames, the raw pieces of HTTP
exchanges (Session.record_raw: method, URL, headers and body as the program holds them, credentials included, so the
program's thread neither decodes nor filters them): a frame is a NUL byte (no text line holds one), the payload's
length (4 bytes, big endian) and pickles (protocol 5) of lists of (kind, ts, origin JSON or None, pieces, body), one
after the other. The collector loads them with builtin values only (a class or function named in one is refused).
Each batch starts with a line `@` and when it was sent (time.time_ns()), which orders the events processes recorded in
the same millisecond.
"""

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

ENV_ADDRESS = "WOP_SINK"
ENV_GATE = "WOP_GATE"  # set for a child started before its capture was ready: it waits for the parent's go
FRAME_MARK = b"\x00"  # starts a frame of raw pieces (see the module docstring)
SENT_MARK = b"@"  # starts the line saying when a batch was sent (see the module docstring)
FRAME_HEADER = 5  # the mark and the length
BYTES_MARKER = b'"$bytes"'  # jsonable.BYTES_TAG as it appears in a line (jsonable loads orjson)
MAX_SOCKET_PATH = 103  # bytes a unix socket's path may have everywhere (sun_path: 108 on Linux, 104 on macOS)
_unpickler: Any = None  # frame_entries' Unpickler of builtin values, made on the first frame


def tcp_address(address: str) -> tuple[str, int] | None:
    """(host, port) of a `tcp:HOST:PORT` channel address; None for a unix socket."""
    if not address.startswith("tcp:"):
        return None
    host, _, port = address[4:].rpartition(":")
    return host, int(port)


def take_messages(pending: bytearray) -> tuple[list[tuple[bool, bytes]], int, int]:
    """The whole messages at the start of pending, removed from it, as (is a frame, its line or its payload); with
    how many bytes pending must hold before the incomplete frame it then starts with is whole (0: none), and how
    many lines were cut by a frame (no sender writes one: they are dropped)."""
    messages: list[tuple[bool, bytes]] = []
    start, size, awaiting, torn = 0, len(pending), 0, 0
    while start < size:
        if pending[start] == 0:
            if size - start < FRAME_HEADER:
                awaiting = FRAME_HEADER
                break
            end = start + FRAME_HEADER + int.from_bytes(pending[start + 1:start + FRAME_HEADER], "big")
            if end > size:
                awaiting = end - start
                break
            messages.append((True, bytes(pending[start + FRAME_HEADER:end])))
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


class Chunks(list):
    """A pickler's file that keeps what it writes as it is (io.BytesIO would copy it in, and again out)."""

    write = list.append


def frame_entries(payload: bytes) -> Iterator[Any]:
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


def as_builtin(value: Any) -> Any:
    """How a frame's pickler writes a value of a subclass of str, bytes, int or float (a StrEnum header, a URL of a
    str subclass): as the builtin value it holds, taken back by _EXACT on the other side. Anything else is pickled
    pickle's own way (and a class it names is refused there, with its frame)."""
    for kind, plain in _PLAIN.items():
        if isinstance(value, kind):
            return kind, (plain(value),)
    return NotImplemented


def _exactly(kind: type) -> Callable[[Any], Any]:
    """What a frame's loader calls for builtins.<kind>: the value itself, when it is exactly one (as as_builtin
    writes it); anything else (bytes(10**12), a stranger's int("…")) is a malformed frame."""
    def taken(value: Any) -> Any:
        if type(value) is not kind:
            import pickle

            raise pickle.UnpicklingError(f"a frame makes a {kind.__name__} of a {type(value).__name__}")
        return value

    return taken


_PLAIN: dict[type, Callable[[Any], Any]] = {str: str.__str__, bytes: bytes.__bytes__, int: int.__int__, float: float.__float__}
_EXACT = {kind.__name__: _exactly(kind) for kind in _PLAIN}


def control_line(message: dict[str, Any]) -> bytes:
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
