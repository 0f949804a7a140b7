"""An exception as the capture records it, and the same exception raised again in a replay.

Recorded: `type` (qualname), `module`, `message` (its str), `args`, `repr` and, when it has any,
`attributes` (its __dict__, and the fields built-in exceptions keep outside their args), all as JSON. Rebuilt from the class the program has loaded
(`sys.modules`, `__main__` included; a capture never makes wop import code): built-in classes are
called with the recorded args; a class with its own __init__ is made without calling it (args and
attributes are set as recorded, so an __init__ that formats or checks its parameters cannot change
them). The result must print the same: when its str or repr differs from the record, when its
class is not loaded, or when an arg or attribute was not JSON (only its repr was recorded), the
rebuild says why, and the replay report lists it.
"""

import sys
from typing import Any

import orjson

from openwop_cli.wire.jsonable import json_form, revive_big_ints, to_json

# Fields built-in exceptions keep outside their args (OSError's filename, ImportError's name and path,
# SyntaxError's position): recorded so a rebuilt one prints the same.
BUILTIN_FIELDS = ("filename", "filename2", "name", "path", "lineno", "offset", "text", "end_lineno", "end_offset")


def exception_data(exc: BaseException) -> dict[str, Any]:
    """The recorded form of exc: type, module, message, args, repr and attributes (JSON)."""
    kind = type(exc)
    data: dict[str, Any] = {"type": kind.__qualname__, "module": kind.__module__, "message": _safe(str, exc),
                            "args": to_json(list(exc.args)), "repr": _safe(repr, exc)}
    attributes = dict(getattr(exc, "__dict__", {}))
    for name in BUILTIN_FIELDS:
        value = getattr(exc, name, None)
        if name not in attributes and isinstance(value, (str, int)) and not isinstance(value, bool):
            attributes[name] = value
    if attributes:
        data["attributes"] = to_json(attributes)
    if not (_plain(list(exc.args)) and _plain(attributes)):
        data["lossy"] = True
    return data


def rebuild_exception(error: dict[str, Any]) -> tuple[BaseException, str | None]:
    """The recorded exception raised again, and None — or the best rebuild and why it is not the same."""
    from openwop_cli.replay.errors import ReplayedToolError

    kind = _loaded_class(error)
    name = f"{error.get('module')}.{error.get('type')}"
    if kind is None:
        return ReplayedToolError(error), (f"{name} is not loaded in the replayed program, so it was raised as "
                                          "ReplayedToolError")
    args = tuple(revive_big_ints(error["args"])) if isinstance(error.get("args"), list) else (error.get("message", ""),)
    try:
        rebuilt = _construct(kind, args, revive_big_ints(error.get("attributes")))
    except Exception as exc:
        return ReplayedToolError(error), f"{name} could not be rebuilt ({type(exc).__name__}: {exc})"
    problems = []
    if error.get("lossy"):
        problems.append("an argument or attribute was not JSON, so only its repr was recorded")
    for label, render in (("str", str), ("repr", repr)):
        recorded = error.get("message") if label == "str" else error.get("repr")
        if recorded is not None and _safe(render, rebuilt) != recorded:
            problems.append(f"its {label} differs ({_safe(render, rebuilt)!r}, recorded {recorded!r})")
    return rebuilt, (f"{name} was rebuilt, but " + "; ".join(problems)) if problems else None


def _construct(kind: type, args: tuple, attributes: Any) -> BaseException:
    if _own_init(kind):
        rebuilt = kind.__new__(kind, *args)
        rebuilt.args = args
    else:
        rebuilt = kind(*args)
    if isinstance(attributes, dict):
        for key, value in attributes.items():
            setattr(rebuilt, key, value)
    return rebuilt


def _own_init(kind: type) -> bool:
    """True when a class between kind and the built-in exceptions defines __init__ in Python."""
    for klass in kind.__mro__:
        if klass.__module__ == "builtins":
            return False
        if "__init__" in vars(klass):
            return True
    return False


def _loaded_class(error: dict[str, Any]) -> type | None:
    target: Any = sys.modules.get(str(error.get("module")))
    for part in str(error.get("type", "")).split("."):
        target = getattr(target, part, None)
    return target if isinstance(target, type) and issubclass(target, BaseException) else None


def _plain(value: Any) -> bool:
    """True when value is JSON as it is, or recorded exactly all the same (an int beyond 64 bits); what is not was
    recorded through jsonable's stand-ins, such as a repr."""
    try:
        orjson.dumps(value)
    except TypeError:
        return revive_big_ints(json_form(value)) == value
    return True


def _safe(render: Any, exc: BaseException) -> str:
    try:
        return render(exc)
    except Exception as failure:
        return f"<{type(exc).__name__}: {render.__name__} failed: {failure!r}>"
