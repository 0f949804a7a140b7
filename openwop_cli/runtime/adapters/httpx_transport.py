"""httpx and httpx2 (the transport the openai and anthropic SDKs use): record and replay at the transport.

`HTTPTransport.handle_request` and `AsyncHTTPTransport.handle_async_request` are wrapped, so every
client built on them — SDKs included — goes through wop. A recorded response is handed to the
client as raw bytes exactly as they came, so decoding, errors and retries behave as without wop; a
stream is passed through chunk by chunk while it is recorded.
"""

import time
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime.adapters.exchange import (
    STREAM_TYPES,
    Exchange,
    begun_waiting,
    header_snapshot,
    recording_session,
    stream_error,
    stream_wait,
    to_wop_proxy,
)
from openwop_cli.runtime.session import describe_exception, note_open_stream

_MARK = "__wop_patched__"
_CONTENT_TYPE, _CONTENT_ENCODING = b"content-type", b"content-encoding"
_STREAM_TYPES = tuple(kind.encode("latin-1") for kind in STREAM_TYPES)


def patch(module: Any) -> None:
    """Wrap module's sync and async HTTP transports (idempotent)."""
    streams = _StreamClasses(module)
    sync_transport, async_transport = module.HTTPTransport, module.AsyncHTTPTransport
    if not getattr(sync_transport.handle_request, _MARK, False):
        sync_transport.handle_request = _sync_handler(module, sync_transport.handle_request, streams)
    if not getattr(async_transport.handle_async_request, _MARK, False):
        async_transport.handle_async_request = _async_handler(module, async_transport.handle_async_request, streams)




def _sync_handler(module: Any, original: Callable[..., Any], streams: Any) -> Callable[..., Any]:
    def handle_request(self: Any, request: Any) -> Any:
        session = recording_session()
        url = request.url
        if session is None or to_wop_proxy(url):
            return original(self, request)
        exchange = Exchange(session, request.method, url, _snapshot(request.headers), request.read(), snapshot=True)
        answer = exchange.begin()
        if answer is not None:
            return _response(module, streams, answer, request)
        with exchange.sending():
            response = original(self, request)
        headers = _snapshot(response.headers)
        content_type, encoded = _content_headers(headers)
        if content_type.startswith(_STREAM_TYPES):
            return _recording_response(module, streams.sync_recording, exchange, response, headers, encoded)
        try:
            raw = b"".join(response.stream)
        finally:
            response.stream.close()
        return _recorded_response(module, exchange, response, headers, raw, encoded)

    setattr(handle_request, _MARK, True)
    return handle_request


def _async_handler(module: Any, original: Callable[..., Any], streams: Any) -> Callable[..., Any]:
    async def handle_async_request(self: Any, request: Any) -> Any:
        session = recording_session()
        url = request.url
        if session is None or to_wop_proxy(url):
            return await original(self, request)
        exchange = Exchange(session, request.method, url, _snapshot(request.headers), await request.aread(),
                            snapshot=True)
        answer = await begun_waiting(exchange, _sleep)
        if answer is not None:
            return _response(module, streams, answer, request)
        with exchange.sending():
            response = await original(self, request)
        headers = _snapshot(response.headers)
        content_type, encoded = _content_headers(headers)
        if content_type.startswith(_STREAM_TYPES):
            return _recording_response(module, streams.async_recording, exchange, response, headers, encoded)
        try:
            raw = b"".join([chunk async for chunk in response.stream])
        finally:
            await response.stream.aclose()
        return _recorded_response(module, exchange, response, headers, raw, encoded)

    setattr(handle_async_request, _MARK, True)
    return handle_async_request


def _snapshot(headers: Any) -> Any:
    """httpx's headers as exchange.header_snapshot copies them (its list of name, lowercase name, value triples),
    taken straight from the list httpx keeps; header_snapshot's own copy if a release of httpx keeps them otherwise."""
    triples = getattr(headers, "_list", None)
    return list(triples) if type(triples) is list else header_snapshot(headers)


def _content_headers(snapshot: Any) -> tuple[bytes, bool]:
    """A response's content-type (b'' when absent, the last when repeated) and whether any of its content-encoding
    lines names a coding (httpx decodes those of every line), read in one pass (header_value twice took 8k
    instructions, this 3.8k)."""
    if type(snapshot) is dict:  # header_snapshot's plain headers
        return snapshot.get("content-type", "").encode("latin-1"), bool(snapshot.get("content-encoding"))
    content_type, encoded = b"", False
    for _, name, value in snapshot:
        if name == _CONTENT_TYPE:
            content_type = value
        elif name == _CONTENT_ENCODING and value:
            encoded = True
    return content_type, encoded


def _recording_response(module: Any, recording: Any, exchange: Exchange, response: Any, headers: Any,
                        encoded: bool) -> Any:
    """The response handed on while its stream is recorded as the client reads it."""
    def done(body: bytes, complete: Any) -> None:
        decoded = _decoded(module, response, encoded, body)
        exchange.record_response(response.status_code, headers, decoded, True, complete)

    return module.Response(response.status_code, headers=response.headers, stream=recording(response.stream, done),
                           extensions=response.extensions)


def _recorded_response(module: Any, exchange: Exchange, response: Any, headers: Any, raw: bytes,
                       encoded: bool) -> Any:
    """Record a whole response and hand the client the same response, its raw bytes now read."""
    decoded = _decoded(module, response, encoded, raw)
    exchange.record_response(response.status_code, headers, decoded, False, in_call=True)
    response.stream = module.ByteStream(raw)
    return response


def _decoded(module: Any, response: Any, encoded: bool, raw: bytes) -> bytes:
    """The body as the client will see it (gzip, deflate, brotli… undone by the library's own decoders, when the
    response has a content-encoding)."""
    if not encoded:
        return raw
    return module.Response(response.status_code, headers=response.headers, stream=module.ByteStream(raw)).read()


def _response(module: Any, streams: Any, parts: tuple, request: Any) -> Any:
    status, headers, chunks, streamed = parts
    stream = streams.replayed(chunks) if streamed else module.ByteStream(b"".join(chunks))
    return module.Response(status, headers=headers, stream=stream, request=request)


async def _sleep(seconds: float) -> None:
    """httpx's event loop's sleep (anyio's: asyncio or trio)."""
    import anyio

    await anyio.sleep(seconds)


def _raise_stream_error(chunks: list[bytes]) -> None:
    """After a replayed stream's last chunk: the exception that ended the recorded one (its connection broke, a read
    timed out), raised again as the client's transport raised it; nothing for a stream that ended."""
    error = stream_error(chunks)
    if error is not None:
        raise error


class _StreamClasses:
    """The byte-stream types for one module (httpx or httpx2): recording and replaying streams."""

    def __init__(self, module: Any) -> None:
        sync_base, async_base = module.SyncByteStream, module.AsyncByteStream

        class SyncRecording(sync_base):  # type: ignore[misc, valid-type]
            def __init__(self, inner: Any, done: Callable[[bytes, bool], None]) -> None:
                self.inner, self.done, self.chunks, self.finished = inner, done, [], False
                note_open_stream(self)

            def __iter__(self) -> Any:
                try:
                    for chunk in self.inner:
                        self.chunks.append(chunk)
                        yield chunk
                except Exception as exc:  # the connection broke, a read timed out: the stream ended with it
                    self.finish(describe_exception(exc))
                    raise
                self.finish(True)

            def close(self) -> None:
                self.inner.close()
                self.finish(False)

            def finish(self, complete: Any) -> None:
                if not self.finished:
                    self.finished = True
                    self.done(b"".join(self.chunks), complete)

        class AsyncRecording(async_base):  # type: ignore[misc, valid-type]
            def __init__(self, inner: Any, done: Callable[[bytes, bool], None]) -> None:
                self.inner, self.done, self.chunks, self.finished = inner, done, [], False
                note_open_stream(self)

            async def __aiter__(self) -> Any:
                try:
                    async for chunk in self.inner:
                        self.chunks.append(chunk)
                        yield chunk
                except Exception as exc:  # as in SyncRecording (a cancellation is no error: the program stopped)
                    self.finish(describe_exception(exc))
                    raise
                self.finish(True)

            async def aclose(self) -> None:
                await self.inner.aclose()
                self.finish(False)

            def finish(self, complete: Any) -> None:
                if not self.finished:
                    self.finished = True
                    self.done(b"".join(self.chunks), complete)

        class Replayed(sync_base, async_base):  # type: ignore[misc, valid-type]
            def __init__(self, chunks: list[bytes]) -> None:
                self.chunks = chunks
                self.ends_at = time.monotonic() + stream_wait(chunks)

            def __iter__(self) -> Any:
                yield from self.chunks
                _raise_stream_error(self.chunks)

            async def __aiter__(self) -> Any:
                for chunk in self.chunks:
                    yield chunk
                _raise_stream_error(self.chunks)
                delay = self.ends_at - time.monotonic()
                if delay > 0:  # the program stopped reading the recorded stream (its timeout): it waits as then
                    await _sleep(delay)

        self.sync_recording, self.async_recording, self.replayed = SyncRecording, AsyncRecording, Replayed
