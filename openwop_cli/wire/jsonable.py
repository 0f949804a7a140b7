"""Turning a program's values (SDK objects, dataclasses, paths, sets) into JSON for the capture.

orjson serializes the common types natively; these hooks cover the rest without ever failing a
call: anything unknown is recorded by its repr. An integer orjson cannot write (beyond 64 bits)
is recorded exactly as {"$bigint": "<digits>"}, and handed back to a replayed program as the int.
"""

import base64
import os
import sys
from typing import Any

import orjson

from openwop_cli.format.events import BIG_INT_TAG, BYTES_TAG, LARGEST_INT, SMALLEST_INT, revived_big_ints

_BIG_INT_MARKER = b'"%s"' % BIG_INT_TAG.encode()
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def json_default(value: Any) -> Any:
    """orjson `default` hook: a JSON-able stand-in for a value orjson cannot serialize."""
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=dumps)
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
    """JSON bytes of any value; bytes travel as {"$bytes": base64} until `revive_bytes` restores them, an integer
    beyond 64 bits as {"$bigint": digits} (see `tag_big_int`), and a value nested deeper than a capture holds is
    recorded cut at that depth: never failing the call."""
    try:
        return orjson.dumps(value, default=json_default, option=_OPTIONS)
    except TypeError:  # too deep, or an integer beyond 64 bits (orjson says which only in its message)
        from openwop_cli.format.schema import MAX_DEPTH

        return orjson.dumps(_writable(value, MAX_DEPTH), default=json_default, option=_OPTIONS)


def _writable(value: Any, levels: int) -> Any:
    """value as orjson can write it: cut below `levels` container levels (as format.schema.cut_nesting does), every
    integer beyond 64 bits tagged, and the objects json_default stands in for opened, so none hides such an int."""
    from openwop_cli.format.schema import TOO_DEEP

    if isinstance(value, int):
        return recorded_int(value)
    is_list = isinstance(value, list) or type(value) is tuple  # what orjson writes as an array (not a namedtuple)
    if is_list or isinstance(value, dict) or hasattr(type(value), "__dataclass_fields__"):
        if levels <= 0:
            return TOO_DEEP
        if is_list:
            return [_writable(item, levels - 1) for item in value]
        if isinstance(value, dict):
            return {_writable_key(key): _writable(item, levels - 1) for key, item in value.items()}
        import dataclasses

        return {field.name: _writable(getattr(value, field.name), levels - 1) for field in dataclasses.fields(value)}
    try:
        orjson.dumps(value, option=_OPTIONS)  # a string, float, date, enum, numpy array…: written as it is
        return value
    except TypeError:
        stand_in = json_default(value)
    return stand_in if type(stand_in) is str else _writable(stand_in, levels - 1)


def _writable_key(key: Any) -> Any:
    return str(key) if isinstance(key, int) and not SMALLEST_INT <= key <= LARGEST_INT else key


def recorded_int(number: int) -> int | dict[str, str]:
    """An integer as a capture holds it: itself within orjson's range, else tagged (tag_big_int)."""
    return number if SMALLEST_INT <= number <= LARGEST_INT else tag_big_int(number)


def tag_big_int(value: int) -> dict[str, str]:
    """The recorded form of an integer beyond 64 bits: its exact digits (hex past Python's decimal limit)."""
    number = int(value)  # an IntEnum's str is its name
    try:
        return {BIG_INT_TAG: str(number)}
    except ValueError:  # more digits than int→str converts (sys.set_int_max_str_digits); hex has no limit
        return {BIG_INT_TAG: hex(number)}


def revive_big_ints(value: Any) -> Any:
    """value with every {"$bigint": digits} that `dumps` wrote turned back into the int (what a replay hands the
    program); a value without one is returned as it is, at the cost of one orjson pass."""
    try:
        if _BIG_INT_MARKER not in orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS):
            return value
    except TypeError:  # bytes (resolved blobs) in it: look
        pass
    return revived_big_ints(value)


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
    """The recorded JSON value as the type it had (a pydantic model or dataclass), when the program has that type
    loaded; integers beyond 64 bits are ints again.

    Only modules the program already imported are consulted: a capture never makes wop import code.
    """
    value = revive_big_ints(value)
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
