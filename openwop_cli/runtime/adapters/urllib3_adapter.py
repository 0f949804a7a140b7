"""urllib3: record and replay at `HTTPConnectionPool.urlopen`, the call every urllib3 request goes through.

This is how botocore (boto3) and anything else built on urllib3 is recorded; requests records at
its own adapter, above, and this one then passes its calls through. A whole response is read while
recording and handed on as a fresh HTTPResponse over the same raw bytes, so decoding, `.data`,
`.stream()` and `release_conn()` behave as without wop. A stream (server-sent events, JSON lines,
the AWS event stream of Bedrock's ConverseStream) is handed on at once and recorded as the program
reads it. A replayed response is an HTTPResponse over the recorded bytes.
"""

import io
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime.adapters.exchange import (
    Exchange,
    absolute_url,
    body_bytes,
    made_http_response,
    plain_headers,
    recording_session,
    sendable_body,
    stream_error,
    to_wop_proxy,
    undo_content_encoding,
)
from openwop_cli.runtime.session import describe_exception, note_open_stream

_MARK = "__wop_patched__"
_PRELOAD, _DECODE = 8, 9  # positions of preload_content and decode_content after `headers` in urlopen


def patch(module: Any) -> None:
    """Wrap urllib3's HTTPConnectionPool.urlopen (idempotent); module is the `urllib3` package."""
    pool = module.connectionpool.HTTPConnectionPool
    if not getattr(pool.urlopen, _MARK, False):
        pool.urlopen = _urlopen_handler(module, pool.urlopen)


def _urlopen_handler(module: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    def urlopen(self: Any, method: str, url: str, body: Any = None, headers: Any = None, *args: Any,
                **kwargs: Any) -> Any:
        session = recording_session()
        if session is None:
            return original(self, method, url, body, headers, *args, **kwargs)
        full_url = absolute_url(self.scheme, self.host, self.port, url)
        if to_wop_proxy(full_url):
            return original(self, method, url, body, headers, *args, **kwargs)
        body = sendable_body(body)
        exchange = Exchange(session, method, full_url, self.headers if headers is None else headers, body_bytes(body))
        preload = args[_PRELOAD] if len(args) > _PRELOAD else kwargs.get("preload_content", True)
        decode = args[_DECODE] if len(args) > _DECODE else kwargs.get("decode_content", True)
        answer = exchange.begin()
        if answer is not None:
            return _replayed_response(module, answer, method, full_url, preload, decode)
        with exchange.sending():
            return _recorded(module, exchange, original(self, method, url, body, headers, *args, **kwargs),
                             preload, decode)

    setattr(urlopen, _MARK, True)
    return urlopen


def _recorded(module: Any, exchange: Exchange, response: Any, preload: bool, decode: bool) -> Any:
    """Record the response (now, or as a stream is read) and return what the caller reads it from."""
    headers = plain_headers(response.headers)
    streamed = exchange.is_stream(headers)
    if preload:
        body = response.data or b""
        exchange.record_response(response.status, headers, body if decode else undo_content_encoding(body, headers),
                                 streamed, in_call=True)
        return response
    if streamed:
        recording = _RecordingFile(response._fp, lambda raw, complete: exchange.record_response(
            response.status, headers, raw if recording.decoded else undo_content_encoding(raw, headers), True,
            complete))
        response._fp = recording
        response.read_chunked = recording.reading_chunked(response.read_chunked, response.decode_content)
        note_open_stream(recording)  # recorded as read so far if the program still holds it as it ends
        return response
    raw = response.read(decode_content=False)
    response.release_conn()
    exchange.record_response(response.status, headers, undo_content_encoding(raw, headers), False, in_call=True)
    return module.HTTPResponse(body=io.BytesIO(raw), headers=response.headers, status=response.status,
                               version=response.version, reason=response.reason, preload_content=False,
                               decode_content=decode, original_response=response._original_response,
                               retries=response.retries, enforce_content_length=response.enforce_content_length,
                               request_method=exchange.method, request_url=response.url)


class _RecordingFile:
    """The http.client response a streamed urllib3 response reads from, keeping what is read: through `read()`, or,
    for a chunked body, as urllib3's `read_chunked` yields each chunk the moment it arrives (reading_chunked), as it
    does without wop (it reads the chunks from the socket file, `fp`, itself)."""

    def __init__(self, inner: Any, done: Callable[[bytes, Any], None]) -> None:
        self._inner, self._done, self._chunks, self._finished = inner, done, [], False
        self.decoded = False  # the chunks kept are the body decoded (read_chunked's, decode_content on)
        self._in_chunks = False

    def reading_chunked(self, read_chunked: Callable[..., Any], decode_default: bool) -> Callable[..., Any]:
        """The response's read_chunked, keeping the chunks it yields and what ended them."""
        def kept_chunks(amt: int | None = None, decode_content: bool | None = None) -> Any:
            self.decoded = decode_default if decode_content is None else decode_content
            self._in_chunks = True  # urllib3 closes the file as an error ends the chunks: that error is what ended them
            try:
                for chunk in read_chunked(amt, decode_content=decode_content):
                    if chunk:
                        self._chunks.append(chunk)
                    yield chunk
            except Exception as exc:  # the connection broke, a read timed out: the stream ended with it
                self.finish(describe_exception(exc))
                raise
            finally:
                self._in_chunks = False
            self.finish(True)

        return kept_chunks

    def read(self, amt: int | None = None) -> bytes:
        return self._kept_read(self._inner.read, () if amt is None else (amt,))

    def read1(self, amt: int = -1) -> bytes:
        return self._kept_read(self._inner.read1, (amt,))

    def _kept_read(self, read: Callable[..., bytes], args: tuple) -> bytes:
        try:
            data = read(*args)
        except Exception as exc:  # the connection broke (IncompleteRead), a read timed out: the stream ended with it
            self.finish(describe_exception(exc))
            raise
        return self._kept(data)

    def close(self) -> None:
        self._inner.close()
        if not self._in_chunks:
            self.finish(False)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _kept(self, data: bytes) -> bytes:
        if data:
            self._chunks.append(data)
        if not data or self._inner.isclosed():
            self.finish(True)
        return data

    def finish(self, complete: Any) -> None:
        """Record what was read: complete True, False (closed first, or still open as the process ends:
        session.finish_open_streams), or describe_exception's data of what ended it."""
        if not self._finished:
            self._finished = True
            self._done(b"".join(self._chunks), complete)


def _replayed_response(module: Any, parts: tuple, method: str, url: str, preload: bool, decode: bool) -> Any:
    """An HTTPResponse over the recorded bytes; for a recorded stream that broke, a chunked one whose last chunk is
    missing, so urllib3 yields the chunks and then raises what it raised (ProtocolError) as it did."""
    status, headers, chunks, _streamed = parts
    reason = "OK" if status < 400 else "wop replay"
    if stream_error(chunks) is None:
        body, original = io.BytesIO(b"".join(chunks)), None
    else:
        import http.client

        body = original = made_http_response(http.client.HTTPResponse, method, status, reason, headers, chunks, True)
        headers = [*headers, ("Transfer-Encoding", "chunked")]
    return module.HTTPResponse(body=body, headers=module._collections.HTTPHeaderDict(headers), status=status,
                               reason=reason, preload_content=preload, decode_content=decode, request_method=method,
                               request_url=url, original_response=original)
