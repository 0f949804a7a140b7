"""http.client: record and replay at `HTTPConnection.request` + `getresponse`, the standard library's client.

This is how `urllib.request.urlopen` and anything built directly on http.client is recorded (HTTPS
included: HTTPSConnection inherits both). urllib3 and requests sit on http.client too, but they
record at their own adapters and this one passes their calls through. The request is recorded when
it is sent and answered (in a replay) without connecting; the response is read whole while
recording and handed on as a fresh HTTPResponse over the same bytes, or — for a stream — handed on
as it is and recorded as the program reads it.
"""

import http.client
import io
from typing import Any, Callable

from openwop_cli.runtime.adapters.exchange import (
    BytesThenError,
    Exchange,
    absolute_url,
    body_bytes,
    plain_headers,
    recording_session,
    sendable_body,
    stream_error,
    to_wop_proxy,
    undo_content_encoding,
)
from openwop_cli.runtime.session import describe_exception

_MARK = "__wop_patched__"
_PENDING = "_wop_pending"
_FRAMING = frozenset({"transfer-encoding", "content-length"})


def patch(module: Any) -> None:
    """Wrap http.client.HTTPConnection.request and getresponse (idempotent); module is `http.client`."""
    connection = module.HTTPConnection
    if not getattr(connection.request, _MARK, False):
        connection.request = _request_handler(module, connection.request)
        connection.getresponse = _getresponse_handler(connection.getresponse)


def _request_handler(module: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    https = getattr(module, "HTTPSConnection", ())

    def request(self: Any, method: str, url: str, body: Any = None, headers: Any = {}, *,  # noqa: B006 (http.client's own default)
                encode_chunked: bool = False) -> None:
        self.__dict__.pop(_PENDING, None)
        session = recording_session()
        if session is None:
            return original(self, method, url, body, headers, encode_chunked=encode_chunked)
        target = absolute_url("https" if isinstance(self, https) else "http", self._tunnel_host or self.host,
                              self._tunnel_port or self.port, url)
        if to_wop_proxy(target):
            return original(self, method, url, body, headers, encode_chunked=encode_chunked)
        body = sendable_body(body)
        exchange = Exchange(session, method, target, headers, body_bytes(body))
        answer = exchange.begin()
        if answer is None:
            with exchange.sending():
                original(self, method, url, body, headers, encode_chunked=encode_chunked)
        setattr(self, _PENDING, (exchange, answer))
        return None

    setattr(request, _MARK, True)
    return request


def _getresponse_handler(original: Callable[..., Any]) -> Callable[..., Any]:
    def getresponse(self: Any) -> Any:
        pending = self.__dict__.pop(_PENDING, None)
        if pending is None:
            return original(self)
        exchange, answer = pending
        if answer is not None:
            status, headers, chunks, streamed = answer
            return _made_response(self, exchange.method, status, "OK" if status < 400 else "wop replay", headers,
                                  chunks, streamed)
        with exchange.sending():
            return _recorded(self, exchange, original(self))

    return getresponse


def _recorded(connection: Any, exchange: Exchange, response: Any) -> Any:
    """Record the response (now, or as a stream is read) and return what the program reads it from."""
    headers = plain_headers(response.msg)
    if exchange.is_stream(headers):
        return _recording(exchange, response, headers)
    raw = response.read()
    exchange.record_response(response.status, headers, undo_content_encoding(raw, headers), False, in_call=True)
    kept = [(name, value) for name, value in response.msg.items() if name.lower() not in _FRAMING]
    return _made_response(connection, exchange.method, response.status, response.reason, kept, [raw], False)


def _made_response(connection: Any, method: str, status: int, reason: str, headers: list[tuple[str, str]],
                   chunks: list[bytes], chunked: bool) -> Any:
    """A real HTTPResponse (the connection's response_class) parsed from bytes: status, headers, body. A recorded
    stream that ended with an exception has no last chunk: http.client raises IncompleteRead after the bytes as it did
    when the connection closed early, and any other exception (a read timed out) is raised by the socket there."""
    head = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in headers
                                            if name.lower() not in _FRAMING)]
    error = stream_error(chunks) if chunked else None
    if chunked:
        head.append("Transfer-Encoding: chunked")
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks if chunk)
        body += b"" if error is not None else b"0\r\n\r\n"
    else:
        body = b"".join(chunks)
        head.append(f"Content-Length: {len(body)}")
    if isinstance(error, http.client.IncompleteRead):  # what http.client makes of a connection that closed early
        error = None
    response = connection.response_class(_BytesSocket("\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + body,
                                                      error), method=method)
    response.begin()
    return response


class _BytesSocket:
    """What an HTTPResponse reads a made-up answer from: makefile() over bytes, which raises `error` (when given)
    where the bytes end."""

    def __init__(self, data: bytes, error: BaseException | None = None) -> None:
        self._data, self._error = data, error

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> Any:
        return io.BufferedReader(io.BytesIO(self._data) if self._error is None else BytesThenError(self._data,
                                                                                                  self._error))


def _recording(exchange: Exchange, response: Any, headers: dict[str, str]) -> Any:
    """The live response, turned into a subclass of its own class that keeps what the program reads."""
    kind = type(response)
    recording = _RECORDING_CLASSES.get(kind)
    if recording is None:
        recording = _RECORDING_CLASSES[kind] = type(f"Recording{kind.__name__}", (_Recording, kind), {})
    response.__class__ = recording
    response._wop_record = (exchange, headers, [], [0, False])
    return response


class _Recording:
    """Mixed in before http.client.HTTPResponse: every read is kept (once, however reads nest), and the
    stream is recorded when the body ends, when the response is closed first (incomplete), or when a read raises (the
    connection broke: IncompleteRead, whose partial bytes the program got; a read timed out) with that exception."""

    def read(self, *args: Any) -> bytes:
        return self._wop_kept(super().read, args)  # type: ignore[misc]

    def read1(self, *args: Any) -> bytes:
        return self._wop_kept(super().read1, args)  # type: ignore[misc]

    def readline(self, *args: Any) -> bytes:
        return self._wop_kept(super().readline, args)  # type: ignore[misc]

    def readinto(self, buffer: Any) -> int:
        exchange, headers, chunks, state = self._wop_record
        state[0] += 1
        try:
            count = super().readinto(buffer)  # type: ignore[misc]
        except Exception as exc:
            self._wop_failed(exc)
            raise
        finally:
            state[0] -= 1
        if state[0] == 0 and count:
            chunks.append(bytes(memoryview(buffer)[:count]))
        self._wop_check_end()
        return count

    def close(self) -> None:
        super().close()  # type: ignore[misc]
        self._wop_finish(False)

    def _wop_kept(self, read: Callable[..., bytes], args: tuple) -> bytes:
        state = self._wop_record[3]
        state[0] += 1
        try:
            data = read(*args)
        except Exception as exc:
            self._wop_failed(exc)
            raise
        finally:
            state[0] -= 1
        if state[0] == 0 and data:
            self._wop_record[2].append(data)
        self._wop_check_end()
        return data

    def _wop_failed(self, exc: Exception) -> None:
        """A read raised: unless it is nested in another (which sees the exception too), the stream ended with it."""
        exchange, headers, chunks, state = self._wop_record
        if state[0] != 1:
            return
        partial = getattr(exc, "partial", None) if isinstance(exc, http.client.IncompleteRead) else None
        if partial:
            chunks.append(bytes(partial))
        self._wop_finish(describe_exception(exc))

    def _wop_check_end(self) -> None:
        if self.fp is None and self._wop_record[3][0] == 0:  # type: ignore[attr-defined]
            self._wop_finish(True)

    def _wop_finish(self, complete: Any) -> None:
        exchange, headers, chunks, state = self._wop_record
        if state[1]:
            return
        state[1] = True
        body = undo_content_encoding(b"".join(chunks), headers)
        exchange.record_response(self.status, headers, body, True, complete)  # type: ignore[attr-defined]


_RECORDING_CLASSES: dict[type, type] = {}
