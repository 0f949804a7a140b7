"""httpx and httpx2 (the transport the openai and anthropic SDKs use): record and replay at the transport.

`HTTPTransport.handle_request` and `AsyncHTTPTransport.handle_async_request` are wrapped, so every
client built on them — SDKs included — goes through wop. A recorded response is handed to the
client as raw bytes exactly as they came, so decoding, errors and retries behave as without wop; a
stream is passed through chunk by chunk while it is recorded.
"""

from typing import Any, Callable

from openwop_cli.runtime.adapters.exchange import Exchange, divergence_parts, response_parts
from openwop_cli.runtime.replaying import ReplayDivergenceError
from openwop_cli.runtime.session import UNRESOLVED, _state, current

_MARK = "__wop_patched__"


def patch(module: Any) -> None:
    """Wrap module's sync and async HTTP transports (idempotent)."""
    streams = _StreamClasses(module)
    sync_transport, async_transport = module.HTTPTransport, module.AsyncHTTPTransport
    if not getattr(sync_transport.handle_request, _MARK, False):
        sync_transport.handle_request = _sync_handler(module, sync_transport.handle_request, streams)
    if not getattr(async_transport.handle_async_request, _MARK, False):
        async_transport.handle_async_request = _async_handler(module, async_transport.handle_async_request, streams)


def _session() -> Any:
    session = _state["session"]
    return current() if session is UNRESOLVED else session


def _exchange(session: Any, request: Any, body: bytes) -> Exchange:
    return Exchange(session, request.method, str(request.url), request.headers, body)


def _sync_handler(module: Any, original: Callable[..., Any], streams: Any) -> Callable[..., Any]:
    def handle_request(self: Any, request: Any) -> Any:
        session = _session()
        if session is None:
            return original(self, request)
        exchange = _exchange(session, request, request.read())
        finish = exchange.session.record
        if session.replayer is not None:
            try:
                served = exchange.replay()
            except ReplayDivergenceError as exc:
                return _response(module, streams, divergence_parts(exc), request)
            if not served.live:
                return _response(module, streams, response_parts(served.result), request)
            finish = lambda _type, data: served.finish(data)  # noqa: E731 (fork: record the live answer)
        else:
            exchange.record_request()
        try:
            response = original(self, request)
        except BaseException as exc:
            finish(exchange.result_type, exchange.failure(exc))
            raise
        if exchange.is_stream(response.headers):
            recording = streams.sync_recording(response.stream, lambda body, complete: finish(
                exchange.result_type, exchange.result(response.status_code, response.headers,
                                                      _decoded(module, response, body), True, complete)))
            return module.Response(response.status_code, headers=response.headers, stream=recording,
                                   extensions=response.extensions)
        try:
            raw = b"".join(response.stream)
        finally:
            response.stream.close()
        finish(exchange.result_type,
               exchange.result(response.status_code, response.headers, _decoded(module, response, raw), False))
        return module.Response(response.status_code, headers=response.headers, stream=module.ByteStream(raw),
                               extensions=response.extensions)

    setattr(handle_request, _MARK, True)
    return handle_request


def _async_handler(module: Any, original: Callable[..., Any], streams: Any) -> Callable[..., Any]:
    async def handle_async_request(self: Any, request: Any) -> Any:
        session = _session()
        if session is None:
            return await original(self, request)
        exchange = _exchange(session, request, await request.aread())
        finish = exchange.session.record
        if session.replayer is not None:
            try:
                served = exchange.replay()
            except ReplayDivergenceError as exc:
                return _response(module, streams, divergence_parts(exc), request)
            if not served.live:
                return _response(module, streams, response_parts(served.result), request)
            finish = lambda _type, data: served.finish(data)  # noqa: E731
        else:
            exchange.record_request()
        try:
            response = await original(self, request)
        except BaseException as exc:
            finish(exchange.result_type, exchange.failure(exc))
            raise
        if exchange.is_stream(response.headers):
            recording = streams.async_recording(response.stream, lambda body, complete: finish(
                exchange.result_type, exchange.result(response.status_code, response.headers,
                                                      _decoded(module, response, body), True, complete)))
            return module.Response(response.status_code, headers=response.headers, stream=recording,
                                   extensions=response.extensions)
        try:
            raw = b"".join([chunk async for chunk in response.stream])
        finally:
            await response.stream.aclose()
        finish(exchange.result_type,
               exchange.result(response.status_code, response.headers, _decoded(module, response, raw), False))
        return module.Response(response.status_code, headers=response.headers, stream=module.ByteStream(raw),
                               extensions=response.extensions)

    setattr(handle_async_request, _MARK, True)
    return handle_async_request


def _decoded(module: Any, response: Any, raw: bytes) -> bytes:
    """The body as the client will see it (gzip, deflate, brotli… undone by the library's own decoders)."""
    if "content-encoding" not in response.headers:
        return raw
    return module.Response(response.status_code, headers=response.headers, stream=module.ByteStream(raw)).read()


def _response(module: Any, streams: Any, parts: tuple, request: Any) -> Any:
    status, headers, chunks, streamed = parts
    stream = streams.replayed(chunks) if streamed else module.ByteStream(b"".join(chunks))
    return module.Response(status, headers=headers, stream=stream, request=request)


class _StreamClasses:
    """The byte-stream types for one module (httpx or httpx2): recording and replaying streams."""

    def __init__(self, module: Any) -> None:
        sync_base, async_base = module.SyncByteStream, module.AsyncByteStream

        class SyncRecording(sync_base):  # type: ignore[misc, valid-type]
            def __init__(self, inner: Any, done: Callable[[bytes, bool], None]) -> None:
                self.inner, self.done, self.chunks, self.finished = inner, done, [], False

            def __iter__(self) -> Any:
                for chunk in self.inner:
                    self.chunks.append(chunk)
                    yield chunk
                self._finish(True)

            def close(self) -> None:
                self.inner.close()
                self._finish(False)

            def _finish(self, complete: bool) -> None:
                if not self.finished:
                    self.finished = True
                    self.done(b"".join(self.chunks), complete)

        class AsyncRecording(async_base):  # type: ignore[misc, valid-type]
            def __init__(self, inner: Any, done: Callable[[bytes, bool], None]) -> None:
                self.inner, self.done, self.chunks, self.finished = inner, done, [], False

            async def __aiter__(self) -> Any:
                async for chunk in self.inner:
                    self.chunks.append(chunk)
                    yield chunk
                self._finish(True)

            async def aclose(self) -> None:
                await self.inner.aclose()
                self._finish(False)

            def _finish(self, complete: bool) -> None:
                if not self.finished:
                    self.finished = True
                    self.done(b"".join(self.chunks), complete)

        class Replayed(sync_base, async_base):  # type: ignore[misc, valid-type]
            def __init__(self, chunks: list[bytes]) -> None:
                self.chunks = chunks

            def __iter__(self) -> Any:
                yield from self.chunks

            async def __aiter__(self) -> Any:
                for chunk in self.chunks:
                    yield chunk

        self.sync_recording, self.async_recording, self.replayed = SyncRecording, AsyncRecording, Replayed
