"""One HTTP request/response as wop records and replays it, whatever library sent it.

A recognised LLM call becomes llm_request/llm_response (provider, model, the request body, the
recipe cacheKey, stop reason, usage, and for a stream every event plus the assembled message);
any other request becomes an `http` tool call (method, URL without secrets, body; the result has
status, headers and body). Credentials never enter the events: authorization and key headers are
not recorded and secret query parameters are masked (the sink's redaction runs on top).
"""

import io
import os
from typing import Any, NamedTuple

import orjson

from openwop_cli.format.credentials import CREDENTIAL_HEADERS
from openwop_cli.replay.errors import ReplayDivergenceError
from openwop_cli.runtime.adapters import eventstream, sse
from openwop_cli.runtime.callsite import program_site
from openwop_cli.runtime.livecalls import end_live_call, live_call
from openwop_cli.runtime.providers import (
    LLMCall,
    kept_request_keys,
    recognize,
    stop_reason,
    url_without_secrets,
    usage,
)
from openwop_cli.runtime.session import (
    UNRESOLVED,
    Session,
    _inside_boundary,
    _state,
    current,
    describe_exception,
    enter_boundary,
    exit_boundary,
    new_call_id,
)
from openwop_cli.wire.environ import ENV_PROXY
from openwop_cli.wire.jsonable import dumps

_UNRECORDED_HEADERS = CREDENTIAL_HEADERS | {"content-length", "content-encoding", "transfer-encoding", "connection",
                                             "keep-alive"}
STREAM_TYPES = ("text/event-stream", "application/x-ndjson", eventstream.CONTENT_TYPE)
DIVERGENCE_STATUS = 400
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PROXY_PREFIX = f"http://{os.environ[ENV_PROXY]}/" if os.environ.get(ENV_PROXY) else None


def recording_session() -> Session | None:
    """The session an adapter records into; None when nothing records, or when a boundary already open in
    this thread/task records the call (wop.llm_call, @wop.tool, the adapter above this one)."""
    session = _state["session"]
    if session is UNRESOLVED:
        session = current()
    if session is None or _inside_boundary.get():  # session.inside_boundary's test, a call less on every request
        return None
    return session


def url_text(url: Any) -> str:
    """str(url) for a request's URL (a str, or an immutable object whose str() is the URL). httpx's URL makes its
    string anew each time from its parsed parts (10k instructions): the string is remembered by those parts, which
    make it (a dict lookup: 1k)."""
    if type(url) is str:
        return url
    parts = getattr(url, "_uri_reference", None)  # httpx's ParseResult: a named tuple of str, int and None
    if not isinstance(parts, tuple):
        return str(url)
    text = _url_texts.get(parts)
    if text is None:
        if len(_url_texts) >= _URL_TEXTS_KEPT:
            _url_texts.clear()
        text = _url_texts[parts] = str(url)
    return text


_URL_TEXTS_KEPT = 256  # a program calling ever new URLs starts over now and then
_url_texts: dict[tuple, str] = {}


def to_wop_proxy(url: Any) -> bool:
    """True for a request to the --proxy (url: a str, or an object whose str() is the URL): the proxy records it,
    the adapter passes it through."""
    return _PROXY_PREFIX is not None and str(url).startswith(_PROXY_PREFIX)


class Exchange:
    """See the module docstring. Build it from the request; then record or replay the response.

    In a capture the calling thread keeps the raw pieces of the call (method, URL, headers, body bytes) and
    takes what only it can: the call's number, time, origin and call site. The events are built from those
    pieces later by RecordedRequest, off the program's thread: under `wop capture` the pieces go over the
    channel as they are and the parent builds the events (with the same RecordedRequest); with an in-process
    sink, or in a forked child that finishes a call its parent began, the sender builds them. A replay builds
    the request at once: it is matched by it.
    """

    def __init__(self, session: Session, method: str, url: Any, headers: Any, body: bytes, *,
                 json: Any = None, snapshot: bool = False) -> None:
        """url: a str, or an immutable object whose str() is the URL (httpx's URL: made a str when the event is);
        headers: the request's, in any library's form (copied as they are now: header_snapshot), or (snapshot) a
        header_snapshot the adapter made itself, taken as it is; json: the body as a JSON value when the library was
        handed one (then body is not read)."""
        self.session = session
        self.method = method.upper()
        self._url = url
        self._headers = headers if snapshot else header_snapshot(headers)
        self._body = (body or b"") if json is None else dumps(json)
        self._body_is_json = json is not None
        self._call = session.new_call_number()
        self._request: RecordedRequest | None = None
        self._raw_by: int | None = None  # the pid of the process that queued the request as raw pieces
        self._live: Any = None
        self._boundary: Any = None
        self._passing: Any = None
        self._origin: dict[str, Any] | None = None  # the request's without its site, in a capture not sent raw
        self.finished = False

    @property
    def llm(self) -> LLMCall | None:
        """The LLM call the request is, or None for any other request."""
        return self._built().llm

    # ---- capture --------------------------------------------------------------------------------

    def is_stream(self, headers: Any) -> bool:
        """True when the answer (its header_snapshot) comes as server-sent events or JSON lines."""
        return header_value(headers, "content-type").startswith(STREAM_TYPES)

    def record_response(self, status: int, headers: Any, body: bytes, streamed: bool, complete: Any = True, *,
                        in_call: bool = False) -> None:
        """Record the answer: its decoded body (whole, or a stream's bytes), its headers' header_snapshot. complete:
        True, False (the program stopped reading first), or describe_exception's data of the exception that ended the
        stream (its connection broke). in_call: recorded by the call that sent the request (its thread and task), whose
        origin it then shares."""
        self.finished = True
        if self._live is not None:
            self._live.finish(self._built().response_data(status, _plain(headers), body, streamed, complete))
            return
        body = body if type(body) is bytes else bytes(body or b"")  # what the program holds may change; bytes do not
        session = self.session
        if self._raw_by == session.pid:
            prefix, number = self._call
            session.record_raw(RAW_RESPONSE, (prefix, number, status, headers, streamed, complete), body,
                               answer=in_call)
        else:  # the request was not queued raw by this process (a forked child finishing it): built here
            session.record_later(Exchange._response_event, (self, status, headers, body, streamed, complete),
                                 size=len(body), origin=self._origin if in_call else None)

    def record_failure(self, exc: BaseException) -> None:
        """Record that the request never got an answer (connection refused, timeout)."""
        self.finished = True
        error = describe_exception(exc)
        if self._live is not None:
            self._live.finish(self._built().failure_data(error))
            return
        session = self.session
        if self._raw_by == session.pid:
            prefix, number = self._call
            session.record_raw(RAW_FAILURE, (prefix, number, error), b"", answer=True)
        else:
            session.record_later(Exchange._failure_event, (self, error), size=0)

    # ---- the call ------------------------------------------------------------------------------

    def begin(self) -> tuple | None:
        """Before sending: in a replay, the response to hand back instead (None when the call runs live,
        as in a fork), or the recorded error raised; in a capture, records the request and returns None."""
        session = self.session
        if session.replayer is None:
            site = program_site(2)  # from above the adapter that called begin: a frame of wop's, never the program's
            body = self._body
            if session.sends_raw and type(body) is bytes:
                self._raw_by = session.pid
                prefix, number = self._call
                session.record_raw(RAW_REQUEST, (prefix, number, self.method, url_text(self._url), self._headers,
                                                 self._body_is_json), body, site=site)
            else:
                self._origin = session.record_later(Exchange._request_event, (self,), size=len(body), site=site)
            return None
        request = self._built()
        if request.llm is not None:  # matched by its keys; a capture's writer adds them (with_request_keys)
            request.data.update(kept_request_keys(request.llm.provider, request.llm.model, request.data["request"],
                                                  session.replayer.source.redactor))
        try:
            served = self.session.replayer.exchange(request.llm is not None, request.data, self._sent(request))
        except ReplayDivergenceError as exc:
            return divergence_parts(exc)
        if not served.live:
            return response_parts(served.value(), request.llm.stream if request.llm is not None else None)
        self._live = served
        return None

    def sending(self) -> "Exchange":
        """`with exchange.sending(): <the real call>`: while it runs a boundary is open, so the libraries below record
        nothing of their own, and a call that fails (refused, timed out) has its failure recorded as the answer."""
        return self

    def __enter__(self) -> None:
        self._boundary = enter_boundary()
        self._passing = live_call() if self._live is not None else None  # a replay runs this call live

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> None:
        exit_boundary(self._boundary)
        if self._passing is not None:
            end_live_call(self._passing)
        if exc is not None and not self.finished:
            self.record_failure(exc)

    # ---- the events, built here when they are not sent raw for `wop capture` to build -----------------
    # (recorded as Exchange's functions with the exchange first among their arguments: a bound method would be one
    # more object made on the program's thread and freed on the sender's for every event)

    def _sent(self, request: "RecordedRequest") -> bytes | None:
        """An LLM request's body as sent, when the recorded body is the JSON object or array read from these bytes
        (replay.compare looks for them in the recorded line first)."""
        body = request.data.get("request")
        return self._body if request.llm is not None and type(self._body) is bytes and type(body) in (dict, list) \
            else None

    def _built(self) -> "RecordedRequest":
        """The request as it is recorded (built once)."""
        request = self._request
        if request is None:
            request = self._request = RecordedRequest.of(self._call, self.method, url_text(self._url),
                                                         _plain(self._headers), self._body, self._body_is_json)
        return request

    def _request_event(self) -> tuple[str, dict[str, Any]]:
        request = self._built()
        return request.event_type, request.data

    def _response_event(self, status: int, headers: Any, body: bytes, streamed: bool,
                        complete: bool) -> tuple[str, dict[str, Any]]:
        request = self._built()
        return request.result_type, request.response_data(status, _plain(headers), body, streamed, complete)

    def _failure_event(self, error: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        request = self._built()
        return request.result_type, request.failure_data(error)


class RecordedRequest(NamedTuple):
    """A request as it is recorded (what it is, its call id, its event's type and data) and the data of its
    answer's event: the one builder of an exchange's events, in the recorded program and in `wop capture`."""

    llm: LLMCall | None
    call_id: str
    event_type: str
    result_type: str
    context: dict[str, Any]
    data: dict[str, Any]

    @classmethod
    def of(cls, call: tuple[str, int], method: str, url: str, headers: dict[str, str], body: bytes,
           body_is_json: bool) -> "RecordedRequest":
        """Built from the raw pieces: call (Session.new_call_number), headers from plain_headers (or kept_headers),
        body the JSON of a value when body_is_json."""
        body_value = orjson.loads(body) if body_is_json else _body_value(body, headers.get("content-type"))
        url = url_without_secrets(url)
        llm = recognize(method, url, body_value, headers.get("user-agent", ""))
        call_id = new_call_id("llm" if llm else "h", call)
        if llm is not None:
            context = {"provider": llm.provider, "model": llm.model, "callId": call_id}
            return cls(llm, call_id, "llm_request", "llm_response", context,
                       {**context, "request": body_value, "http": {"method": method, "url": url}})
        return cls(None, call_id, "tool_call", "tool_result", {"callId": call_id},
                   {"name": "http", "callId": call_id, "args": {"method": method, "url": url, "body": body_value},
                    "headers": kept_headers(headers)})

    def response_data(self, status: int, headers: dict[str, str], body: bytes, streamed: bool,
                      complete: bool) -> dict[str, Any]:
        """The answer's event data for a decoded body (whole, or a stream's bytes); headers as for `of`."""
        kept = kept_headers(headers)
        llm = self.llm
        if llm is None:
            value = _answer_value(body, headers.get("content-type"))
            answer = {"callId": self.call_id, "ok": status < 400,
                      "result": {"status": status, "headers": kept, "body": value, **json_style(body, value)}}
            return answer if complete is True or not streamed else _ended_early(answer, complete)
        data: dict[str, Any] = {**self.context, "ok": status < 400, "status": status, "headers": kept}
        if streamed:
            if (headers.get("content-type") or "").startswith(eventstream.CONTENT_TYPE):
                stream_format, events = "eventstream", eventstream.split_frames(body)
                message = eventstream.assemble(events)
            else:
                stream_format = "ndjson" if llm.ndjson else "sse"
                events = sse.split_lines(body) if llm.ndjson else sse.split_events(body)
                message = sse.assemble(llm.provider, events)
            data.update(stopReason=message["stopReason"], usage=message["usage"], response=message, stream=events,
                        streamFormat=stream_format)
            if complete is not True:
                _ended_early(data, complete)
        else:
            value = _answer_value(body, headers.get("content-type"))
            data.update(stopReason=stop_reason(value), usage=usage(value), response=value, **json_style(body, value))
        return data

    def failure_data(self, error: dict[str, Any]) -> dict[str, Any]:
        """The answer's event data when the request never got one (error: describe_exception's)."""
        return {**self.context, "ok": False, "error": error}


def _ended_early(data: dict[str, Any], complete: Any) -> dict[str, Any]:
    """A streamed answer's event data marked as one that did not end: the program stopped reading it (complete
    False), or an exception ended it (describe_exception's data: its connection broke), which a replay raises again
    after the chunks."""
    data["streamComplete"] = False
    if isinstance(complete, dict):
        data["streamError"] = complete
    return data


RAW_REQUEST, RAW_RESPONSE, RAW_FAILURE = "raw_request", "raw_response", "raw_failure"


class RawExchanges:
    """`wop capture`'s end of the exchanges a recorded process sends raw (Exchange through Session.record_raw): their
    events, built by RecordedRequest as the process would have built them. A request is kept (without its data,
    with the origin its answer shares) until its answer comes."""

    def __init__(self) -> None:
        self._requests: dict[tuple[str, int], tuple[RecordedRequest, dict[str, Any]]] = {}

    def event(self, kind: str, pieces: tuple, body: bytes,
              origin: bytes | None) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
        """(type, data, origin) of the event for raw pieces of a kind (RAW_*) and their origin (Session.record_raw's:
        JSON, or None for an answer that has its request's without the site); None for an unknown kind, an origin
        that is not a JSON object, or an answer to no request sent raw."""
        call = (pieces[0], pieces[1])
        where = None if origin is None else orjson.loads(origin)
        if where is not None and type(where) is not dict:
            return None
        if kind == RAW_REQUEST:
            if where is None:
                return None
            method, url, headers, body_is_json = pieces[2:]
            request = RecordedRequest.of(call, method, url, _plain(headers), body, body_is_json)
            self._requests[call] = (request._replace(data={}), {key: value for key, value in where.items()
                                                                 if key != "site"})
            return request.event_type, request.data, where
        if kind not in (RAW_RESPONSE, RAW_FAILURE):
            return None
        kept = self._requests.pop(call, None)
        if kept is None:
            return None
        request, request_origin = kept
        where = request_origin if where is None else where
        if kind == RAW_RESPONSE:
            status, headers, streamed, complete = pieces[2:]
            return (request.result_type, request.response_data(status, _plain(headers), body, streamed, complete),
                    where)
        return request.result_type, request.failure_data(pieces[2]), where


def response_parts(recorded: dict[str, Any],
                   stream: bool | None = None) -> tuple[int, list[tuple[str, str]], list[bytes], bool]:
    """(status, headers, body chunks, streamed) to hand back for a recorded response event's data (stream: whether
    today's request asks for a stream, which an answer imported from a trace is served as)."""
    if recorded.get("fromTrace") is True:
        return _traced_answer_parts(recorded, stream)
    if "result" in recorded and "status" not in recorded:
        result = recorded.get("result") or {}
        body = _body_bytes(result.get("body"), result)
        if recorded.get("streamComplete") is False:  # an http tool's stream that did not end: served as one
            return result.get("status", 200), _headers_for(result.get("headers"), None), _recorded_chunks(
                [body], recorded), True
        return result.get("status", 200), _headers_for(result.get("headers"), len(body)), [body], False
    stream = recorded.get("stream")
    if stream is not None:
        stream_format = recorded.get("streamFormat")
        if stream_format == "eventstream":
            chunks = [eventstream.frame_bytes(event) for event in stream]
        else:
            chunks = [sse.event_bytes(event, stream_format == "ndjson") for event in stream]
        if recorded.get("streamComplete") is False:
            chunks = _recorded_chunks(chunks, recorded)
        return recorded.get("status", 200), _headers_for(recorded.get("headers"), None), chunks, True
    body = _body_bytes(recorded.get("response"), recorded)
    return recorded.get("status", 200), _headers_for(recorded.get("headers"), len(body)), [body], False


def _traced_answer_parts(recorded: dict[str, Any],
                         stream: bool | None) -> tuple[int, list[tuple[str, str]], list[bytes], bool]:
    """An answer imported from a trace (importers.otel): as its server-sent events when today's request streams (or,
    when it does not say, when the trace says the call streamed) and the import made them, else as one JSON body."""
    streamed = stream if stream is not None else recorded.get("streamed") is True
    headers = dict(recorded.get("headers") or {})
    events = recorded.get("stream")
    if streamed and isinstance(events, list):
        headers["content-type"] = "text/event-stream"
        return recorded.get("status", 200), _headers_for(headers, None), [sse.event_bytes(event) for event in events], True
    body = _body_bytes(recorded.get("response"))
    return recorded.get("status", 200), _headers_for(headers, len(body)), [body], False


def _recorded_chunks(chunks: list[bytes], recorded: dict[str, Any]) -> "_RecordedChunks":
    """The chunks of a recorded stream that did not end (streamComplete false), with what ended it: the exception
    (streamError), else how long the recorded call lasted (a replay's ServedAnswer says)."""
    chunks = _RecordedChunks(chunks)
    if isinstance(recorded.get("streamError"), dict):
        chunks.error = recorded["streamError"]
    else:
        chunks.lasted = float(getattr(recorded, "lasted", 0.0))
    return chunks


class _RecordedChunks(list):
    """A recorded stream's chunks, whose recorded stream did not end: `error` (describe_exception's) when an exception
    ended it, else `lasted`, how long the recorded call lasted (seconds) before the program stopped reading."""

    error: dict[str, Any] | None = None
    lasted = 0.0


def stream_error(chunks: list[bytes]) -> BaseException | None:
    """The exception that ended a recorded stream whose chunks response_parts gave, rebuilt; None for one that ended
    (or that the program stopped reading)."""
    error = getattr(chunks, "error", None)
    if error is None:
        return None
    from openwop_cli.runtime.exceptions import rebuild_exception

    return rebuild_exception(error)[0]


FRAMING_HEADERS = frozenset({"transfer-encoding", "content-length"})


def made_http_response(response_class: Any, method: str, status: int, reason: str, headers: list[tuple[str, str]],
                       chunks: list[bytes], chunked: bool) -> Any:
    """A real http.client response (of response_class) parsed from bytes: status, headers, body. A recorded
    stream that ended with an exception has no last chunk: http.client raises IncompleteRead after the bytes as it did
    when the connection closed early, and any other exception (a read timed out) is raised by the socket there."""
    data, error = response_bytes(status, reason, headers, chunks, chunked)
    import http.client

    if isinstance(error, http.client.IncompleteRead):  # what http.client makes of a connection that closed early
        error = None
    response = response_class(_BytesSocket(data, error), method=method)
    response.begin()
    return response


def response_bytes(status: int, reason: str, headers: list[tuple[str, str]], chunks: list[bytes],
                   chunked: bool) -> tuple[bytes, BaseException | None]:
    """A replayed answer (response_parts') as HTTP/1.1 bytes on the wire: its head, then its body framed by
    Content-Length, or in chunks (a stream); and the exception the reader meets after the bytes (a recorded stream
    that ended with one: its last chunk is then missing), else None."""
    head = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in headers
                                            if name.lower() not in FRAMING_HEADERS)]
    error = stream_error(chunks) if chunked else None
    if chunked:
        head.append("Transfer-Encoding: chunked")
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks if chunk)
        body += b"" if error is not None else b"0\r\n\r\n"
    else:
        body = b"".join(chunks)
        head.append(f"Content-Length: {len(body)}")
    return "\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + body, error


class _BytesSocket:
    """What an HTTPResponse reads a made-up answer from: makefile() over bytes, which raises `error` (when given)
    where the bytes end."""

    def __init__(self, data: bytes, error: BaseException | None = None) -> None:
        self._data, self._error = data, error

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> Any:
        data = self._data
        return io.BufferedReader(io.BytesIO(data) if self._error is None else BytesThenError(data, self._error))


class BytesThenError(io.RawIOBase):
    """Bytes read as from a socket whose next read, once they are read, raises an exception: a replayed stream whose
    recorded connection broke."""

    def __init__(self, data: bytes, error: BaseException) -> None:
        self._data, self._error = memoryview(data), error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._data:
            raise self._error
        count = min(len(buffer), len(self._data))
        buffer[:count] = self._data[:count]
        self._data = self._data[count:]
        return count


_LONGEST_WAIT = 600.0  # seconds: however long a recorded call lasted, a replayed stream ends by then


async def begun_waiting(exchange: "Exchange", sleep: Any) -> tuple | None:
    """Exchange.begin for an async adapter (sleep: its event loop's, awaited): in a replay, a call the program
    cancelled in the recorded run (its own timeout, a task.cancel) waits about as long as it lasted before its
    CancelledError is raised again, so what cancelled it then cancels it again (a replayed answer comes at once)."""
    try:
        return exchange.begin()
    except BaseException as exc:
        lasted = getattr(exc, "wop_lasted", 0.0)
        if lasted > 0:
            await sleep(_wait_for(lasted))
        raise


def _wait_for(lasted: float) -> float:
    """How long a replay waits for what stopped a recorded call that lasted `lasted` seconds: a little more (a tenth,
    and 0.1 s: its request was recorded after the program's timer started, in whole milliseconds), at most
    _LONGEST_WAIT."""
    return min(lasted * 1.1 + 0.1, _LONGEST_WAIT)


def stream_wait(chunks: list[bytes]) -> float:
    """How long (seconds from the replayed answer) an async read past a replayed stream's chunks waits before the
    stream ends, for a recorded stream the program stopped reading without an error (its own timeout, a cancel): about
    as long as the recorded call lasted, so what stopped it then stops it again; 0 for any other stream. A little more
    than the call lasted (a tenth, and 0.1 s): its request was recorded after the program's timer started, in whole
    milliseconds. A sync program stops reading only by its own choice: it never waits."""
    lasted = getattr(chunks, "lasted", 0.0)
    return _wait_for(lasted) if lasted > 0 else 0.0


def divergence_parts(exc: Exception) -> tuple[int, list[tuple[str, str]], list[bytes], bool]:
    """An error answer the SDK can surface (and will not retry) when a request has no recorded match."""
    body = orjson.dumps({"error": {"type": "wop_replay_divergence", "message": f"wop replay: {exc}"}})
    headers = [("content-type", "application/json"), ("x-should-retry", "false"), ("content-length", str(len(body)))]
    return DIVERGENCE_STATUS, headers, [body], False


def header_snapshot(headers: Any) -> Any:
    """Headers as they are now, for plain_headers to read later: httpx's list of byte triples copied (the calling
    thread pays a list copy, no decoding), any other library's read by plain_headers at once."""
    triples = _httpx_triples(headers)
    return list(triples) if triples is not None else plain_headers(headers)


def header_value(headers: Any, name: str) -> str:
    """The value of the header name (lowercase; the last one when repeated, '' when absent) in a header_snapshot."""
    if type(headers) is dict:
        return headers.get(name) or ""
    wanted, found = name.encode("latin-1"), ""
    for _, lower, value in headers:
        if lower == wanted:
            found = value.decode("latin-1")
    return found


def plain_headers(headers: Any) -> dict[str, str]:
    """Any library's headers (httpx Headers, requests' dict, http.server's message, a list of pairs, a header_snapshot)
    as {lowercase name: value}; a header sent more than once has its values joined by ', ' in order (RFC 9110 5.3),
    the value httpx's, urllib3's and requests' headers[name] give."""
    triples = _httpx_triples(headers)
    if triples is not None:
        plain = {lower.decode("latin-1"): value.decode("latin-1") for _, lower, value in triples}
        if len(plain) < len(triples):
            return _joined((lower.decode("latin-1"), value.decode("latin-1")) for _, lower, value in triples)
        return plain
    raw = getattr(headers, "raw", None)
    if isinstance(raw, list):
        return _joined((name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in raw)
    if hasattr(headers, "itermerged"):  # urllib3's HTTPHeaderDict: its items() gives every line, len() every name
        return {name.lower(): value for name, value in headers.itermerged()}
    items = headers.items() if hasattr(headers, "items") else headers or []
    plain = {str(name).lower(): str(value) for name, value in items}
    if len(plain) < len(items):
        return _joined((str(name).lower(), str(value)) for name, value in items)
    return plain


def _joined(pairs: Any) -> dict[str, str]:
    """(lowercase name, value) pairs as a dict, the values of a repeated name joined by ', ' in order."""
    plain: dict[str, str] = {}
    for name, value in pairs:
        plain[name] = f"{plain[name]}, {value}" if name in plain else value
    return plain


def absolute_url(scheme: str, host: str, port: int | None, target: str) -> str:
    """The URL of a request a connection sends to host:port (target: its path, or the URL through a proxy)."""
    if target.startswith(("http://", "https://")):
        return target
    host = f"[{host}]" if ":" in host else host
    shown = "" if port in (None, _DEFAULT_PORTS.get(scheme)) else f":{port}"
    return f"{scheme}://{host}{shown}{target}"


def sendable_body(body: Any) -> Any:
    """A request body as bytes (a list of bytes for an iterable one), so it can be recorded and still be sent."""
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    if hasattr(body, "read"):
        data = body.read()
        return data.encode() if isinstance(data, str) else data
    return [part.encode() if isinstance(part, str) else bytes(part) for part in body]


def body_bytes(body: Any) -> bytes:
    """The bytes of a body sendable_body returned."""
    return b"".join(body) if isinstance(body, list) else body or b""


def undo_content_encoding(body: bytes, headers: dict[str, str]) -> bytes:
    """body with every coding its content-encoding lists undone, the last applied first (headers from plain_headers:
    the codings of all its content-encoding lines; an empty one or identity is none), as httpx and urllib3 decode a
    list: what is recorded (a replayed answer carries no content-encoding). A coding other than gzip and deflate, or
    one that does not undo, leaves the body as it came."""
    encodings = headers.get("content-encoding")
    if not encodings:
        return body
    import zlib

    decoded = body
    try:
        for coding in reversed(encodings.lower().split(",")):
            coding = coding.strip()
            if coding in ("gzip", "x-gzip"):
                decoded = zlib.decompress(decoded, 16 + zlib.MAX_WBITS)
            elif coding == "deflate":
                decoded = _inflated(decoded)
            elif coding not in ("", "identity"):
                return body
    except zlib.error:
        return body
    return decoded


def _inflated(body: bytes) -> bytes:
    """A deflate-coded body undone: zlib's format, or raw deflate as some servers send it."""
    import zlib

    try:
        return zlib.decompress(body)
    except zlib.error:
        return zlib.decompress(body, -zlib.MAX_WBITS)


def _plain(snapshot: Any) -> dict[str, str]:
    """A header_snapshot as plain_headers' dict."""
    return snapshot if type(snapshot) is dict else plain_headers(snapshot)


def _httpx_triples(headers: Any) -> list | None:
    """httpx's (name, lowercase name, value) byte triples of its Headers (or of a snapshot of them), else None."""
    triples = getattr(headers, "_list", headers)
    if type(triples) is list and triples and type(triples[0]) is tuple and len(triples[0]) == 3:
        return triples
    return None


def kept_headers(headers: dict[str, str]) -> dict[str, str]:
    """Headers worth recording (from plain_headers): everything but credentials, cookies and transfer framing."""
    return {name: value for name, value in headers.items() if name not in _UNRECORDED_HEADERS}


def _headers_for(recorded: Any, length: int | None) -> list[tuple[str, str]]:
    headers = [(name, value) for name, value in (recorded or {}).items() if name not in _UNRECORDED_HEADERS]
    if length is not None:
        headers.append(("content-length", str(length)))
    return headers


def _body_value(body: bytes | None, content_type: str | None) -> Any:
    """A body as JSON when it is JSON, text when it is text, else the bytes (stored as a blob)."""
    if not body:
        return None
    value = _json_value(body, content_type)
    return _text_or_bytes(body) if value is _NOT_JSON else value


def _answer_value(body: bytes | None, content_type: str | None) -> Any:
    """A response body as recorded: a JSON object or array as its value when the bytes a replay makes of it
    (orjson's) read as the body does; any other body as its text or bytes, which a replay serves as they came. So a
    JSON null (served as no body), a JSON string (without its quotes), a number (1E2 as 100.0) and JSON holding an
    integer beyond 64 bits (orjson reads it as a float) keep their bytes."""
    if not body:
        return None
    value = _json_value(body, content_type)
    if (type(value) is dict or type(value) is list) and (_NINETEEN_DIGITS not in body.translate(_DIGITS_AS_ZEROS)
                                                          or _reads_alike(body, value)):
        return value
    return _text_or_bytes(body)


_NOT_JSON = object()
_NINETEEN_DIGITS = b"0" * 19  # an integer orjson may read as a float has 19 digits or more
_DIGITS_AS_ZEROS = bytes.maketrans(bytes(range(256)), b" " * 48 + b"0" * 10 + b" " * 198)


def _json_value(body: bytes, content_type: str | None) -> Any:
    """body's JSON value when it looks like JSON (by its first byte or its content-type) and is, else _NOT_JSON."""
    if body[:1] in (b"{", b"[") or (content_type or "").startswith("application/json"):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return _NOT_JSON


def _reads_alike(body: bytes, value: Any) -> bool:
    """True when Python's json, which reads every integer exactly, reads body as value (orjson read it): compared as
    JSON, so an integer and the float orjson made of it differ even where they are equal (2**70 == 2.0**70)."""
    import json

    try:
        return json.dumps(json.loads(body)) == json.dumps(value)
    except (ValueError, RecursionError):
        return False


def _text_or_bytes(body: bytes) -> str | bytes:
    """A body as text when it is UTF-8, else its bytes (stored as a blob)."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return bytes(body)


def _body_bytes(value: Any, recorded: dict[str, Any] | None = None) -> bytes:
    """The bytes to serve for a recorded body: a JSON value written as the server wrote it (json_style)."""
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    recorded = recorded or {}
    text = recorded.get("bodyText")
    if isinstance(text, str):
        return text.encode()
    style = recorded.get("bodyStyle")
    writer = _JSON_STYLES.get(style) if isinstance(style, str) else None
    written = orjson.dumps(value) if writer is None else writer(value)
    return written + b"\n" if recorded.get("bodyNewline") is True else written


def _json_dumps(**options: Any) -> Any:
    import json

    return lambda value: json.dumps(value, **options).encode()


# How servers write JSON besides orjson's compact form (Python's json module, pretty-printed APIs): a JSON answer
# records which one wrote it, so a replay serves the same bytes to a program that prints them (curl).
_JSON_STYLES: dict[str, Any] = {
    "python": _json_dumps(), "python-unicode": _json_dumps(ensure_ascii=False),
    "compact-ascii": _json_dumps(separators=(",", ":")),
    "indent2": _json_dumps(indent=2, ensure_ascii=False), "indent2-ascii": _json_dumps(indent=2),
    "indent4": _json_dumps(indent=4, ensure_ascii=False),
    "orjson-indent2": lambda value: orjson.dumps(value, option=orjson.OPT_INDENT_2),
}


def json_style(body: bytes, value: Any) -> dict[str, Any]:
    """For a JSON answer recorded as its value (not its text): how the server wrote it, when not as orjson writes it
    compact ({"bodyStyle": name, "bodyNewline": true?}); a body none of them writes the same is kept as its text
    (`bodyText`), which a replay then serves."""
    if type(value) is not dict and type(value) is not list:
        return {}
    written = orjson.dumps(value)
    if written == body:
        return {}
    newline = body.endswith(b"\n")
    stripped = body[:-1] if newline else body
    if written == stripped:
        return {"bodyNewline": True}
    for name, writer in _JSON_STYLES.items():
        try:
            if writer(value) == stripped:
                return {"bodyStyle": name, **({"bodyNewline": True} if newline else {})}
        except (TypeError, ValueError):
            return {}
    return {"bodyText": _text_or_bytes(body)}
