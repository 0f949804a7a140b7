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
    """JSON bytes of any value; bytes travel as {"$bytes": base64} until `revive_bytes` restores them."""
    return orjson.dumps(value, default=json_default, option=_OPTIONS)


def to_json(value: Any) -> Any:
    """The JSON form of a value, as Python (what a replay hands back in place of the live value)."""
    try:
        orjson.dumps(value)
    except TypeError:
        return revive_bytes(orjson.loads(dumps(value)))
    return value


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
