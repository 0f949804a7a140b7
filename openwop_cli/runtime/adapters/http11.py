"""HTTP/1.1 messages read from a byte stream, as a raw socket carries them: what the socket recorder parses.

`MessageReader` is fed the bytes one direction of a connection carried, in pieces of any size, and gives back
each message once it is whole: requests (framed by Content-Length or chunked transfer coding, else bodiless) or
responses (bodiless for HEAD, 1xx, 204 and 304; chunked; Content-Length; else until the connection ends). Several
messages on one connection (keep-alive, pipelining) come out in order. Everything is bounded: a head of more than
MAX_HEAD bytes or MAX_HEADERS lines, a chunk-size line of more than MAX_LINE bytes, a body of more than MAX_BODY
bytes, or anything that is not HTTP/1.x raises NotHTTP, and the reader keeps nothing it has not yet parsed beyond
those bounds.
"""

import re
from typing import NamedTuple

MAX_HEAD = 64 * 1024
MAX_HEADERS = 256
MAX_LINE = 4096
MAX_BODY = 256 * 1024 * 1024
_REQUEST_LINE = re.compile(rb"([A-Z][A-Z_-]{0,19}) (\S{1,16384}) HTTP/1\.([01])\r?\n")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?\r?\n")
_METHOD = re.compile(rb"[A-Z][A-Z_-]{0,19}")
_TARGET = re.compile(rb"\S{0,16384}")
_HEAD_END = re.compile(rb"\r?\n\r?\n")


class NotHTTP(ValueError):
    """The bytes are not (or no longer) an HTTP/1.1 stream wop can read within its bounds."""


class Message(NamedTuple):
    """One HTTP/1.1 message: its start line's three parts (method, target, version — or version, status, reason),
    its header lines as (name, value) in order, its body with any chunked coding undone, and whether it ended (False
    for a body cut short by the end of the connection)."""

    start: tuple[str, str, str]
    headers: list[tuple[str, str]]
    body: bytes
    complete: bool = True

    def header(self, name: str) -> str:
        """The value of a header (lowercase name), its lines joined by ', '; '' when absent."""
        return ", ".join(value for key, value in self.headers if key.lower() == name)


def looks_like_request(data: bytes) -> bool | None:
    """Whether the first bytes a connection sent start an HTTP/1.x request: True, False, or None when too few have
    come to tell (no line end yet)."""
    if data.find(b"\n") < 0:
        return None if len(data) < MAX_LINE and _could_start_request(data) else False
    return _REQUEST_LINE.match(data) is not None


def _could_start_request(data: bytes) -> bool:
    """True when data (no line end in it) is the beginning of some request line: method, target, HTTP/1.x."""
    method, space, rest = data.partition(b" ")
    if not space:
        return not method or _METHOD.fullmatch(method) is not None
    if _METHOD.fullmatch(method) is None:
        return False
    target, space, version = rest.partition(b" ")
    if _TARGET.fullmatch(target) is None or (space and not target):
        return False
    return not space or b"HTTP/1.1\r".startswith(version) or b"HTTP/1.0\r".startswith(version)


class MessageReader:
    """See the module docstring. requests: True for the bytes a client sent, False for the server's answers; a
    response reader is told each request's method (`expect`) so it knows which answers have no body."""

    def __init__(self, requests: bool) -> None:
        self._requests = requests
        self._buffer = bytearray()
        self._head: tuple[tuple[str, str, str], list[tuple[str, str]]] | None = None
        self._framing: str | int | None = None  # "chunked", "close", or the bytes the body still needs
        self._body = bytearray()
        self._chunk_left = 0  # bytes of the current chunk still to come (chunked), then its CRLF
        self._in_trailer = False
        self._methods: list[str] = []
        self._scanned = 0  # how far the buffer was searched for the end of a head
        self.upgraded = False  # a 101 answer: what follows is another protocol

    def expect(self, method: str) -> None:
        """(A response reader.) A request was sent with this method: its answer comes next in order."""
        self._methods.append(method.upper())

    def feed(self, data: bytes) -> list[Message]:
        """The messages data completes (in order); raises NotHTTP."""
        if self.upgraded:
            return []
        self._buffer += data
        done = []
        while True:
            message = self._next()
            if message is None:
                return done
            if message is not _INTERIM:
                done.append(message)
            if self.upgraded:
                return done

    def end(self) -> Message | None:
        """The connection ended: the message it completes (a body read until the end) or cut short (complete False),
        None when it ended between messages."""
        if self._head is None:
            return None
        start, headers = self._head
        body, ended = bytes(self._body), self._framing == "close"
        self._reset()
        return Message(start, headers, body, ended)

    @property
    def idle(self) -> bool:
        """True between messages, with no byte of the next one yet."""
        return self._head is None and not self._buffer

    def _next(self) -> Message | None:
        """The next whole message (_INTERIM for an interim answer, which the final one follows), None until one is."""
        if self._head is None and not self._read_head():
            return None
        return self._read_body()

    def _read_head(self) -> bool:
        buffer = self._buffer
        while not self._requests and buffer[:1] in (b"\r", b"\n"):  # stray line ends between answers
            del buffer[:1]
        found = _HEAD_END.search(buffer, max(self._scanned - 3, 0), MAX_HEAD + 4)
        if found is None:
            self._scanned = len(buffer)
            if len(buffer) > MAX_HEAD:
                raise NotHTTP(f"a message head longer than {MAX_HEAD} bytes")
            if buffer and not self._requests and not b"HTTP/1."[:len(buffer)] == bytes(buffer[:7]):
                raise NotHTTP("an answer that is not HTTP/1.x")
            return False
        head = bytes(buffer[:found.end()])
        del buffer[:found.end()]
        self._scanned = 0
        line_end = head.index(b"\n") + 1
        start = self._start_line(head[:line_end])
        headers = _header_lines(head[line_end:])
        self._head = (start, headers)
        self._framing = self._framing_of(start, headers)
        return True

    def _start_line(self, line: bytes) -> tuple[str, str, str]:
        if self._requests:
            matched = _REQUEST_LINE.fullmatch(line)
            if matched is None:
                raise NotHTTP("not an HTTP/1.x request line")
            return (matched[1].decode("ascii"), matched[2].decode("latin-1"), f"HTTP/1.{matched[3].decode()}")
        matched = _STATUS_LINE.fullmatch(line)
        if matched is None:
            raise NotHTTP("not an HTTP/1.x status line")
        return (f"HTTP/1.{matched[1].decode()}", matched[2].decode("ascii"), (matched[3] or b"").decode("latin-1"))

    def _framing_of(self, start: tuple[str, str, str], headers: list[tuple[str, str]]) -> str | int:
        codings = ", ".join(value for name, value in headers if name.lower() == "transfer-encoding").lower()
        lengths = {value.strip() for name, value in headers if name.lower() == "content-length"}
        if not self._requests:
            status = int(start[1])
            method = self._methods[0] if self._methods else "GET"
            if status == 101:
                return 0
            if 100 <= status < 200 or status in (204, 304) or method == "HEAD":
                return 0
        if codings:
            if codings.rsplit(",", 1)[-1].strip() == "chunked":
                return "chunked"
            if self._requests:
                raise NotHTTP("a request body with a transfer coding other than chunked")
            return "close"
        if lengths:
            if len(lengths) > 1 or not all(length.isdigit() for length in lengths):
                raise NotHTTP("a Content-Length that is not one number")
            length = int(lengths.pop())
            if length > MAX_BODY:
                raise NotHTTP(f"a body of more than {MAX_BODY} bytes")
            return length
        return 0 if self._requests else "close"

    def _read_body(self) -> Message | None:
        framing, buffer = self._framing, self._buffer
        if framing == "chunked":
            if not self._read_chunks():
                return None
        elif framing == "close":
            self._take(len(buffer))
            return None
        else:
            need = framing - len(self._body)
            self._take(min(need, len(buffer)))
            if len(self._body) < framing:
                return None
        return self._finish()

    def _take(self, count: int) -> None:
        if len(self._body) + count > MAX_BODY:
            raise NotHTTP(f"a body of more than {MAX_BODY} bytes")
        self._body += self._buffer[:count]
        del self._buffer[:count]

    def _read_chunks(self) -> bool:
        """Undo the chunked coding as far as the buffer goes; True once the last chunk and the trailer are read."""
        buffer = self._buffer
        while True:
            if self._chunk_left > 0:
                taken = min(self._chunk_left, len(buffer))
                self._take(taken)
                self._chunk_left -= taken
                if self._chunk_left > 0:
                    return False
                self._chunk_left = -1  # the CRLF after the chunk's data
            line_end = buffer.find(b"\n", 0, MAX_LINE + 1)
            if line_end < 0:
                if len(buffer) > MAX_LINE:
                    raise NotHTTP(f"a chunk line longer than {MAX_LINE} bytes")
                return False
            line = bytes(buffer[:line_end]).rstrip(b"\r")
            del buffer[:line_end + 1]
            if self._chunk_left == -1:
                if line:
                    raise NotHTTP("a chunk longer than its size")
                self._chunk_left = 0
                continue
            if self._in_trailer:
                if not line:
                    return True
                continue
            size = line.split(b";", 1)[0].strip()
            if not size or not all(byte in b"0123456789abcdefABCDEF" for byte in size) or len(size) > 16:
                raise NotHTTP("a chunk size that is not a hexadecimal number")
            self._chunk_left = int(size, 16)
            if self._chunk_left == 0:
                self._in_trailer = True
            elif len(self._body) + self._chunk_left > MAX_BODY:
                raise NotHTTP(f"a body of more than {MAX_BODY} bytes")

    def _finish(self) -> Message:
        start, headers = self._head  # type: ignore[misc]
        message = Message(start, headers, bytes(self._body))
        if not self._requests:
            status = int(start[1])
            if 100 <= status < 200 and status != 101:
                self._reset()
                return _INTERIM
            if self._methods:
                self._methods.pop(0)
            self.upgraded = status == 101
        self._reset()
        return message

    def _reset(self) -> None:
        self._head, self._framing, self._body = None, None, bytearray()
        self._chunk_left, self._in_trailer = 0, False


_INTERIM = Message(("", "", ""), [], b"")  # what _next gives for a 1xx answer other than 101, left out of feed's


def _header_lines(block: bytes) -> list[tuple[str, str]]:
    headers = []
    for line in block.split(b"\n"):
        line = line.rstrip(b"\r")
        if not line:
            continue
        if len(headers) >= MAX_HEADERS:
            raise NotHTTP(f"more than {MAX_HEADERS} header lines")
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip() or b" " in name:
            raise NotHTTP("a header line without a name")
        headers.append((name.decode("latin-1"), value.strip().decode("latin-1")))
    return headers
