"""The public SDK, used as `import openwop_cli as wop`: the boundaries a program marks for recording.

Every function here is a plain pass-through when no session is active (WOP_MODE unset and no
`wop.capture`), costing one dictionary lookup. With a session, each boundary records its request
before acting and its result after, so a crash mid-call still leaves the request on record.
"""

import functools
import inspect
import os
import random as _random
import sys
import threading
import time as _time
import uuid as _uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar


from openwop_cli.format.canonical import content_hash
from openwop_cli.runtime import outputmarks
from openwop_cli.runtime.jsonable import json_form, revive, to_json, type_name
from openwop_cli.runtime.session import (
    UNRESOLVED,
    AppendRecorder,
    Session,
    _state,
    activate,
    current,
    deactivate,
    describe_exception,
    enter_boundary,
    exit_boundary,
)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


# ---- tools -------------------------------------------------------------------------------------


def tool(function: F | None = None, *, name: str | None = None) -> Any:
    """Decorator: record each call of a sync or async function as tool_call/tool_result.

    Arguments are recorded by parameter name (defaults filled in, `self`/`cls` left out); an
    exception is recorded with its type and message, then re-raised.

        @wop.tool
        def lookup_order(order_id: str) -> dict: ...
    """

    def decorate(fn: F) -> F:
        tool_name = name or fn.__name__
        bind = _argument_binder(fn)
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_tool(*args: Any, **kwargs: Any) -> Any:
                session = _state["session"]
                if session is UNRESOLVED:
                    session = current()
                if session is None:
                    return await fn(*args, **kwargs)
                if session.replayer is not None:
                    served = session.replayer.tool(tool_name, bind(args, kwargs))
                    if not served.live:
                        return served.value()
                    return await _run_live_async(served, fn, args, kwargs)
                call_id = _record_tool_call(session, tool_name, bind(args, kwargs))
                boundary = _open_body()
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    _record_failure(session, "tool_result", {"callId": call_id}, exc)
                    raise
                finally:
                    _close_body(boundary)
                _record_tool_result(session, call_id, result)
                return result

            return async_tool  # type: ignore[return-value]

        @functools.wraps(fn)
        def sync_tool(*args: Any, **kwargs: Any) -> Any:
            session = _state["session"]
            if session is UNRESOLVED:
                session = current()
            if session is None:
                return fn(*args, **kwargs)
            if session.replayer is not None:
                served = session.replayer.tool(tool_name, bind(args, kwargs))
                return served.value() if not served.live else _run_live(served, fn, args, kwargs)
            call_id = _record_tool_call(session, tool_name, bind(args, kwargs))
            boundary = _open_body()
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                _record_failure(session, "tool_result", {"callId": call_id}, exc)
                raise
            finally:
                _close_body(boundary)
            _record_tool_result(session, call_id, result)
            return result

        return sync_tool  # type: ignore[return-value]

    return decorate(function) if function is not None else decorate


def _record_tool_call(session: Session, name: str, args: dict[str, Any]) -> str:
    call_id = session.new_call_id("t")
    session.record("tool_call", {"name": name, "args": args, "callId": call_id})
    return call_id


def _record_tool_result(session: Session, call_id: str, result: Any) -> None:
    data = {"callId": call_id, "ok": True, "result": result}
    kind = type_name(result)
    if kind is not None:
        data["resultType"] = kind
    session.record("tool_result", data)


def _run_live(served: Any, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """A replayed call that runs for real (an allowed tool, or a fork past its branch point)."""
    boundary = _open_body()
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:
        served.finish(error=exc)
        raise
    finally:
        _close_body(boundary)
    served.finish(result=result)
    return result


async def _run_live_async(served: Any, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    boundary = _open_body()
    try:
        result = await fn(*args, **kwargs)
    except BaseException as exc:
        served.finish(error=exc)
        raise
    finally:
        _close_body(boundary)
    served.finish(result=result)
    return result


def _open_body() -> Any:
    """A recorded call's body starts here: a boundary (what runs below records nothing of its own) whose printed
    output is marked as the call's (runtime.outputmarks: a replay, serving the call, prints none of it)."""
    outputmarks.begin()
    return enter_boundary()


def _close_body(boundary: Any) -> None:
    exit_boundary(boundary)
    outputmarks.end()


def _record_failure(session: Session, event_type: str, data: dict[str, Any], exc: BaseException) -> None:
    session.record(event_type, {**data, "ok": False, "error": describe_exception(exc)})


def _argument_binder(fn: Callable[..., Any]) -> Callable[[tuple, dict], dict[str, Any]]:
    """A fast args→{name: value} mapping for fn, computed once at decoration time."""
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    skip = params[0].name if params and params[0].name in ("self", "cls") else None
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if all(param.kind in plain for param in params):
        names = tuple(param.name for param in params if param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
        defaults = {param.name: param.default for param in params if param.default is not param.empty}

        def bind_plain(args: tuple, kwargs: dict) -> dict[str, Any]:
            bound = {**defaults, **dict(zip(names, args)), **kwargs}
            if skip is not None:
                bound.pop(skip, None)
            return bound

        return bind_plain

    def bind_general(args: tuple, kwargs: dict) -> dict[str, Any]:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return {"args": list(args), "kwargs": kwargs}
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if skip is not None:
            arguments.pop(skip, None)
        return arguments

    return bind_general


# ---- LLM calls ---------------------------------------------------------------------------------


def llm_call(provider: str, model: str, request: dict[str, Any], call: Callable[[], T]) -> T:
    """Record an LLM call made by any client: llm_request (with the recipe cacheKey), then llm_response.

    `call` performs the request and returns the provider's response (an SDK object or a dict);
    if it returns an awaitable, so does llm_call.

        reply = wop.llm_call("openai", "gpt-4o-mini", {"messages": msgs},
                             lambda: client.chat.completions.create(model="gpt-4o-mini", messages=msgs))
    """
    session = current()
    if session is None:
        return call()
    request = json_form(request)  # tuples, dataclasses, SDK objects: as the capture holds them, in capture and replay
    call_id = session.new_call_id("llm")
    context = {"provider": provider, "model": model, "callId": call_id}
    if session.replayer is not None:
        from openwop_cli.runtime.providers import kept_request_keys

        keys = kept_request_keys(provider, model, request, session.replayer.source.redactor)
        served = session.replayer.llm(context, request, keys)
        if not served.live:
            return served.value()
        return _call_live_llm(served, call)
    session.record("llm_request", {**context, "request": request})  # its keys are added where it is written
    session.flush()
    boundary = _open_body()
    try:
        response = call()
    except BaseException as exc:
        _record_failure(session, "llm_response", context, exc)
        raise
    finally:
        _close_body(boundary)
    if inspect.isawaitable(response):
        return _finish_async_llm(session, context, response)  # type: ignore[return-value]
    _record_llm_response(session, context, response)
    return response


def _call_live_llm(served: Any, call: Callable[[], Any]) -> Any:
    boundary = _open_body()
    try:
        response = call()
    except BaseException as exc:
        served.finish(error=exc)
        raise
    finally:
        _close_body(boundary)
    if inspect.isawaitable(response):
        return _finish_live_async_llm(served, response)
    served.finish(response=response)
    return response


async def _finish_live_async_llm(served: Any, pending: Awaitable[Any]) -> Any:
    boundary = _open_body()
    try:
        response = await pending
    except BaseException as exc:
        served.finish(error=exc)
        raise
    finally:
        _close_body(boundary)
    served.finish(response=response, awaited=True)
    return response


async def _finish_async_llm(session: Session, context: dict[str, Any], pending: Awaitable[Any]) -> Any:
    boundary = _open_body()
    try:
        response = await pending
    except BaseException as exc:
        _record_failure(session, "llm_response", context, exc)
        raise
    finally:
        _close_body(boundary)
    _record_llm_response(session, context, response, awaited=True)
    return response


def _record_llm_response(session: Session, context: dict[str, Any], response: Any, awaited: bool = False) -> None:
    session.record("llm_response", llm_response_data(context, response, awaited))
    session.flush()


def llm_response_data(context: dict[str, Any], response: Any, awaited: bool) -> dict[str, Any]:
    """The llm_response event's data: stop reason, usage, the response as JSON and what a replay needs to rebuild it."""
    from openwop_cli.runtime.providers import stop_reason, usage

    recorded = to_json(response)
    data = {**context, "ok": True, "stopReason": stop_reason(recorded), "usage": usage(recorded), "response": recorded}
    kind = type_name(response)
    if kind is not None:
        data["responseType"] = kind
    if awaited:
        data["awaited"] = True
    return data


# ---- nondeterministic values -------------------------------------------------------------------


def nondeterministic(source: str, key: str, fn: Callable[[], T]) -> T:
    """Record the value fn returns as a `nondeterministic` event (source: clock, rng, uuid, network, …)."""
    session = current()
    if session is None:
        return fn()
    value = fn()
    kind = type_name(value)
    return _record_value(session, source, key, value, to_json, lambda recorded: revive(recorded, kind))


def _record_value(session: Session, source: str, key: str, value: T, encode: Callable[[T], Any],
                  decode: Callable[[Any], Any]) -> T:
    if session.replayer is not None:
        return session.replayer.value(source, key, value, encode, decode)
    recorded = encode(value)
    data = {"source": source, "key": key, "value": recorded, "valueHash": content_hash(recorded)}
    session.record("nondeterministic", data)
    return value


def now(key: str = "now") -> datetime:
    """The current UTC time as an aware datetime, recorded (replays get the recorded time)."""
    session = current()
    value = datetime.now(timezone.utc)
    return value if session is None else _record_value(session, "clock", key, value, datetime.isoformat,
                                                       datetime.fromisoformat)


def time(key: str = "time") -> float:
    """time.time(), recorded."""
    session = current()
    value = _time.time()
    return value if session is None else _record_value(session, "clock", key, value, float, float)


def random(key: str = "random") -> float:
    """random.random(), recorded."""
    session = current()
    value = _random.random()
    return value if session is None else _record_value(session, "rng", key, value, float, float)


def randint(a: int, b: int, key: str = "randint") -> int:
    """random.randint(a, b), recorded."""
    session = current()
    value = _random.randint(a, b)
    if session is None:
        return value
    return _record_value(session, "rng", key, value, to_json, int)  # to_json: a range beyond 64 bits


def uuid4(key: str = "uuid4") -> _uuid.UUID:
    """uuid.uuid4(), recorded."""
    session = current()
    value = _uuid.uuid4()
    return value if session is None else _record_value(session, "uuid", key, value, str, _uuid.UUID)


def version(change_id: str, min_version: int, max_version: int) -> int:
    """getVersion: which version of a changed code path this run takes (new runs: max_version).

    The choice is recorded, so a replay of an old capture takes the branch the original run took.
    """
    if not min_version <= max_version:
        raise ValueError(f"version({change_id!r}): min_version {min_version} is greater than max_version {max_version}")
    session = current()
    if session is None:
        return max_version
    if session.replayer is not None:
        return session.replayer.version(change_id, min_version, max_version)
    session.record(
        "nondeterministic",
        {"source": "version", "key": change_id, "value": max_version, "min": min_version, "max": max_version},
    )
    return max_version


# ---- the pinned workflow -----------------------------------------------------------------------

_pinned_workflow: dict[str, Any] = {}


def workflow() -> Any:
    """The workflow document the run pinned (`wop capture --workflow F`), exactly the bytes pinned at its start:
    a later edit of the file is invisible to the run, and a replay serves the capture's copy. None when the run
    pinned no workflow (or nothing is being recorded).

        definition = wop.workflow()
    """
    session = current()
    if session is None:
        return None
    if session.replayer is not None:
        return session.replayer.workflow()
    if _pinned_workflow.get("session") is not session:
        _pinned_workflow.update(session=session, text=_ask_for_workflow(session))
    text = _pinned_workflow["text"]
    if text is None:
        return None
    import orjson

    return orjson.loads(text)


def _ask_for_workflow(session: Session) -> str | None:
    """The pinned workflow's text, from the `wop capture` process that read it once at the start."""
    from openwop_cli.runtime.program import ENV_WORKFLOW

    request = getattr(session.recorder, "request", None)
    if not os.environ.get(ENV_WORKFLOW) or request is None:
        return None
    try:
        text = request({"workflow": True}).get("workflow")
    except (OSError, ValueError) as exc:
        _warn(f"cannot get the pinned workflow from `wop capture` ({exc})")
        return None
    return text if isinstance(text, str) else None


# ---- state -------------------------------------------------------------------------------------


class _State:
    """`wop.state`: channels with the canonical reducers, recorded in the channel.written shape.

    Writes are reduced in this process (with or without a recording), so `get` returns what the
    fold of the capture will show; the recorded event carries the write input and its reducer,
    and is recorded under the same lock as the reduction, so the capture's seq order is the order
    the program's writes were reduced in. The SDK refuses what the fold refuses (state.checks):
    access, schema, breaking schema versions, a legacy variable under a declared channel's name, a
    declaration with ttlMs out of range — raising ChannelError with the spec's code. Declarations
    come from `declare` and from the `channels` of the workflow the run pinned (`wop.workflow()`).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every channel and declaration (a new run starts)."""
        from openwop_cli.state.reducers import ChannelStore

        self._lock = threading.Lock()
        self._channels = ChannelStore()
        self._variables = ChannelStore()
        self._declarations: dict[str, dict[str, Any]] | None = None
        self._warned: set[tuple[str, str]] = set()
        self._schema_check: Any = None

    def declare(self, channel: str, reducer: str = "replace", *, default: Any = None, max_size: int | None = None,
                ttl_ms: int | None = None, schema: dict[str, Any] | None = None, schema_version: int | None = None,
                compatible_with: list[int] | None = None, access: Any = None) -> None:
        """Declare a channel (the spec's ChannelDeclaration); later writes without a reducer use this one.

        A declaration the spec refuses (ttl_ms outside 0..one year) raises ChannelError.
        """
        from openwop_cli.state.checks import declaration_refusal

        declaration: dict[str, Any] = {"reducer": reducer}
        for key, value in (("default", default), ("maxSize", max_size), ("ttlMs", ttl_ms), ("schema", schema),
                           ("schemaVersion", schema_version), ("compatibleWith", compatible_with), ("access", access)):
            if value is not None:
                declaration[key] = value
        refusal = declaration_refusal(channel, declaration)
        if refusal is not None:
            raise ChannelError(refusal.code, refusal.message)
        session = current()
        with self._lock:
            self._warn_if_unknown(channel, reducer)
            self._declared()[channel] = declaration
            if session is not None:
                session.record("state_mutation", {"kind": "declare", "channel": channel, "declaration": declaration})

    def write(self, channel: str, value: Any, reducer: str | None = None, *, node_id: str | None = None,
              type_id: str | None = None, schema_version: int | None = None) -> Any:
        """Write value to channel through its reducer (declared, given, or replace); returns the reduced value.

        A write the spec refuses raises ChannelError (its `code`: channel_access_denied, validation_error,
        channel_schema_breaking_change); an input the reducer rejects (a merge of a non-object, a vote
        without userId…) raises ValueError.
        """
        from openwop_cli.state.checks import write_refusal
        from openwop_cli.state.reducers import effective_reducer, ttl_wrapped, validate

        session = current()
        with self._lock:
            declaration = self._declared().get(channel, {})
            named = reducer or declaration.get("reducer") or "replace"
            effective = effective_reducer(named)
            self._warn_if_unknown(channel, named)
            data: dict[str, Any] = {"kind": "channel", "channel": channel, "value": value, "reducer": named}
            if schema_version is None:
                schema_version = declaration.get("schemaVersion")
            for key, extra in (("nodeId", node_id), ("typeId", type_id), ("schemaVersion", schema_version)):
                if extra is not None:
                    data[key] = extra
            refusal = write_refusal(channel, value, data, declaration, effective, self._schema_problem)
            if refusal is not None:
                raise ChannelError(refusal.code, refusal.message)
            validate(effective, value)
            wrap = ttl_wrapped(declaration, effective)
            return self._reduce(self._channels, session, data, channel, value, effective, declaration, wrap)

    def set(self, key: str, value: Any) -> Any:
        """Write a legacy untyped variable (its prefix picks the reducer: `_loopbackCount:` counts…).

        Recorded in the channel.written shape (the variable's name as the channel, the prefix's reducer, the
        node from the name); a key that is a declared channel's name raises ChannelError (validation_error).
        """
        from openwop_cli.state.checks import variable_refusal
        from openwop_cli.state.reducers import legacy_node, legacy_reducer, validate

        session = current()
        with self._lock:
            refusal = variable_refusal(key, self._declared())
            if refusal is not None:
                raise ChannelError(refusal.code, refusal.message)
            reducer = legacy_reducer(key)
            validate(reducer, value)
            data: dict[str, Any] = {"kind": "variable", "key": key, "channel": key, "value": value, "reducer": reducer}
            node = legacy_node(key)
            if node is not None:
                data["nodeId"] = node
            return self._reduce(self._variables, session, data, key, value, reducer, {}, False)

    def get(self, channel: str, default: Any = None) -> Any:
        """The channel's reduced value (its declared default, or `default`, before any write)."""
        with self._lock:
            if channel in self._channels:
                return self._channels.value(channel)
            return self._declared().get(channel, {}).get("default", default)

    def _reduce(self, store: Any, session: Session | None, data: dict[str, Any], name: str, value: Any, reducer: str,
                declaration: dict[str, Any], wrap: bool) -> Any:
        """Reduce and record one write (called under the lock: seq order is reduction order)."""
        ts = _time.time_ns() // 1_000_000
        if wrap:
            data["value"] = {"value": value, "_ts": ts}
        history = None
        if session is not None and session.replayer is not None:
            ts, history = session.replayer.state({**data, "writtenAt": _iso_ms(ts)}, declaration)
        if history is not None:  # a replay's fixed history (before --from-seq): the state the recorded run had
            store.adopt(history, name)
        else:
            store.write(name, value, reducer, ts=ts, declaration=declaration)
        if session is not None and session.replayer is None:
            data["writtenAt"] = _iso_ms(ts)
            session.record("state_mutation", data, ts=ts)
        return store.value(name)

    def _declared(self) -> dict[str, dict[str, Any]]:
        """The declarations, starting from the pinned workflow's `channels` (read once, on first use)."""
        if self._declarations is None:
            from openwop_cli.state.checks import declaration_refusal

            document = workflow()
            channels = document.get("channels") if isinstance(document, dict) else None
            self._declarations = {}
            for name, declaration in (channels.items() if isinstance(channels, dict) else ()):
                refusal = declaration_refusal(name, declaration)
                if refusal is not None:
                    _warn(f"the pinned workflow's channel {name!r} is not used: {refusal.message}")
                else:
                    self._declarations[name] = declaration
        return self._declarations

    def _warn_if_unknown(self, channel: str, reducer: str) -> None:
        from openwop_cli.state.reducers import effective_reducer

        if effective_reducer(reducer) != reducer and (channel, reducer) not in self._warned:
            self._warned.add((channel, reducer))
            _warn(f"channel {channel!r} uses reducer {reducer!r}, which wop does not know: it is reduced as replace")

    def _schema_problem(self, schema: dict[str, Any], value: Any) -> str | None:
        if self._schema_check is None:
            from openwop_cli.state.fold import schema_validator

            self._schema_check = schema_validator()
            if self._schema_check is False:
                _warn("channel schemas are not checked: install jsonschema (pip install jsonschema)")
        return None if self._schema_check is False else self._schema_check(schema, value)


class ChannelError(ValueError):
    """A channel write or declaration the OpenWOP channels spec refuses; `code` is the spec's error code."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(f"{code}: {message}")


def _iso_ms(ts: int) -> str:
    return datetime.fromtimestamp(ts / 1000, timezone.utc).isoformat(timespec="milliseconds")


state = _State()


# ---- capturing without the CLI -----------------------------------------------------------------


class capture:
    """Record a block, a function or a whole program without `wop capture`.

        with wop.capture(name="checkout", out="tests/captures/checkout") as run:
            agent.main()
        print(run.path)

    Also a decorator (`@wop.capture(name=...)`). Without `out`, the capture goes to the store
    (WOP_HOME). The manifest is finalized on exit: status error with the exception when one escaped.
    """

    def __init__(self, name: str | None = None, *, out: str | os.PathLike[str] | None = None, redact: str = "default",
                 test: str | None = None, ambient: bool | None = None):
        """test: the pytest node id when the pytest plugin records (replays of it belong to pytest);
        ambient: record the clock, uuid and random reads of unmodified code (default: on, WOP_AMBIENT=0 turns it off)."""
        from openwop_cli.runtime import ambient as ambient_values

        self.name = name
        self.out = out
        self.redact = redact
        self.test = test
        self.ambient = ambient_values.enabled() if ambient is None else ambient
        self.path: Path | None = None
        self.capture_id: str | None = None
        self.manifest: dict[str, Any] | None = None
        self._sink: Any = None
        self._session: Session | None = None
        self._owner_pid = 0
        self._started = 0.0
        self._uncaught: BaseException | None = None
        self._exit_code: int | None = None

    def open(self, *, make_active: bool = True) -> Session:
        """Create the capture and record run_start; the session is active unless make_active is False."""
        from openwop_cli.format.events import new_id
        from openwop_cli.format.redact import Redactor
        from openwop_cli.format.sink import CaptureSink
        from openwop_cli.runtime.program import run_start_data

        capture_id = new_id()
        if self.out is not None:
            self.path = Path(self.out)
        else:
            from openwop_cli.home import captures_root

            self.path = captures_root() / capture_id
        self._sink = CaptureSink(self.path, redactor=Redactor.from_environment(self.redact), on_warning=_warn)
        argv, cwd = list(sys.argv), os.getcwd()
        name = self.name or Path(argv[0]).stem or None
        program: dict[str, Any] = {"argv": argv, "cwd": cwd}
        if self.test is not None:
            program["pytest"] = self.test
        self._sink.start({"captureId": capture_id, "name": name, "program": program, "ambient": self.ambient})
        self.capture_id = capture_id
        self._session = Session(AppendRecorder(self._sink.append, self._sink.flush))
        from openwop_cli.runtime import adapters, connections

        adapters.install()
        connections.watch()
        state.reset()
        self._session.record("run_start", run_start_data(argv, cwd, sys.version.split()[0]))
        self._owner_pid = os.getpid()
        self._started = _time.monotonic()
        if make_active:
            activate(self._session)
        from openwop_cli.runtime import ambient

        ambient.install(values=self.ambient)
        return self._session

    def close(self, error: BaseException | None = None, exit_code: int | None = None) -> dict[str, Any]:
        """Record run_end, pin the local modules, and finalize the manifest."""
        from openwop_cli.runtime.program import local_modules, pin_files, run_end_data

        session = self._session
        assert session is not None and self._sink is not None and self.path is not None, "capture was not opened"
        deactivate(session)
        from openwop_cli.runtime import ambient

        ambient.uninstall()
        end = run_end_data(exit_code, error, _time.monotonic() - self._started)
        session.record("run_end", end)
        cwd = os.getcwd()
        modules = pin_files((path for _, path in local_modules(cwd)), cwd, self._sink.blobs, self._sink.redactor.scrub_text)
        self.manifest = self._sink.finalize(
            end["status"], end.get("error"), program={**self._sink.manifest["program"], "python": sys.version.split()[0],
                                                      "modules": modules}
        )
        return self.manifest

    def close_at_exit(self) -> None:
        """atexit hook for WOP_MODE=capture without a parent: finalize in the process that opened."""
        if os.getpid() == self._owner_pid and self.manifest is None:
            from openwop_cli.runtime.session import finish_open_streams

            finish_open_streams()
            self.close(self._uncaught, self._exit_code)

    def note_exit_code(self) -> None:
        """Wrap sys.exit so close_at_exit knows the code (atexit handlers are not told it)."""
        real_exit = sys.exit

        def exit(code: Any = None) -> None:
            self._exit_code = code if isinstance(code, int) else (0 if code is None else 1)
            real_exit(code)

        sys.exit = exit

    def note_uncaught(self, exc: BaseException) -> None:
        """Remember the exception the program is dying of, for close_at_exit."""
        self._uncaught = exc

    def __enter__(self) -> "capture":
        self.open()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.close(exc)

    def __call__(self, fn: F) -> F:
        settings = {"name": self.name, "out": self.out, "redact": self.redact, "ambient": self.ambient}
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def captured_async(*args: Any, **kwargs: Any) -> Any:
                with capture(**settings):
                    return await fn(*args, **kwargs)

            return captured_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def captured(*args: Any, **kwargs: Any) -> Any:
            with capture(**settings):
                return fn(*args, **kwargs)

        return captured  # type: ignore[return-value]




def _warn(message: str) -> None:
    print(message if message.startswith("wop:") else f"wop: {message}", file=sys.stderr)
