"""websockets: each client connection recorded frame by frame, and replayed with no connection.

The events. A connection is a chain of `websocket` tool calls on its URL: opening it
(`args: {url}`, the handshake's request headers beside the args), then one call per message the
program sends (`args: {url, frame: k, text|json|binary}`, k counting the program's sends on that
connection) or per close it starts (`args: {url, frame: k, close: {code, reason}}`). Each call's
result holds the handshake's answer (status, headers: for the opening) and `received`: the
messages that arrived after it and before the program's next send — `{text}`, `{json}` (a text
frame that is JSON which replays byte for byte), `{binary}`, `{close: {code, reason}}` from the
server, `{lost: true}` when the connection ended without a close frame. So a server that pushes
frames unprompted replays deterministically: what came between two sends is released when the
program makes the first of them, never before (a reply never overtakes its request, whatever the
program's tasks do), and a changed outgoing message is an event_payload_mismatch at that frame.

Recording reads the Sans-I/O `ClientProtocol` that every websockets client shares (asyncio,
sync): what the program sends (send_text/send_binary/send_continuation, send_close) and the frames
the connection receives (events_received); the library's own control frames (pings, the echo of a
close) are not the program's and are left out. The legacy asyncio client (websockets.legacy, which predates the
Sans-I/O protocol) is read at its own protocol's methods instead, into the same events. The TCP connection is opened
inside a boundary, so the watcher does not name it as unrecorded.

In a replay nothing connects: the client is given an in-process transport (asyncio, legacy) or socket
(sync) whose far end is websockets' own `ServerProtocol`, answering the handshake with the recorded
response and serving each message the program sends from the capture (Replayer.tool), then the
frames recorded after it; a divergence closes the connection with 1011 and the replay's error as
its reason. Compression is not negotiated in a replay (the frames are the same messages). A connection whose opening
the replay runs live (a fork past its branch point) connects for real and is recorded as in a capture (_Opening); one
served from the capture cannot go live mid-stream (_ServedServer._not_live).
"""

import contextvars
import queue
import socket
import threading
import weakref
from typing import Any

import orjson

from openwop_cli.replay.errors import ReplayDivergenceError
from openwop_cli.runtime.adapters.exchange import kept_headers, plain_headers, recording_session
from openwop_cli.runtime.callsite import program_site
from openwop_cli.runtime.livecalls import end_live_call, live_call
from openwop_cli.runtime.session import Session, enter_boundary, exit_boundary, new_call_id, note_open_stream

TOOL = "websocket"
_HANDSHAKE_HEADERS = frozenset({"sec-websocket-key", "sec-websocket-accept", "sec-websocket-extensions", "upgrade",
                                "connection", "sec-websocket-version"})
_TEXT, _BINARY, _CONTINUATION, _CLOSE = 1, 2, 0, 8  # opcodes
_opening: contextvars.ContextVar["_Opening | None"] = contextvars.ContextVar("wop_websocket_opening", default=None)
_MARK = "__wop_patched__"
WEBSOCKET_NOT_LIVE = "websocket_not_live"  # a replay note: a served connection's frame that would run live
RAW_WEBSOCKET_CALL, RAW_WEBSOCKET_RESULT = "raw_websocket_call", "raw_websocket_result"  # raw pieces' kinds: RawFrames


def patch(module: Any) -> None:
    """Attach to a websockets module as it is imported: the Sans-I/O client protocol (`websockets.client`), the
    asyncio client's connection opening (`websockets.asyncio.client`), the sync client's (`websockets.sync.client`),
    the legacy asyncio client, which has a protocol of its own (`websockets.legacy.client`)."""
    name = module.__name__
    if name == "websockets.client" and hasattr(module, "ClientProtocol"):
        _patch_protocol(module.ClientProtocol)
    elif name == "websockets.asyncio.client":
        _patch_asyncio(module.connect)
    elif name == "websockets.sync.client":
        _patch_sync(module)
    elif name == "websockets.legacy.client":
        _patch_legacy(module)


# ---- capture --------------------------------------------------------------------------------------------------


class _Recording:
    """One recorded connection: its URL, how many messages the program sent on it, the call whose result collects
    the frames arriving now, and the message being sent or received in fragments. opening: a connection a replay
    runs live (see _Opening), whose opening's call the replay recorded: its first result finishes that call."""

    def __init__(self, session: Session, url: str, opening: "_Opening | None" = None) -> None:
        self.session = session
        self.url = url
        self.opening = opening if opening is not None and opening.live is not None else None
        self.sent = 0
        self.number: tuple[str, int] | None = None  # the current call's (Session.new_call_number)
        self.raw_by: int | None = None  # the pid of the process that sent the current call raw
        self.origin: dict[str, Any] | None = None  # the current call's, when recorded by record_later
        self.answer: dict[str, Any] = {}  # the opening's: status, headers
        self.received: list[tuple[int, bytes]] = []
        self.received_bytes = 0
        self.sending: tuple[int, bytearray] | None = None
        self.receiving: tuple[int, bytearray] | None = None
        self.closed_by_server = False
        self.finished = False

    def call(self, kind: str, pieces: tuple, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        """A new call on the connection (the opening, a message: its bytes in body, a close): the last one's result is
        what came so far. Sent raw where the session can (its events are built by `wop capture`: RawFrames)."""
        if self.number is not None or self.opening is not None:
            self.result()
        session = self.session
        self.number = number = session.new_call_number()
        self.received, self.received_bytes = [], 0
        site = program_site(3)
        if session.sends_raw:
            self.raw_by = session.pid
            session.record_raw(RAW_WEBSOCKET_CALL, (*number, self.url, kind, pieces, headers), body, site=site)
        else:
            self.raw_by = None
            self.origin = session.record_later(_call_event, (new_call_id("t", number), self.url, kind, pieces, body,
                                                             headers), size=len(body), site=site)

    def result(self) -> None:
        opening = self.opening
        if opening is not None:
            self.opening = None
            opening.finish_live(result=_result_of(self.answer, self.received))
            self.answer = {}
            return
        number = self.number
        if number is None:
            return
        session, received, answer = self.session, self.received, self.answer
        if self.raw_by == session.pid:
            session.record_raw(RAW_WEBSOCKET_RESULT, (*number, answer, received), b"", answer=True,
                               size=self.received_bytes)
        else:
            session.record_later(_result_event, (new_call_id("t", number), answer, received),
                                 size=self.received_bytes, origin=self.origin)
        self.number, self.answer = None, {}

    def take(self, opcode: int, data: bytes) -> None:
        """A frame received (or -1: the connection was lost), for the current call's result."""
        self.received.append((opcode, data))
        self.received_bytes += len(data)

    def finish(self, complete: Any = True) -> None:
        """The connection ended (or the process ends with it open): the last call's result is recorded."""
        if self.finished:
            return
        self.finished = True
        if not self.closed_by_server and complete is True and (self.number is not None or self.opening is not None):
            self.take(-1, b"")  # ended without a close frame from the server
        self.result()


class RawFrames:
    """`wop capture`'s end of the websocket calls a process sends raw (_Recording.call): their events, built by
    _call_event and _result_event as the process would have built them. A call's origin, without its site, is kept
    until its result comes, which has it."""

    KINDS = frozenset({RAW_WEBSOCKET_CALL, RAW_WEBSOCKET_RESULT})

    def __init__(self) -> None:
        self._origins: dict[tuple[str, int], dict[str, Any]] = {}

    def event(self, kind: str, pieces: tuple, body: bytes,
              origin_json: bytes | None) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
        """(type, data, origin) of the event for raw pieces of a kind (KINDS) and their origin (Session.record_raw's:
        JSON, None for a result); None for a call whose origin is not a JSON object, or a result of no call sent raw."""
        number = (pieces[0], pieces[1])
        if kind == RAW_WEBSOCKET_CALL:
            origin = None if origin_json is None else orjson.loads(origin_json)
            if type(origin) is not dict:
                return None
            url, call_kind, call_pieces, headers = pieces[2:]
            self._origins[number] = {key: value for key, value in origin.items() if key != "site"}
            return (*_call_event(new_call_id("t", number), url, call_kind, call_pieces, body, headers), origin)
        call_origin = self._origins.pop(number, None)
        if call_origin is None:
            return None
        answer, received = pieces[2:]
        return (*_result_event(new_call_id("t", number), answer, received), call_origin)


def _call_event(call_id: str, url: str, kind: str, pieces: tuple, body: bytes,
                headers: dict[str, str] | None) -> tuple[str, dict[str, Any]]:
    args: dict[str, Any] = {"url": url}
    if kind == "send":
        frame, opcode = pieces
        args["frame"] = frame
        args.update(_sent_message(opcode, body))
    elif kind == "close":
        frame, code, reason = pieces
        args.update(frame=frame, close={"code": code, "reason": reason})
    data = {"name": TOOL, "args": args, "callId": call_id}
    if headers is not None:
        data["headers"] = headers
    return "tool_call", data


def _result_event(call_id: str, answer: dict[str, Any], received: list) -> tuple[str, dict[str, Any]]:
    return "tool_result", {"callId": call_id, "ok": True, "result": _result_of(answer, received)}


def _result_of(answer: dict[str, Any], received: list) -> dict[str, Any]:
    return {**answer, "received": [_received_frame(opcode, data) for opcode, data in received]}


def _sent_message(opcode: int, data: bytes) -> dict[str, Any]:
    """A message the program sent: JSON (an object or array: compared by value), text, or binary."""
    if opcode != _TEXT:
        return {"binary": data}
    if data[:1] in (b"{", b"["):
        try:
            return {"json": orjson.loads(data)}
        except orjson.JSONDecodeError:
            pass
    return {"text": data.decode("utf-8", "replace")}


def _received_frame(opcode: int, data: bytes) -> dict[str, Any]:
    """A frame the connection received as the capture keeps it: JSON only when a replay gives back the same bytes."""
    if opcode == _CLOSE:
        return {"close": _close_of(data)}
    if opcode == -1:
        return {"lost": True}
    if opcode != _TEXT:
        return {"binary": data}
    if data[:1] in (b"{", b"["):
        try:
            value = orjson.loads(data)
            if orjson.dumps(value) == data:
                return {"json": value}
        except orjson.JSONDecodeError:
            pass
    return {"text": data.decode("utf-8", "replace")}


def _close_of(data: bytes) -> dict[str, Any]:
    if len(data) < 2:
        return {"code": 1005, "reason": ""}
    return {"code": int.from_bytes(data[:2], "big"), "reason": data[2:].decode("utf-8", "replace")}


def _url(protocol: Any) -> str:
    uri = getattr(protocol, "wsuri", None) or protocol.uri
    scheme = "wss" if uri.secure else "ws"
    default = 443 if uri.secure else 80
    host = f"[{uri.host}]" if ":" in uri.host else uri.host
    port = "" if uri.port == default else f":{uri.port}"
    return f"{scheme}://{host}{port}{uri.resource_name}"


def _patch_protocol(protocol_class: Any) -> None:
    """Read what a client connection sends and receives (see the module docstring), for connections opened while a
    recording session's open hook ran (_opening)."""
    if getattr(protocol_class.__init__, _MARK, False):
        return
    init, send_request = protocol_class.__init__, protocol_class.send_request
    send_text, send_binary = protocol_class.send_text, protocol_class.send_binary
    send_continuation, send_close = protocol_class.send_continuation, protocol_class.send_close
    events_received, receive_eof = protocol_class.events_received, protocol_class.receive_eof

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        opening = _opening.get()
        self._wop = None if opening is None else opening.recording(_url(self))

    def _send_request(self: Any, request: Any) -> None:
        recording = getattr(self, "_wop", None)
        if recording is not None:
            _safely(self, _opened, recording, request.headers)
        send_request(self, request)

    def _send_text(self: Any, data: Any, fin: bool = True) -> None:
        send_text(self, data, fin)
        if self._wop is not None:
            _safely(self, _sent, self._wop, _TEXT, data, fin)

    def _send_binary(self: Any, data: Any, fin: bool = True) -> None:
        send_binary(self, data, fin)
        if self._wop is not None:
            _safely(self, _sent, self._wop, _BINARY, data, fin)

    def _send_continuation(self: Any, data: Any, fin: bool) -> None:
        send_continuation(self, data, fin)
        if self._wop is not None:
            _safely(self, _sent, self._wop, _CONTINUATION, data, fin)

    def _send_close(self: Any, code: Any = None, reason: str = "") -> None:
        send_close(self, code, reason)
        if self._wop is not None:
            _safely(self, _closing, self._wop, code, reason)

    def _events_received(self: Any) -> list:
        events = events_received(self)
        if self._wop is not None and events:
            _safely(self, _received, self._wop, events)
        return events

    def _receive_eof(self: Any) -> None:
        receive_eof(self)
        if self._wop is not None:
            _safely(self, _Recording.finish, self._wop)

    for name, function in (("__init__", __init__), ("send_request", _send_request), ("send_text", _send_text),
                           ("send_binary", _send_binary), ("send_continuation", _send_continuation),
                           ("send_close", _send_close), ("events_received", _events_received),
                           ("receive_eof", _receive_eof)):
        setattr(protocol_class, name, function)
    setattr(protocol_class.__init__, _MARK, True)


def _safely(protocol: Any, record: Any, *args: Any) -> None:
    """Record without ever breaking the program's connection: a recording that fails stops recording it."""
    try:
        record(*args)
    except Exception as exc:
        protocol._wop = None
        import sys

        print(f"wop: stopped recording a websocket connection: {type(exc).__name__}: {exc}", file=sys.stderr)


def _opened(recording: _Recording, request_headers: Any) -> None:
    """The handshake's request is sent: the opening's call, with its headers (websockets' Headers); a live one's the
    replay recorded."""
    if recording.opening is None:
        recording.call("open", (), headers=_kept_handshake_headers(request_headers))
    note_open_stream(recording)


def _answered(recording: _Recording, status: int, headers: Any, body: bytes) -> None:
    """The handshake's answer (websockets' Headers), the body of a refusal: the opening's result."""
    recording.answer = {"status": status, "headers": _kept_handshake_headers(headers)}
    if status != 101 and body:
        recording.answer["body"] = bytes(body).decode("utf-8", "replace")


def _kept_handshake_headers(headers: Any) -> dict[str, str]:
    return {name: value for name, value in kept_headers(plain_headers(list(headers.raw_items()))).items()
            if name not in _HANDSHAKE_HEADERS}


def _closing(recording: _Recording, code: Any, reason: str) -> None:
    if not recording.finished:
        recording.sent += 1
        recording.call("close", (recording.sent, 1005 if code is None else int(code), reason))


def _sent(recording: _Recording, opcode: int, data: Any, fin: bool) -> None:
    """A message (or a fragment of one) the program sent: a call once it is whole."""
    if recording.finished:
        return
    if opcode == _CONTINUATION:
        if recording.sending is None:
            return
        recording.sending[1].extend(data)
        if not fin:
            return
        opcode, whole = recording.sending
        data, recording.sending = bytes(whole), None
    elif not fin:
        recording.sending = (opcode, bytearray(data))
        return
    recording.sent += 1
    recording.call("send", (recording.sent, opcode), bytes(data))


def _received(recording: _Recording, events: list) -> None:
    if recording.finished:
        return
    for event in events:
        opcode = getattr(event, "opcode", None)
        if opcode is None:  # the handshake's answer
            status = getattr(event, "status_code", None)
            if status is not None:
                _answered(recording, status, event.headers, event.body)
            continue
        opcode = int(opcode)
        if opcode == _CLOSE:
            recording.closed_by_server = True
            recording.take(_CLOSE, bytes(event.data))
        elif opcode in (_TEXT, _BINARY):
            if event.fin:
                recording.take(opcode, bytes(event.data))
            else:
                recording.receiving = (opcode, bytearray(event.data))
        elif opcode == _CONTINUATION and recording.receiving is not None:
            recording.receiving[1].extend(event.data)
            if event.fin:
                recording.take(recording.receiving[0], bytes(recording.receiving[1]))
                recording.receiving = None


# ---- opening a connection: recorded in a capture, served in a replay ------------------------------------------


def _patch_asyncio(connect: Any) -> None:
    """asyncio: the method of `connect` that opens the TCP connection (open_tcp_connection; create_connection before
    websockets 16) opens it inside a boundary in a capture, and in a replay makes the connection with no socket."""
    name = "open_tcp_connection" if hasattr(connect, "open_tcp_connection") else "create_connection"
    original = getattr(connect, name)
    if getattr(original, _MARK, False):
        return

    async def opened(self: Any) -> Any:
        opening = _Opening(self.uri)
        if opening.served is not None:
            return _served_asyncio_connection(self, opening.served)
        if opening.session is None:
            return await original(self)
        with opening:
            return await original(self)

    setattr(opened, _MARK, True)
    setattr(connect, name, opened)


def _patch_sync(module: Any) -> None:
    """The sync client's `connect` (every websockets from 13 on): opened inside a boundary in a capture; in a replay
    handed a socket whose far end is the capture (sock=, and for wss an ssl= that encrypts nothing)."""
    original = module.connect
    if getattr(original, _MARK, False):
        return

    def connect(uri: str, **kwargs: Any) -> Any:
        opening = _Opening(uri)
        if opening.served is not None:
            kwargs["sock"] = _served_socket(_ServedServer(opening.served))
            if uri.startswith("wss:"):
                kwargs["ssl"] = _NoEncryption()
            kwargs.pop("proxy", None)
            return original(uri, **kwargs)
        if opening.session is None:
            return original(uri, **kwargs)
        with opening:
            return original(uri, **kwargs)

    setattr(connect, _MARK, True)
    module.connect = connect


def _patch_legacy(module: Any) -> None:
    """The legacy asyncio client (`websockets.legacy.client`, deprecated since websockets 14): a protocol of its own,
    read at its handshake (write_http_request, read_http_response), the frames it writes and reads (write_frame_sync,
    write_close_frame, read_frame) and its end (connection_lost); its TCP connection opened by Connect through
    _LegacyOpening. The events are those of the other clients."""
    connect_class, protocol_class = module.Connect, module.WebSocketClientProtocol
    if getattr(connect_class.__init__, _MARK, False):
        return
    init, redirect = connect_class.__init__, connect_class.handle_redirect
    write_http_request, read_http_response = protocol_class.write_http_request, protocol_class.read_http_response
    write_frame_sync, write_close_frame = protocol_class.write_frame_sync, protocol_class.write_close_frame
    read_frame, connection_lost = protocol_class.read_frame, protocol_class.connection_lost
    from websockets.protocol import State

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._create_connection = _LegacyOpening(self, self._create_connection)

    def handle_redirect(self: Any, uri: str) -> None:
        redirect(self, uri)
        if not isinstance(self._create_connection, _LegacyOpening):  # a redirect to another origin: a new opening
            self._create_connection = _LegacyOpening(self, self._create_connection)

    def _write_http_request(self: Any, path: str, headers: Any) -> None:
        if self._wop is not None:
            _safely(self, _opened, self._wop, headers)
        write_http_request(self, path, headers)

    async def _read_http_response(self: Any) -> tuple[int, Any]:
        status, headers = await read_http_response(self)
        if self._wop is not None:
            _safely(self, _answered, self._wop, status, headers, b"")
        return status, headers

    def _write_frame_sync(self: Any, fin: bool, opcode: int, data: Any) -> None:
        write_frame_sync(self, fin, opcode, data)
        if self._wop is not None and opcode <= _BINARY:  # a message's (text, binary, continuation), not a control's
            _safely(self, _sent, self._wop, opcode, data, fin)

    async def _write_close_frame(self: Any, close: Any, data: Any = None) -> None:
        if self._wop is not None and data is None and self.state is State.OPEN:  # the program's, not an echo
            _safely(self, _closing, self._wop, close.code, close.reason)
        await write_close_frame(self, close, data)

    async def _read_frame(self: Any, max_size: int | None) -> Any:
        frame = await read_frame(self, max_size)
        if self._wop is not None:
            _safely(self, _received, self._wop, (frame,))
        return frame

    def _connection_lost(self: Any, exc: Exception | None) -> None:
        connection_lost(self, exc)
        if self._wop is not None:
            _safely(self, _Recording.finish, self._wop)

    protocol_class._wop = None
    for owner, name, function in (
            (connect_class, "__init__", __init__), (connect_class, "handle_redirect", handle_redirect),
            (protocol_class, "write_http_request", _write_http_request),
            (protocol_class, "read_http_response", _read_http_response),
            (protocol_class, "write_frame_sync", _write_frame_sync),
            (protocol_class, "write_close_frame", _write_close_frame), (protocol_class, "read_frame", _read_frame),
            (protocol_class, "connection_lost", _connection_lost)):
        setattr(owner, name, function)
    setattr(connect_class.__init__, _MARK, True)


class _LegacyOpening:
    """A legacy Connect's `_create_connection` (loop.create_connection with its protocol factory, a partial whose
    parts handle_redirect reads: passed through): opened inside a boundary and recorded from then on in a capture; in
    a replay, a protocol from the factory on a transport to _ServedServer (see _Opening)."""

    def __init__(self, connector: Any, create: Any) -> None:
        self.connector = connector
        self.create = create

    def __getattr__(self, name: str) -> Any:
        return getattr(self.create, name)

    async def __call__(self) -> tuple[Any, Any]:
        import asyncio

        connector = self.connector
        opening = _Opening(connector._uri)
        if opening.served is not None:
            protocol = self.create.args[0]()
            protocol.connection_made(_ServedTransport(asyncio.get_running_loop(), protocol,
                                                      _ServedServer(opening.served)))
            return protocol.transport, protocol
        if opening.session is None:
            return await self.create()
        with opening:
            transport, protocol = await self.create()
        protocol._wop = opening.recording(_url(_UriHolder(connector._wsuri)))
        return transport, protocol


class _Opening:
    """How a client connection to uri opens now. `served`: a replay answers it from the recorded opening (its result,
    with the url, the replayer and the opening's recorded seq). Else it opens for real, recorded into `session` (None:
    nothing records, as inside another boundary); in a replay that runs it live (a fork past its branch point,
    --allow-tool websocket) `live` is the opening's call the replay recorded, which the connection's first result
    finishes (_Recording), so a fork's capture holds one opening with the real answer."""

    __slots__ = ("served", "session", "live", "_tokens")

    def __init__(self, uri: str) -> None:
        self.served: dict[str, Any] | None = None
        self.live: Any = None
        self.session = session = recording_session()
        replayer = getattr(session, "replayer", None)
        if replayer is None:
            return
        from websockets.uri import parse_uri

        url = _url(_UriHolder(parse_uri(uri)))
        answer = replayer.tool(TOOL, {"url": url})  # raises the recorded error, or a strict replay's divergence
        if answer.live:
            self.live = answer
        else:
            self.served = {**(answer.value() or {}), "url": url, "replayer": replayer, "seq": answer.seq}

    def __enter__(self) -> "_Opening":
        """`with opening:` the real opening, inside a boundary (the watcher does not name its connection), the
        protocol made now recorded (_opening); a live one in a live call (the replay's network guard lets it out)."""
        self._tokens = (_opening.set(self), enter_boundary(), None if self.live is None else live_call())
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> None:
        opening, boundary, live = self._tokens
        if live is not None:
            end_live_call(live)
        exit_boundary(boundary)
        _opening.reset(opening)
        if exc is not None:
            self.finish_live(error=exc)

    def recording(self, url: str) -> _Recording:
        """The recording of the connection this opening makes (one made for real, with a session)."""
        assert self.session is not None
        return _Recording(self.session, url, self)

    def finish_live(self, result: dict[str, Any] | None = None, error: BaseException | None = None) -> None:
        """A live opening's answer, once: the handshake's answer and first frames, or the error it failed with."""
        live, self.live = self.live, None
        if live is not None:
            live.finish(result=result, error=error)


class _UriHolder:
    def __init__(self, uri: Any) -> None:
        self.uri = uri


class _ServedServer:
    """The far end of a replayed connection: websockets' ServerProtocol answering from the capture. Fed the client's
    bytes; what it answers waits in `outgoing` (`ended` once it has closed its side)."""

    def __init__(self, opened: dict[str, Any]) -> None:
        from websockets.server import ServerProtocol

        headers = opened.get("headers") or {}
        subprotocol = headers.get("sec-websocket-protocol")
        self.opened = opened
        self.url = opened["url"]
        self.replayer = opened["replayer"]
        self.opened_seq = opened["seq"]
        self.protocol = ServerProtocol(subprotocols=[subprotocol] if subprotocol else None, max_size=None)
        self.outgoing = bytearray()
        self.ended = False
        self.end_sent = False
        self.sent = 0
        self.message: tuple[int, bytearray] | None = None
        self.lock = threading.RLock()

    def receive(self, data: bytes) -> None:
        with self.lock:
            protocol = self.protocol
            if data:
                protocol.receive_data(data)
            else:
                protocol.receive_eof()
            for event in protocol.events_received():
                if getattr(event, "opcode", None) is None:
                    self._answer_handshake(event)
                else:
                    self._client_frame(event)
            self._collect()

    def _collect(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.outgoing += data
            else:
                self.ended = True

    def _answer_handshake(self, request: Any) -> None:
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        status = int(self.opened.get("status", 101))
        recorded = {name: value for name, value in (self.opened.get("headers") or {}).items()
                    if name not in _HANDSHAKE_HEADERS and name != "sec-websocket-protocol"}
        if status != 101:
            body = str(self.opened.get("body", "")).encode()
            response = Response(status, "wop replay", Headers({**recorded, "content-length": str(len(body))}), body)
        else:
            response = self.protocol.accept(request)
            for name, value in recorded.items():
                if name not in response.headers:
                    response.headers[name] = value
        self.protocol.send_response(response)
        if response.status_code == 101:
            self._serve(self.opened.get("received") or [])

    def _client_frame(self, frame: Any) -> None:
        opcode = int(frame.opcode)
        if opcode in (_TEXT, _BINARY):
            if frame.fin:
                self._message(opcode, bytes(frame.data))
            else:
                self.message = (opcode, bytearray(frame.data))
        elif opcode == _CONTINUATION and self.message is not None:
            self.message[1].extend(frame.data)
            if frame.fin:
                opcode, data = self.message
                self.message = None
                self._message(opcode, bytes(data))
        elif opcode == _CLOSE and self.protocol.close_rcvd_then_sent:  # the program's close, not the echo of ours
            self.sent += 1
            self._call({"close": _close_of(bytes(frame.data))}, serve=False)

    def _message(self, opcode: int, data: bytes) -> None:
        self.sent += 1
        self._call(_sent_message(opcode, data), serve=True)

    def _call(self, message: dict[str, Any], serve: bool) -> None:
        try:
            answer = self.replayer.tool(TOOL, {"url": self.url, "frame": self.sent, **message})
            if answer.live:
                self._not_live(answer, message)
                return
            result = answer.value()
        except ReplayDivergenceError as exc:
            self._close(1011, f"wop replay: {exc}")
            return
        except Exception as exc:  # a recorded failure rebuilt: the connection fails as it did
            self._close(1011, f"{type(exc).__name__}: {exc}")
            return
        if serve:
            self._serve((result or {}).get("received") or [])

    def _not_live(self, answer: Any, message: dict[str, Any]) -> None:
        """A call the replay runs live on this connection, which it serves (a fork past its branch point, a lenient
        replay past the recorded frames): there is no server to send it to, and the connection cannot go live mid-stream
        (the server never saw it opened). The program's close is answered here as a server would; a message closes the
        connection with 1011, saying so in its reason and in a replay note."""
        if "close" in message:
            answer.finish(result={"received": [{"close": message["close"]}]})
            return
        engine = self.replayer.engine
        if engine.branch:
            why = (f"is past the fork's branch point (--from-seq {engine.from_seq}), but the connection was opened "
                   f"from the capture at seq {self.opened_seq}: it cannot go live mid-stream; fork from seq "
                   f"{self.opened_seq} or earlier to run it live")
        else:
            why = f"is not in the capture (the connection was opened from it at seq {self.opened_seq})"
        reason = f"wop: websocket frame {self.sent} cannot go live mid-stream"
        self.replayer.note(WEBSOCKET_NOT_LIVE, f"websocket {self.url}: frame {self.sent} {why}; the connection was "
                           f"closed with 1011 ({reason})", self.opened_seq)
        self._close(1011, reason)
        answer.finish(result={"received": [{"close": {"code": 1011, "reason": reason}}]})

    def _serve(self, frames: list[dict[str, Any]]) -> None:
        from websockets.protocol import OPEN

        protocol = self.protocol
        for frame in frames:
            if protocol.state is not OPEN:
                return
            if "text" in frame:
                protocol.send_text(str(frame["text"]).encode())
            elif "json" in frame:
                protocol.send_text(orjson.dumps(frame["json"]))
            elif "binary" in frame:
                data = frame["binary"]
                protocol.send_binary(data if isinstance(data, bytes) else str(data).encode())
            elif "close" in frame:
                close = frame["close"] if isinstance(frame["close"], dict) else {}
                code = close.get("code", 1000)
                protocol.send_close(None if code == 1005 else code, "" if code == 1005 else close.get("reason", ""))
            elif frame.get("lost"):
                self.ended = True
                return

    def _close(self, code: int, reason: str) -> None:
        from websockets.protocol import OPEN

        if self.protocol.state is OPEN:
            encoded = reason.encode()[:120]
            self.protocol.send_close(code, encoded.decode("utf-8", "ignore"))


# ---- replay: asyncio ------------------------------------------------------------------------------------------


def _served_asyncio_connection(connector: Any, opened: dict[str, Any]) -> Any:
    """A websockets asyncio ClientConnection made by the connector's own factory, on a transport to _ServedServer."""
    import asyncio

    from websockets.uri import parse_uri

    factory = getattr(connector, "factory", None) or connector.protocol_factory
    connection = factory(parse_uri(connector.uri))
    connection.connection_made(_ServedTransport(asyncio.get_running_loop(), connection,
                                                _ServedServer(opened)))
    return connection


class _ServedTransport:
    """An asyncio transport whose far end is a _ServedServer: what the client writes is answered on the next turn of
    the event loop, as data_received, then the end of the stream once the server has closed."""

    def __init__(self, loop: Any, connection: Any, server: _ServedServer) -> None:
        self._loop, self._connection, self._server = loop, connection, server
        self._closing = False
        self._lost = False

    def write(self, data: Any) -> None:
        self._server.receive(bytes(data))
        self._deliver()

    def writelines(self, pieces: Any) -> None:
        self.write(b"".join(pieces))

    def _deliver(self) -> None:
        server = self._server
        if server.outgoing:
            data, server.outgoing = bytes(server.outgoing), bytearray()
            self._loop.call_soon(self._data, data)
        if server.ended:
            self._loop.call_soon(self._eof)

    def _data(self, data: bytes) -> None:
        if not self._lost:
            self._connection.data_received(data)
            self._deliver()

    def _eof(self) -> None:
        if not self._lost:
            self._connection.eof_received()
            self.close()

    def write_eof(self) -> None:
        self._server.receive(b"")
        self.close()

    def can_write_eof(self) -> bool:
        return True

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._loop.call_soon(self._lose)

    def abort(self) -> None:
        self.close()

    def _lose(self) -> None:
        if not self._lost:
            self._lost = True
            self._connection.connection_lost(None)

    def is_closing(self) -> bool:
        return self._closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_write_buffer_limits(self, high: Any = None, low: Any = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


# ---- replay: sync ---------------------------------------------------------------------------------------------


def _served_socket(server: _ServedServer) -> socket.socket:
    """The socket the sync client gets in a replay: one end of a socket pair (its reading thread selects and reads it
    as any socket), whose sends are answered by the server, the answers written into the other end by a thread."""
    client, peer = socket.socketpair()
    answers: queue.SimpleQueue = queue.SimpleQueue()
    threading.Thread(target=_write_answers, args=(peer, answers), name="wop-websocket-replay", daemon=True).start()
    _served_sockets[client] = (server, answers)
    client.__class__ = _ServedSocket
    return client


def _write_answers(peer: socket.socket, answers: Any) -> None:
    """Write a served connection's answers into its pair's far end, then its end (None), until the client is gone."""
    with peer:
        while (data := answers.get()) is not None:
            try:
                if data:
                    peer.sendall(data)
                else:
                    peer.shutdown(socket.SHUT_WR)
            except OSError:
                return


_served_sockets: Any = weakref.WeakKeyDictionary()  # a served socket -> (its server, its answers' queue)


class _ServedSocket(socket.socket):
    """See _served_socket: send and sendall go to the server; what it answers is queued for the far end."""

    __slots__ = ()

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._answer(bytes(data))

    def send(self, data: Any, flags: int = 0) -> int:
        data = bytes(data)
        self._answer(data)
        return len(data)

    def setsockopt(self, level: int, option: int, value: Any, *size: int) -> None:
        """TCP options (websockets 16 sets TCP_NODELAY on a socket it is handed) have no meaning on a socket pair."""
        if level != socket.IPPROTO_TCP:
            super().setsockopt(level, option, value, *size)

    def shutdown(self, how: int) -> None:
        if how in (socket.SHUT_WR, socket.SHUT_RDWR):
            self._answer(b"")
        super().shutdown(how)

    def close(self) -> None:
        served = _served_sockets.get(self)
        if served is not None:
            served[1].put(None)
        super().close()

    def _answer(self, data: bytes) -> None:
        server, answers = _served_sockets[self]
        with server.lock:
            server.receive(data)
            if server.outgoing:
                answers.put(bytes(server.outgoing))
                server.outgoing.clear()
            if server.ended and not server.end_sent:
                server.end_sent = True
                answers.put(b"")


class _NoEncryption:
    """The ssl= a replayed wss connection is given: its socket stays as it is (the capture answers in plain frames)."""

    def wrap_socket(self, sock: Any, **kwargs: Any) -> Any:
        return sock
