"""Turning a program's values (SDK objects, dataclasses, paths, sets) into JSON for the capture.

orjson serializes the common types natively; these hooks cover the rest without ever failing a
call: anything unknown is recorded by its repr.
"""

import base64
import os
import sys
from typing import Any

import orjson

BYTES_TAG = "$bytes"
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def json_default(value: Any) -> Any:
    """orjson `default` hook: a JSON-able stand-in for a value orjson cannot serialize."""
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=orjson.dumps)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {BYTES_TAG: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    decimal = sys.modules.get("decimal")
    if decimal is not None and isinstance(value, decimal.Decimal):
        return str(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return repr(value)


def dumps(value: Any) -> bytes:
    """JSON bytes of any value; bytes travel as {"$bytes": base64} until `revive_bytes` restores them
    (a value nested deeper than a capture holds is recorded cut at that depth, never failing the call)."""
    try:
        return orjson.dumps(value, default=json_default, option=_OPTIONS)
    except orjson.JSONEncodeError:
        from openwop_cli.format.schema import MAX_DEPTH, cut_nesting

        return orjson.dumps(cut_nesting(value, MAX_DEPTH), default=json_default, option=_OPTIONS)


def to_json(value: Any) -> Any:
    """The JSON form of a value, as Python (what a replay hands back in place of the live value)."""
    try:
        orjson.dumps(value)
    except TypeError:
        return revive_bytes(orjson.loads(dumps(value)))
    return value


def json_form(value: Any) -> Any:
    """The value exactly as a capture's JSON holds it: tuples as lists, SDK objects and dataclasses through
    json_default, bytes as {"$bytes": base64}. What an LLM request's keys are computed from, in a capture (by
    the process that writes it) and in a replay (by the program) alike."""
    return orjson.loads(dumps(value))


def revive_bytes(value: Any) -> Any:
    """value with every {"$bytes": base64} stand-in turned back into bytes (the sink stores them as blobs)."""
    kind = type(value)
    if kind is dict:
        if len(value) == 1 and BYTES_TAG in value and type(value[BYTES_TAG]) is str:
            return base64.b64decode(value[BYTES_TAG])
        return {key: revive_bytes(child) for key, child in value.items()}
    if kind is list:
        return [revive_bytes(child) for child in value]
    return value


def canonical(value: Any) -> bytes:
    """Sorted-key JSON bytes of any value (SDK objects through json_default): equal values, equal bytes."""
    return orjson.dumps(value, default=json_default, option=_OPTIONS | orjson.OPT_SORT_KEYS)


PLAIN_TYPES = (dict, list, str, int, float, bool, type(None))


def type_name(value: Any) -> str | None:
    """module:qualname of a value that is not plain JSON, so a replay can hand back the same type."""
    kind = type(value)
    if kind in PLAIN_TYPES:
        return None
    return f"{kind.__module__}:{kind.__qualname__}"


def revive(value: Any, name: str | None) -> Any:
    """The recorded JSON value as the type it had (a pydantic model or dataclass), when the program has that type loaded.

    Only modules the program already imported are consulted: a capture never makes wop import code.
    """
    if not name or ":" not in name:
        return value
    module_name, _, qualname = name.partition(":")
    target: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is None or not isinstance(target, type):
        return value
    validate = getattr(target, "model_validate", None)
    try:
        if callable(validate):
            return validate(value)
        if hasattr(target, "__dataclass_fields__") and isinstance(value, dict):
            return target(**value)
        if target in (tuple, set, frozenset) and isinstance(value, list):
            return target(value)
    except Exception:
        return value
    return value
