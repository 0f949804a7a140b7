"""The public SDK, used as `import openwop_cli as wop`: the boundaries a program marks for recording.

Every function here is a plain pass-through when no session is active (WOP_MODE unset and no
`wop.capture`), costing one dictionary lookup. With a session, each boundary records its request
before acting and its result after, so a crash mid-call still leaves the request on record.
"""

import functools
import inspect
import random as _random
import sys
import time as _time
import uuid as _uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from openwop_cli.format.canonical import content_hash
from openwop_cli.runtime import outputmarks
from openwop_cli.runtime.session import (
    UNRESOLVED,
    Session,
    _state,
    current,
    describe_exception,
    enter_boundary,
    exit_boundary,
)
from openwop_cli.wire.jsonable import json_form, revive, to_json, type_name

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
        from openwop_cli.runtime.providers import keyed_request

        keys, written = keyed_request(provider, model, request, session.replayer.source.redactor)
        served = session.replayer.llm(context, request, keys, sent=written)
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
    value = datetime.now(UTC)
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



def _warn(message: str) -> None:
    print(message if message.startswith("wop:") else f"wop: {message}", file=sys.stderr)
