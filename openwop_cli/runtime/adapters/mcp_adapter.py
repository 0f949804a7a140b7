"""MCP: each request a client sends to an MCP server is one recorded tool call, whatever the transport.

The client transports of the official SDK (1.x and 2.x) — `stdio_client`, `streamable_http_client`
(and 1.x's `streamablehttp_client`), `sse_client`, `websocket_client` — are wrapped where their
module defines them, so every client built on them (the SDK's `ClientSession` and `Client`,
openai-agents' `MCPServerStdio`/`MCPServerStreamableHttp`, langchain-mcp-adapters) is covered.

- Capture: the real transport runs inside a boundary (its HTTP requests, sockets and child process
  are part of this unit, never recorded on their own). Each JSON-RPC request the client writes is a
  `tool_call` (kind `mcp`, name `mcp`, args: the server — command and args, or URL —, the method and
  the params); the server's reply to it is the `tool_result`, whose result is the reply (`result` or
  `error`, and its `id`) with the messages the server sent since the previous reply on the
  connection (notifications, its own requests) in `notifications`, in the order they came.
- Replay: the transport is not entered at all — no server process is started, no URL contacted.
  Each request the client writes is answered from the capture through the replayer (so a changed
  argument is an `event_payload_mismatch` at its JSON path), the recorded notifications first, then
  the reply under today's request id. What the client sends besides requests (notifications, its
  answers to the server's requests) goes nowhere. A call the capture cannot answer (`--allow-tool mcp`,
  a lenient replay past the recorded calls) gets a JSON-RPC error: there is no server to run it on.
- Fork: the server is started, and gets the client's `initialize` (its reply is the capture's) and the
  calls past the branch point, which run live and are recorded.
"""

import functools
import math
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime.adapters.exchange import recording_session
from openwop_cli.runtime.callsite import program_site
from openwop_cli.runtime.session import Session, _inside_boundary, enter_boundary, exit_boundary

KIND = "mcp"
NAME = "mcp"
_MARK = "__wop_mcp__"
# volatile trace context a client may put in a request's _meta (W3C trace context, SEP-414): never compared; nor is
# a progressToken that is the request's own JSON-RPC id
_VOLATILE_META = frozenset({"traceparent", "tracestate", "baggage"})
NOT_SERVED_CODE = -32603  # JSON-RPC internal error: what a call the replay cannot answer gets
_EVENT_BYTES = 384  # about how big an MCP event is, for the channel's batching


def patch(module: Any) -> None:
    """Wrap the MCP client transports module defines (idempotent)."""
    two_part = not _is_sdk_1()
    for name, identify, arity in (("stdio_client", _stdio_server, 2), ("streamable_http_client", _url_server, None),
                                  ("streamablehttp_client", _url_server, None), ("sse_client", _url_server, 2),
                                  ("websocket_client", _url_server, 2)):
        original = getattr(module, name, None)
        if original is None or getattr(original, _MARK, False):
            continue
        setattr(module, name, _transport(original, identify, arity or (2 if two_part else 3)))


def _is_sdk_1() -> bool:
    """mcp 1.x (JSONRPCMessage a pydantic RootModel; streamable HTTP yields a session-id getter too)."""
    from mcp import types

    return hasattr(types.JSONRPCMessage, "model_validate")


def _transport(original: Callable[..., Any], identify: Callable[[tuple, dict], dict[str, Any]],
               arity: int) -> Callable[..., Any]:
    @functools.wraps(original)
    def transport(*args: Any, **kwargs: Any) -> Any:
        session = recording_session()
        if session is None:
            return original(*args, **kwargs)
        server = identify(args, kwargs)
        if session.replayer is not None:
            return _ReplayedTransport(session, server, arity, lambda: original(*args, **kwargs))
        return _RecordedTransport(session, server, original(*args, **kwargs))

    setattr(transport, _MARK, True)
    return transport


def _stdio_server(args: tuple, kwargs: dict) -> dict[str, Any]:
    params = args[0] if args else kwargs.get("server")
    return {"command": str(getattr(params, "command", "")), "args": [str(arg) for arg in getattr(params, "args", ())]}


def _url_server(args: tuple, kwargs: dict) -> dict[str, Any]:
    from openwop_cli.runtime.providers import url_without_secrets

    return {"url": url_without_secrets(str(args[0] if args else kwargs.get("url")))}


def _message(item: Any) -> Any:
    """The JSON-RPC message a transport item carries (1.x wraps it in a RootModel); None for an exception."""
    message = getattr(item, "message", None)
    fields = getattr(message, "__dict__", None)
    return fields.get("root", message) if fields is not None else None


def _fields(message: Any) -> dict[str, Any]:
    """A pydantic message's fields (its __dict__: asking a model for a field it lacks raises inside, 10 us a time)."""
    return message.__dict__ if message is not None else {}


def _request_args(server: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """A request as the capture holds it: server, method and params, without what changes from run to run."""
    params = fields.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict):
        meta = {key: value for key, value in meta.items() if key not in _VOLATILE_META
                and not (key == "progressToken" and value == fields.get("id"))}  # the request's own id
        params = {**params, "_meta": meta}
    return {"server": server, "method": fields["method"], "params": params if params is not None else {}}


def _dumped(message: Any) -> dict[str, Any]:
    return message.model_dump(by_alias=True, mode="json", exclude_none=True)


# ---- capture -------------------------------------------------------------------------------------


class _RecordedTransport:
    """The real transport, entered and left inside a boundary, its streams recorded."""

    def __init__(self, session: Session, server: dict[str, Any], transport: Any) -> None:
        self._session = session
        self._server = server
        self._transport = transport

    async def __aenter__(self) -> tuple:
        _name_boundary_tasks()
        token = enter_boundary()  # the tasks the transport starts now inherit it
        try:
            streams = await self._transport.__aenter__()
        finally:
            exit_boundary(token)
        connection = _Connection(self._session, self._server)
        return (_RecordedReads(streams[0], connection), _RecordedWrites(streams[1], connection), *streams[2:])

    async def __aexit__(self, *exc_info: Any) -> Any:
        token = enter_boundary()
        try:
            return await self._transport.__aexit__(*exc_info)
        finally:
            exit_boundary(token)


def _name_boundary_tasks() -> None:
    """Give the asyncio tasks a boundary starts a name (on the running loop, once): an unnamed task takes the next
    of asyncio's `Task-N` numbers, and the tasks a transport starts (asyncio's subprocess pipes) do not exist in a
    replay, so every task the program starts after them would be numbered differently there. (Not a task factory:
    before Python 3.13 a factory is not given the task's name, so every task it makes would take a number.)"""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio)
        return
    create_task = loop.create_task
    if getattr(create_task, _MARK, False):
        return

    def create_boundary_task(coro: Any, *, name: Any = None, **options: Any) -> Any:
        if name is None and _inside_boundary.get():
            name = "wop boundary"
        return create_task(coro, name=name, **options)

    setattr(create_boundary_task, _MARK, True)
    try:
        loop.create_task = create_boundary_task  # type: ignore[method-assign]
    except AttributeError:  # a loop whose attributes are fixed (uvloop)
        pass


class _Connection:
    """One client's conversation with one server: its requests in flight and what the server sent since its last
    reply."""

    __slots__ = ("session", "server", "pending", "received")

    def __init__(self, session: Session, server: dict[str, Any]) -> None:
        self.session = session
        self.server = server
        self.pending: dict[Any, tuple[str, dict[str, Any]]] = {}
        self.received: list[dict[str, Any]] = []

    def sent(self, item: Any) -> None:
        """The client writes item: a request is a tool_call (recorded before it goes out)."""
        fields = _fields(_message(item))
        request_id = fields.get("id")
        if request_id is None or not isinstance(fields.get("method"), str):
            return  # a notification, or the client's answer to a request of the server's
        session = self.session
        call_id = session.new_call_id("t")
        origin = session.record_later(_tool_call, (call_id, _request_args(self.server, fields)), size=_EVENT_BYTES,
                                      site=program_site())
        self.pending[request_id] = (call_id, origin)

    def got(self, item: Any) -> None:
        """The server sent item: a reply to a request is its tool_result; anything else waits for the next reply."""
        message = _message(item)
        if message is None:
            return
        fields = message.__dict__
        if fields.get("method") is not None:
            self.received.append(_dumped(message))
            return
        entry = self.pending.pop(fields.get("id"), None)
        if entry is None:
            return
        reply = _reply(fields)
        if self.received:
            reply["notifications"], self.received = self.received, []
        call_id, origin = entry
        self.session.record_later(_tool_result, (call_id, reply), size=_EVENT_BYTES, origin=origin)


def _reply(fields: dict[str, Any]) -> dict[str, Any]:
    """A server's reply to a request as the capture holds it: its id, and its result or error."""
    error = fields.get("error")
    if error is not None:
        return {"id": fields.get("id"), "error": _dumped(error)}
    return {"id": fields.get("id"), "result": fields.get("result")}


def _tool_call(call_id: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "tool_call", {"kind": KIND, "name": NAME, "args": args, "callId": call_id}


def _tool_result(call_id: str, reply: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "tool_result", {"callId": call_id, "ok": True, "result": reply}


class _PassedThrough:
    """One of the real transport's streams, handed to the client with what it records added (subclasses)."""

    def __init__(self, stream: Any, connection: _Connection) -> None:
        self._stream = stream
        self._connection = connection

    async def __aenter__(self) -> "_PassedThrough":
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._stream.__aexit__(*exc_info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _RecordedWrites(_PassedThrough):
    """The client's write stream, each message noted before it is sent."""

    async def send(self, item: Any) -> None:
        self._connection.sent(item)
        token = enter_boundary()  # a transport that sends in the sender's context (2.x's HTTP) sends inside it
        try:
            await self._stream.send(item)
        finally:
            exit_boundary(token)


class _RecordedReads(_PassedThrough):
    """The client's read stream, each message noted as the client takes it."""

    async def receive(self) -> Any:
        item = await self._stream.receive()
        self._connection.got(item)
        return item

    def __aiter__(self) -> "_RecordedReads":
        return self

    async def __anext__(self) -> Any:
        item = await self._stream.__anext__()
        self._connection.got(item)
        return item


# ---- replay --------------------------------------------------------------------------------------


class _ReplayedTransport:
    """Streams answered from the capture: in a replay the server is neither started nor contacted. In a fork, whose
    calls past its branch point run for real, the server is started too, and is sent the client's handshake and the
    calls that run live (see _LiveServer)."""

    def __init__(self, session: Session, server: dict[str, Any], arity: int, real: Callable[[], Any]) -> None:
        self._session = session
        self._server = server
        self._arity = arity
        self._real = real
        self._replies: Any = None
        self._live: _LiveServer | None = None

    async def __aenter__(self) -> tuple:
        import anyio

        self._replies, replies = anyio.create_memory_object_stream(math.inf)
        if self._session.replayer.engine.branch:
            self._live = _LiveServer(self._real(), self._replies)
            await self._live.start()
        streams: tuple = (replies, _ServedWrites(self._session, self._server, self._replies, self._live))
        return streams + ((lambda: None),) if self._arity == 3 else streams

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            if self._live is not None:
                await self._live.stop(*exc_info)
        finally:
            self._replies.close()


class _LiveServer:
    """A fork's real server: what it sends comes to the client, but for its replies to the requests the capture
    answered (the handshake it was sent too); a reply to a call that ran live is recorded as it passes."""

    def __init__(self, transport: Any, replies: Any) -> None:
        self._transport = transport
        self._replies = replies
        self._write: Any = None
        self._group: Any = None
        self._answered: set[Any] = set()  # requests whose reply the capture gave
        self._running: dict[Any, Any] = {}  # request id → Served of a call that runs live

    async def start(self) -> None:
        import anyio

        token = enter_boundary()
        try:
            streams = await self._transport.__aenter__()
            self._write = streams[1]
            self._group = anyio.create_task_group()
            await self._group.__aenter__()
            self._group.start_soon(self._pump, streams[0])
        finally:
            exit_boundary(token)

    async def send(self, item: Any, request_id: Any = None, served: Any = None) -> None:
        """item to the server; request_id: its reply is the capture's (served None) or recorded (served)."""
        if request_id is not None:
            if served is None:
                self._answered.add(request_id)
            else:
                self._running[request_id] = served
        token = enter_boundary()
        try:
            await self._write.send(item)
        finally:
            exit_boundary(token)

    async def _pump(self, reads: Any) -> None:
        async for item in reads:
            fields = _fields(_message(item))
            request_id = fields.get("id") if fields.get("method") is None else None
            if request_id in self._answered:
                self._answered.discard(request_id)
                continue
            served = self._running.pop(request_id, None)
            if served is not None:
                served.finish(result=_reply(fields))
            await self._replies.send(item)

    async def stop(self, *exc_info: Any) -> None:
        token = enter_boundary()
        try:
            self._group.cancel_scope.cancel()
            await self._group.__aexit__(None, None, None)
            await self._transport.__aexit__(*exc_info)
        finally:
            exit_boundary(token)


class _ServedWrites:
    """The client's write stream in a replay: each request answered from the capture, at once (or, in a fork past
    its branch point, by the live server)."""

    def __init__(self, session: Session, server: dict[str, Any], replies: Any, live: _LiveServer | None) -> None:
        from mcp.shared.message import SessionMessage

        self._session = session
        self._server = server
        self._replies = replies
        self._live = live
        self._wrap = SessionMessage
        self._parse = _message_parser()

    async def send(self, item: Any) -> None:
        fields = _fields(_message(item))
        request_id = fields.get("id")
        if request_id is None or not isinstance(fields.get("method"), str):
            if self._live is not None:  # a notification, an answer to one of the server's requests
                await self._live.send(item)
            return
        served = self._session.replayer.tool(NAME, _request_args(self._server, fields), kind=KIND)
        if served.live and self._live is not None:
            await self._live.send(item, request_id, served)
            return
        if served.live:  # an allowed or unexpected call in a replay: there is no server to run it on
            reply = {"error": {"code": NOT_SERVED_CODE, "message": "wop replay: the MCP server is not started in a "
                                                                   "replay, and this call is not in the capture"}}
            served.finish(result=reply)
        else:
            reply = served.value()
            if self._live is not None and fields["method"] == "initialize":
                await self._live.send(item, request_id)  # the live server needs its handshake
        params = fields.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        for notification in reply.get("notifications") or ():
            self._deliver(_with_progress_token(notification, token))
        answer = {"jsonrpc": "2.0", "id": request_id}
        answer.update((key, reply[key]) for key in ("result", "error") if key in reply)
        self._deliver(answer)

    def _deliver(self, message: dict[str, Any]) -> None:
        self._replies.send_nowait(self._wrap(self._parse(message)))

    def close(self) -> None:
        """Nothing to close: the replies end with the transport."""

    async def aclose(self) -> None:
        """Nothing to close: the replies end with the transport."""

    async def __aenter__(self) -> "_ServedWrites":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        return None


def _message_parser() -> Callable[[dict[str, Any]], Any]:
    """JSON → the SDK's JSON-RPC message (1.x: the JSONRPCMessage root model; 2.x: its union's adapter)."""
    from mcp import types

    if _is_sdk_1():
        return types.JSONRPCMessage.model_validate
    return types.jsonrpc_message_adapter.validate_python


def _with_progress_token(message: dict[str, Any], token: Any) -> dict[str, Any]:
    """A recorded progress notification about this request, with today's progress token (the recorded one is the
    recorded request's id, and redacted in the capture as a token)."""
    params = message.get("params")
    if token is None or message.get("method") != "notifications/progress" or not isinstance(params, dict):
        return message
    return {**message, "params": {**params, "progressToken": token}}
