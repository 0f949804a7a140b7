"""http.client: record and replay at `HTTPConnection.request` + `getresponse`, the standard library's client.

This is how `urllib.request.urlopen` and anything built directly on http.client is recorded (HTTPS
included: HTTPSConnection inherits both). urllib3 and requests sit on http.client too, but they
record at their own adapters and this one passes their calls through. The request is recorded when
it is sent and answered (in a replay) without connecting; the response is read whole while
recording and handed on as a fresh HTTPResponse over the same bytes, or — for a stream — handed on
as it is and recorded as the program reads it.
"""

import http.client
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime.adapters.exchange import (
    FRAMING_HEADERS,
    Exchange,
    absolute_url,
    body_bytes,
    made_http_response,
    plain_headers,
    recording_session,
    sendable_body,
    to_wop_proxy,
    undo_content_encoding,
)
from openwop_cli.runtime.session import describe_exception, note_open_stream

_MARK = "__wop_patched__"
_PENDING = "_wop_pending"


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
            return made_http_response(self.response_class, exchange.method, status,
                                      "OK" if status < 400 else "wop replay", headers, chunks, streamed)
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
    kept = [(name, value) for name, value in response.msg.items() if name.lower() not in FRAMING_HEADERS]
    return made_http_response(connection.response_class, exchange.method, response.status, response.reason, kept,
                              [raw], False)


def _recording(exchange: Exchange, response: Any, headers: dict[str, str]) -> Any:
    """The live response, turned into a subclass of its own class that keeps what the program reads."""
    kind = type(response)
    recording = _RECORDING_CLASSES.get(kind)
    if recording is None:
        recording = _RECORDING_CLASSES[kind] = type(f"Recording{kind.__name__}", (_Recording, kind), {})
    response.__class__ = recording
    response._wop_record = (exchange, headers, [], [0, False])
    note_open_stream(response)  # recorded as read so far if the program still holds it as it ends
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

    def finish(self, complete: Any) -> None:
        """(session.finish_open_streams' call, as the process ends.) Record what was read so far."""
        self._wop_finish(complete)

    def _wop_finish(self, complete: Any) -> None:
        exchange, headers, chunks, state = self._wop_record
        if state[1]:
            return
        state[1] = True
        body = undo_content_encoding(b"".join(chunks), headers)
        exchange.record_response(self.status, headers, body, True, complete)  # type: ignore[attr-defined]


_RECORDING_CLASSES: dict[type, type] = {}
