"""aiohttp: record and replay at `ClientSession._request`, where every aiohttp call goes through.

That covers `session.get/post/request(...)` with or without `async with`, and the clients built on
aiohttp: litellm's default async transport (an httpx transport over aiohttp) and google-genai's
`client.aio`. A whole response is read while recording and handed on with `.read()`, `.text()`,
`.json()` and `resp.content` all working; a stream (server-sent events, JSON lines, AWS event
stream) is handed on at once and recorded as the program reads it — every chunk aiohttp receives
is kept until the end of the body (or until the response is released early). A replayed response
is a real ClientResponse over a StreamReader holding the recorded bytes.
"""

import asyncio
import collections
import inspect
from types import SimpleNamespace
from typing import Any, Callable

from openwop_cli.runtime.adapters.exchange import (
    Exchange,
    plain_headers,
    recording_session,
    to_wop_proxy,
    undo_content_encoding,
)
from openwop_cli.runtime.session import enter_boundary, exit_boundary

_MARK = "__wop_patched__"


def patch(module: Any) -> None:
    """Wrap aiohttp.ClientSession._request (idempotent); module is the `aiohttp` package."""
    session_class = module.ClientSession
    if not getattr(session_class._request, _MARK, False):
        session_class._request = _request_handler(module, session_class._request, _response_arguments(module))


def _response_arguments(module: Any) -> dict[str, Any]:
    """ClientResponse arguments this aiohttp version needs besides the usual (3.14 requires stream_writer)."""
    if "stream_writer" in inspect.signature(module.ClientResponse.__init__).parameters:
        return {"stream_writer": SimpleNamespace(output_size=0)}
    return {}


def _request_handler(module: Any, original: Callable[..., Any], response_arguments: dict[str, Any]) -> Callable[..., Any]:
    async def _request(self: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        session = recording_session()
        if session is None:
            return await original(self, method, str_or_url, **kwargs)
        url = self._build_url(str_or_url)
        if kwargs.get("params"):
            url = url.extend_query(kwargs["params"])
        if to_wop_proxy(str(url)):
            return await original(self, method, str_or_url, **kwargs)
        headers = self._prepare_headers(kwargs.get("headers"))
        exchange = Exchange(session, method, str(url), headers, _body(self, kwargs.get("data"), kwargs.get("json")))
        raise_for_status = kwargs.pop("raise_for_status", None)
        answer = exchange.begin()
        if answer is not None:
            response = _replayed_response(module, self, method.upper(), url, headers, answer, response_arguments)
        else:
            boundary = enter_boundary()
            try:
                response = await original(self, method, str_or_url, raise_for_status=False, **kwargs)
                await _record(module, exchange, response, _auto_decompress(self, kwargs))
            except BaseException as exc:
                if not exchange.finished:
                    exchange.finish(exchange.failure(exc))
                raise
            finally:
                exit_boundary(boundary)
        await _raise_for_status(self, raise_for_status, response)
        return response

    setattr(_request, _MARK, True)
    return _request


def _body(client: Any, data: Any, json: Any) -> bytes:
    """The request body as bytes for the record (the request itself is sent unchanged)."""
    if json is not None:
        dumps = client._json_serialize_bytes or client._json_serialize
        encoded = dumps(json)
        return encoded.encode() if isinstance(encoded, str) else encoded
    if data is None:
        return b""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, dict):
        from urllib.parse import urlencode

        return urlencode(data, doseq=True).encode()
    value = getattr(data, "_value", None)  # aiohttp's BytesPayload/StringPayload
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return f"<{type(data).__name__} body>".encode()


def _auto_decompress(client: Any, kwargs: dict[str, Any]) -> bool:
    chosen = kwargs.get("auto_decompress")
    return client._auto_decompress if chosen is None else chosen


async def _record(module: Any, exchange: Exchange, response: Any, decompressed: bool) -> None:
    """Record a whole response now, or a stream as it is read."""
    headers = plain_headers(response.headers)
    if exchange.is_stream(headers):
        _StreamRecording(exchange, response, headers, decompressed).start()
        return
    body = await response.read()
    exchange.finish(exchange.result(response.status, headers, body if decompressed else
                                    undo_content_encoding(body, headers), False))
    response.content = _stream_reader(module, [body])


class _Teed(collections.deque):
    """A StreamReader's buffer that keeps a copy of every chunk aiohttp feeds into it."""

    __slots__ = ("chunks",)

    def append(self, data: bytes) -> None:
        self.chunks.append(data)
        super().append(data)


class _StreamRecording:
    """A streamed response recorded chunk by chunk as it arrives; finished at the end of the body, or
    (incomplete) when the program releases or closes the response first."""

    def __init__(self, exchange: Exchange, response: Any, headers: dict[str, str], decompressed: bool) -> None:
        self.exchange, self.response, self.headers, self.decompressed = exchange, response, headers, decompressed
        self.finished = False

    def start(self) -> None:
        reader = self.response.content
        teed = _Teed(reader._buffer)
        teed.chunks = list(reader._buffer)
        self.chunks = teed.chunks
        reader._buffer = teed
        for name in ("release", "close"):
            self._finish_before(name)
        reader.on_eof(lambda: self.finish(True))

    def _finish_before(self, name: str) -> None:
        method = getattr(self.response, name)

        def finishing(*args: Any, **kwargs: Any) -> Any:
            self.finish(self.response.content.is_eof())
            return method(*args, **kwargs)

        setattr(self.response, name, finishing)

    def finish(self, complete: bool) -> None:
        if self.finished:
            return
        self.finished = True
        body = b"".join(self.chunks)
        if not self.decompressed:
            body = undo_content_encoding(body, self.headers)
        self.exchange.finish(self.exchange.result(self.response.status, self.headers, body, True, complete))


def _stream_reader(module: Any, chunks: list[bytes]) -> Any:
    """An aiohttp StreamReader holding the given bytes, at its end (what `resp.content` reads from)."""
    size = sum(len(chunk) for chunk in chunks)
    reader = module.StreamReader(_NoConnection(), max(size, 2**16), loop=asyncio.get_running_loop())
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    return reader


class _NoConnection:
    """The protocol a pre-filled StreamReader asks to pause or resume: there is no connection to throttle."""

    _reading_paused = False
    connected = False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


def _replayed_response(module: Any, client: Any, method: str, url: Any, request_headers: Any, parts: tuple,
                       response_arguments: dict[str, Any]) -> Any:
    """A real ClientResponse for a recorded answer (status, headers, body chunks)."""
    from multidict import CIMultiDict, CIMultiDictProxy

    status, headers, chunks, _streamed = parts
    info = module.RequestInfo(url, method, CIMultiDictProxy(CIMultiDict(request_headers)), url)
    response = module.ClientResponse(method, url, writer=None, continue100=None, timer=None, request_info=info,
                                     traces=[], loop=asyncio.get_running_loop(), session=client,
                                     **response_arguments)
    response.status = status
    response.reason = "OK" if status < 400 else "wop replay"
    response.version = module.HttpVersion11
    response._headers = CIMultiDictProxy(CIMultiDict(headers))
    response._raw_headers = tuple((name.encode(), value.encode()) for name, value in headers)
    response.content = _stream_reader(module, chunks)
    return response


async def _raise_for_status(client: Any, raise_for_status: Any, response: Any) -> None:
    """What aiohttp does after a response, by the request's or the session's raise_for_status."""
    if raise_for_status is None:
        raise_for_status = client._raise_for_status
    if callable(raise_for_status):
        await raise_for_status(response)
    elif raise_for_status:
        response.raise_for_status()
