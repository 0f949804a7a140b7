"""aiohttp: record and replay at `ClientSession._request`, where every aiohttp call goes through.

That covers `session.get/post/request(...)` with or without `async with`, and the clients built on
aiohttp: litellm's default async transport (an httpx transport over aiohttp) and google-genai's
`client.aio`. The response is handed on untouched (`.read()`, `.text()`, `.json()`, `async for line
in resp.content`, `content.iter_*` read it as without wop) while every chunk aiohttp receives for it
is kept: a small answer that came with its headers is recorded at once, a longer one or a stream
(server-sent events, JSON lines, AWS event stream) when its body ends, or — incomplete — when the
program releases it first. A replayed response is a real ClientResponse over a StreamReader
holding the recorded bytes.
"""

import asyncio
import collections
import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from openwop_cli.runtime.adapters.exchange import (
    Exchange,
    begun_waiting,
    plain_headers,
    recording_session,
    stream_error,
    stream_wait,
    to_wop_proxy,
    undo_content_encoding,
)
from openwop_cli.runtime.session import describe_exception, note_open_stream

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
        headers, target = self._prepare_headers(kwargs.get("headers")), str(url)
        if to_wop_proxy(target) or "upgrade" in headers:  # a websocket is no request/response (nor recorded)
            return await original(self, method, str_or_url, **kwargs)
        json = kwargs.get("json")
        exchange = Exchange(session, method, target, headers, b"" if json is not None else _body(kwargs.get("data")),
                            json=json)
        raise_for_status = kwargs.pop("raise_for_status", None)
        answer = await begun_waiting(exchange, asyncio.sleep)
        if answer is not None:
            response = _replayed_response(module, self, method.upper(), url, headers, answer, response_arguments)
        else:
            with exchange.sending():
                response = await original(self, method, str_or_url, raise_for_status=False, **kwargs)
                _record(exchange, response, _auto_decompress(self, kwargs))
        await _raise_for_status(self, raise_for_status, response)
        return response

    setattr(_request, _MARK, True)
    return _request


def _body(data: Any) -> bytes:
    """The `data=` body as bytes for the record (the request itself is sent unchanged)."""
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


def _record(exchange: Exchange, response: Any, decompressed: bool) -> None:
    """Record the response's body as aiohttp receives it: at once when it came in with the headers (a small
    answer), else when it ends (or when the program releases the response first)."""
    _BodyRecording(exchange, response, plain_headers(response.headers), decompressed).start()


class _Teed(collections.deque):
    """A StreamReader's buffer that keeps a copy of every chunk aiohttp feeds into it."""

    __slots__ = ("chunks",)

    def append(self, data: bytes) -> None:
        self.chunks.append(data)
        super().append(data)


class _BodyRecording:
    """One response's body, kept chunk by chunk as it arrives (the program reads it unchanged); finished at
    its end, or incomplete when the program releases or closes the response first (or still holds it as the process
    ends), with the exception that ended it when its connection broke or a read timed out."""

    def __init__(self, exchange: Exchange, response: Any, headers: dict[str, str], decompressed: bool) -> None:
        self.exchange, self.response, self.headers, self.decompressed = exchange, response, headers, decompressed
        self.chunks: list[bytes] = []
        self.finished = False

    def start(self) -> None:
        reader = self.response.content
        buffered = getattr(reader, "_buffer", ())  # an EmptyStreamReader (no body) has none
        self.chunks = list(buffered)
        if reader.is_eof():
            self.finish(True, in_call=True)
            return
        teed = _Teed(buffered)
        teed.chunks = self.chunks
        reader._buffer = teed
        for name in ("release", "close"):
            self._finish_before(name)
        reader.on_eof(lambda: self.finish(True))
        note_open_stream(self)

    def _finish_before(self, name: str) -> None:
        method = getattr(self.response, name)

        def finishing(*args: Any, **kwargs: Any) -> Any:
            self.finish(self.response.content.is_eof())
            return method(*args, **kwargs)

        setattr(self.response, name, finishing)

    def finish(self, complete: bool, in_call: bool = False) -> None:
        """Record the body kept so far (in_call: by the request's own task, as it came in with the headers); one that
        did not end is recorded with the exception aiohttp ended it with, if any (the reader holds it)."""
        if self.finished:
            return
        self.finished = True
        error = None if complete else self.response.content.exception()
        if error is not None:  # the connection broke (ClientPayloadError), a read timed out
            complete = describe_exception(error)
        body = b"".join(self.chunks)
        if not self.decompressed:
            body = undo_content_encoding(body, self.headers)
        streamed = self.exchange.is_stream(self.headers)
        self.exchange.record_response(self.response.status, self.headers, body, streamed, complete, in_call=in_call)


def _stream_reader(module: Any, chunks: list[bytes]) -> Any:
    """An aiohttp StreamReader holding the given bytes (what `resp.content` reads from): at its end; or, for a
    recorded stream that ended with an exception, raising it once they are read (as aiohttp's reader raises what the
    connection ended with); or, for one the program stopped reading (its timeout), ending only stream_wait after the
    answer, a read past them waiting till then."""
    size = sum(len(chunk) for chunk in chunks)
    loop = asyncio.get_running_loop()
    ending: Any = stream_error(chunks)
    wait = stream_wait(chunks) if ending is None else 0.0
    if wait > 0:
        ending = loop.time() + wait
    kind = module.StreamReader if ending is None else _ending_reader(module)
    reader = kind(_NoConnection(), max(size, 2**16), loop=loop)
    for chunk in chunks:
        reader.feed_data(chunk)
    if ending is None:
        reader.feed_eof()
    else:
        reader.ending = ending
    return reader


_ENDING_READERS: dict[type, type] = {}


def _ending_reader(module: Any) -> type:
    """module.StreamReader whose read, once the bytes fed are read, ends the stream where aiohttp's would wait for
    more from the connection: with `ending` when it is an exception, else at the loop time `ending`."""
    base = module.StreamReader
    kind = _ENDING_READERS.get(base)
    if kind is None:
        async def _wait(self: Any, func_name: str) -> None:
            if isinstance(self.ending, BaseException):
                self.set_exception(self.ending)
                raise self.ending
            await asyncio.sleep(max(0.0, self.ending - self._loop.time()))
            self.feed_eof()

        kind = _ENDING_READERS[base] = type("ReplayedStreamReader", (base,), {"_wait": _wait})
    return kind


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
