"""HTTP over raw sockets, the last line: an HTTP/1.1 exchange no adapter recorded, recorded on its socket.

A program's own HTTP client on the `socket` module (dspy 3.x's vendored transport, a hand-written
`sendall(b"POST …")`) is seen by no adapter. The connection watcher (runtime.connections) hands each
blocking TCP connection opened outside every boundary to `watch`, which gives that one socket a
class of its own: its sends feed an HTTP/1.1 request reader (http11), its receives a response
reader, and each exchange is recorded through adapters.exchange as any adapter's is (an LLM call
is an llm_request). TLS is read above the encryption: `SSLContext.wrap_socket` of a watched socket
gives an SSLSocket watched the same way (https, the server name it was given). A connection whose
first bytes are not an HTTP/1.x request (or that sends nothing) is given back its own class and
named as an unrecorded connection, as before; so is one that stops being HTTP (a 101 upgrade,
bytes outside the reader's bounds). Sockets opened inside a boundary (every adapter's) are never
touched: the recorder adds nothing to them.

In a replay the network guard hands such a connection to `serve` instead of refusing it (unless
the capture named its destination as unrecorded): nothing connects, each request the program
writes is answered from the capture (Exchange.begin) with the recorded answer as HTTP/1.1 bytes,
and bytes that are not HTTP are refused as the guard refuses a connection.
"""

import collections
import socket
import threading
import weakref
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime.adapters.exchange import (
    Exchange,
    plain_headers,
    response_bytes,
    undo_content_encoding,
)
from openwop_cli.runtime.adapters.http11 import Message, MessageReader, NotHTTP, looks_like_request
from openwop_cli.runtime.imports import when_imported
from openwop_cli.runtime.session import _inside_boundary, note_open_stream

_connections: Any = weakref.WeakKeyDictionary()  # a watched or served plain socket -> its _Connection
_ssl_hooked: list[bool] = []
_lock = threading.Lock()


class _Connection:
    """One watched connection: where it goes, who opened it, and the exchanges read from it so far."""

    def __init__(self, session: Any, host: str, port: int, on_unrecorded: Callable[[], None]) -> None:
        self.session = session
        self.host, self.port = host, port
        self.scheme = "http"
        self.server_name: str | None = None
        self.on_unrecorded = on_unrecorded  # names the connection as not recorded (connections.note_unrecorded)
        self.http: bool | None = None  # None until the first bytes tell
        self.first = b""
        self.requests = MessageReader(requests=True)
        self.answers = MessageReader(requests=False)
        self.pending: collections.deque = collections.deque()  # (exchange or None, method) awaiting their answers
        self.inbound = bytearray()  # (a served connection) the recorded answers' bytes the program has not read
        self.error: BaseException | None = None  # (served) what a read past inbound raises

    def finish(self, complete: Any) -> None:
        """(session.finish_open_streams' call as the process ends with a request of this connection in flight.)"""
        if self.pending:
            _ended(self)

    def url(self, message: Message) -> str:
        """The URL a request on this connection was for: its Host header (or the server's name, else address)."""
        target = message.start[1]
        if target.startswith(("http://", "https://")):
            return target
        authority = message.header("host")
        if not authority:
            host = self.server_name or self.host
            host = f"[{host}]" if ":" in host else host
            default = 443 if self.scheme == "https" else 80
            authority = host if self.port == default else f"{host}:{self.port}"
        return f"{self.scheme}://{authority}{target}"

    def first_bytes(self, data: bytes) -> bytes | None:
        """The bytes to read once the first ones tell HTTP (None: not yet, or not HTTP: self.http says)."""
        self.first += data
        verdict = looks_like_request(self.first)
        if verdict is None:
            return None
        self.http = verdict
        data, self.first = self.first, b""
        return data if verdict else None


# ---- capture --------------------------------------------------------------------------------------------------


def watch(sock: socket.socket, session: Any, host: str, port: int, on_unrecorded: Callable[[], None]) -> None:
    """Record the HTTP exchanges of a connection no adapter records (see the module docstring); on_unrecorded names it
    when it turns out not to be HTTP."""
    _hook_ssl()
    _connections[sock] = _Connection(session, host, port, on_unrecorded)
    sock.__class__ = _RecordingSocket


def _sent(connection: _Connection, data: Any) -> None:
    """Bytes the program sent on a watched connection: each request they complete is recorded."""
    if connection.http is False or not data:
        return
    try:
        data = bytes(data)
        if connection.http is None:
            data = connection.first_bytes(data)
            if data is None:
                if connection.http is False:
                    _unrecorded(connection)
                return
        for message in connection.requests.feed(data):
            _began(connection, message)
    except Exception as exc:  # never break the program's send: the connection just goes unrecorded
        _stopped(connection, exc)


def _began(connection: _Connection, message: Message) -> None:
    method = message.start[0]
    exchange = None
    if not _inside_boundary.get():  # a tool or llm_call around it records this call itself
        exchange = Exchange(connection.session, method, connection.url(message), message.headers, message.body)
        exchange.begin()
        if not connection.pending:
            note_open_stream(connection)
    connection.pending.append((exchange, method))
    connection.answers.expect(method)


def _received(connection: _Connection, data: Any) -> None:
    """Bytes the program received on a watched connection: each answer they complete is recorded."""
    if connection.http is not True:
        if connection.http is None and data:  # the server spoke first: not HTTP
            connection.http = False
            _unrecorded(connection)
        return
    try:
        for message in connection.answers.feed(bytes(data)):
            _answered(connection, message)
        if connection.answers.upgraded:  # what follows the 101 is another protocol
            _stopped(connection, None)
    except Exception as exc:
        _stopped(connection, exc)


def _answered(connection: _Connection, message: Message) -> None:
    if not connection.pending:
        raise NotHTTP("an answer to no request")
    exchange, _method = connection.pending.popleft()
    if exchange is None:
        return
    headers = plain_headers(message.headers)
    exchange.record_response(int(message.start[1]), headers, undo_content_encoding(message.body, headers),
                             exchange.is_stream(headers), message.complete)


def _ended(connection: _Connection) -> None:
    """The program closed the connection (or the process ends with it open): an answer it was reading is recorded as
    far as it came, a request never answered as failed; a connection that never said anything is named."""
    if connection.http is None:
        connection.http = False
        _unrecorded(connection)
        return
    if connection.http is not True:
        return
    connection.http = False
    try:
        message = connection.answers.end()
        if message is not None:
            _answered(connection, message)
    except NotHTTP:
        pass
    _fail_pending(connection, ConnectionAbortedError("the connection closed before the answer came"))


def _stopped(connection: _Connection, exc: BaseException | None) -> None:
    """The connection stopped being HTTP wop can read: what was recorded stays, the rest goes unrecorded (named)."""
    connection.http = False
    _fail_pending(connection, exc or ConnectionAbortedError("the connection switched protocols"))
    _unrecorded(connection)


def _fail_pending(connection: _Connection, exc: BaseException) -> None:
    while connection.pending:
        exchange, _method = connection.pending.popleft()
        if exchange is not None and not exchange.finished:
            exchange.record_failure(exc)


def _unrecorded(connection: _Connection) -> None:
    try:
        connection.on_unrecorded()
    except Exception:
        pass


class _RecordingSocket(socket.socket):
    """A watched plain socket: what it sends and receives is read for HTTP (sendall and recv are the C socket's, so
    each is read once)."""

    __slots__ = ()

    def send(self, data: Any, flags: int = 0) -> int:
        count = super().send(data, flags)
        _sent(_connections[self], memoryview(data)[:count])
        return count

    def sendall(self, data: Any, flags: int = 0) -> None:
        super().sendall(data, flags)
        _sent(_connections[self], data)

    def recv(self, size: int, flags: int = 0) -> bytes:
        data = super().recv(size, flags)
        if not flags & socket.MSG_PEEK:
            _received(_connections[self], data)
        return data

    def recv_into(self, buffer: Any, size: int = 0, flags: int = 0) -> int:
        count = super().recv_into(buffer, size, flags)
        if not flags & socket.MSG_PEEK:
            _received(_connections[self], memoryview(buffer)[:count])
        return count

    def close(self) -> None:
        connection = _connections.get(self)
        if connection is not None and self.fileno() >= 0:
            _ended(connection)
        super().close()


def _hook_ssl() -> None:
    """Follow a watched (or served) socket through SSLContext.wrap_socket, from the first one on."""
    with _lock:
        if _ssl_hooked:
            return
        _ssl_hooked.append(True)
    when_imported("ssl", _patch_ssl)


def _patch_ssl(ssl: Any) -> None:
    real = ssl.SSLContext.wrap_socket

    def wrap_socket(context: Any, sock: Any, *args: Any, **kwargs: Any) -> Any:
        connection = _connections.get(sock) if type(sock) in (_RecordingSocket, _ServedSocket) else None
        if connection is None:
            return real(context, sock, *args, **kwargs)
        connection.scheme = "https"
        connection.server_name = kwargs.get("server_hostname") or (args[3] if len(args) > 3 else None)
        if type(sock) is _ServedSocket:
            return sock  # nothing to encrypt: the capture answers in plain bytes
        wrapped = real(context, sock, *args, **kwargs)
        recording = _recording_ssl_class(ssl, type(wrapped))
        wrapped.__class__ = recording
        wrapped._wop_connection = connection
        return wrapped

    ssl.SSLContext.wrap_socket = wrap_socket


_SSL_CLASSES: dict[type, type] = {}


def _recording_ssl_class(ssl: Any, kind: type) -> type:
    """kind (ssl.SSLSocket or a subclass) reading what it sends and receives above the encryption."""
    recording = _SSL_CLASSES.get(kind)
    if recording is None:
        def send(self: Any, data: Any, flags: int = 0) -> int:
            count = kind.send(self, data, flags)
            _sent(self._wop_connection, memoryview(data)[:count])
            return count

        def write(self: Any, data: Any) -> int:
            count = kind.write(self, data)
            _sent(self._wop_connection, memoryview(data)[:count])
            return count

        def read(self: Any, size: int = 1024, buffer: Any = None) -> Any:
            got = kind.read(self, size, buffer)
            _received(self._wop_connection, got if buffer is None else memoryview(buffer)[:got])
            return got

        def close(self: Any) -> None:
            if self.fileno() >= 0:
                _ended(self._wop_connection)
            kind.close(self)

        recording = _SSL_CLASSES[kind] = type(f"Recording{kind.__name__}", (kind,),
                                              {"send": send, "write": write, "read": read, "close": close})
    return recording


# ---- replay ---------------------------------------------------------------------------------------------------


def serve(sock: socket.socket, session: Any, host: str, port: int, on_blocked: Callable[[], BaseException]) -> None:
    """(A replay.) Answer this connection's HTTP from the capture instead of connecting (see the module docstring);
    on_blocked reports it as the network guard would and returns the error to raise, for bytes that are not HTTP."""
    _hook_ssl()
    connection = _Connection(session, host, port, lambda: None)
    connection.on_blocked = on_blocked  # type: ignore[attr-defined]
    _connections[sock] = connection
    sock.__class__ = _ServedSocket


def _served_request(connection: _Connection, data: Any) -> None:
    """Bytes the program wrote on a served connection: each request they complete gets its recorded answer."""
    if connection.http is None:
        data = connection.first_bytes(bytes(data))
        if data is None:
            if connection.http is False:
                raise connection.on_blocked()  # type: ignore[attr-defined]
            return
    try:
        messages = connection.requests.feed(bytes(data))
    except NotHTTP:
        connection.http = False
        raise connection.on_blocked() from None  # type: ignore[attr-defined]
    for message in messages:
        exchange = Exchange(connection.session, message.start[0], connection.url(message), message.headers,
                            message.body)
        answer = exchange.begin()
        if answer is None:  # a call that runs live (a fork past its branch point) has no live connection here
            raise connection.on_blocked()  # type: ignore[attr-defined]
        status, headers, chunks, streamed = answer
        data, connection.error = response_bytes(status, "OK" if status < 400 else "wop replay", headers, chunks,
                                                streamed)
        connection.inbound += data if message.start[0] != "HEAD" else data[:data.index(b"\r\n\r\n") + 4]


def _served_read(connection: _Connection, size: int) -> bytes:
    inbound = connection.inbound
    if not inbound and connection.error is not None:
        error, connection.error = connection.error, None
        raise error
    data = bytes(inbound[:size])
    del inbound[:size]
    return data


class _ServedSocket(socket.socket):
    """A connection a replay answers from the capture: it never connected; reads give the recorded answers' bytes,
    then the end of the stream."""

    __slots__ = ()

    def send(self, data: Any, flags: int = 0) -> int:
        _served_request(_connections[self], data)
        return len(memoryview(data))

    def sendall(self, data: Any, flags: int = 0) -> None:
        _served_request(_connections[self], data)

    def recv(self, size: int, flags: int = 0) -> bytes:
        connection = _connections[self]
        if flags & socket.MSG_PEEK:
            return bytes(connection.inbound[:size])
        return _served_read(connection, size)

    def recv_into(self, buffer: Any, size: int = 0, flags: int = 0) -> int:
        view = memoryview(buffer).cast("B")
        data = self.recv(size or len(view), flags)
        view[:len(data)] = data
        return len(data)

    def getpeername(self) -> Any:
        connection = _connections[self]
        return (connection.host, connection.port)

    def shutdown(self, how: int) -> None:
        pass

    # what a TLS client asks of the socket wrap_socket gave it back
    def do_handshake(self, block: bool = False) -> None:
        pass

    def getpeercert(self, binary_form: bool = False) -> Any:
        return None

    def selected_alpn_protocol(self) -> str | None:
        return None

    def version(self) -> str | None:
        return None

