"""Canonical bytes: orjson with sorted keys for fast hashing and comparing, JCS where the spec names it."""

import base64
import hashlib
import re
from typing import Any

import orjson

_SORTED = orjson.OPT_SORT_KEYS


def _binary(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(value).decode()}
    raise TypeError(f"{type(value).__name__} is not JSON")


def canonical_bytes(value: Any) -> bytes:
    """Compact JSON with keys sorted recursively (bytes as base64): the fast path for comparing and hashing."""
    return orjson.dumps(value, option=_SORTED, default=_binary)


class NotJCS(ValueError):
    """A value RFC 8785 cannot write: an integer no IEEE 754 double holds (beyond about 1.8e308)."""


def jcs_bytes(value: Any) -> bytes:
    """RFC 8785 JSON Canonicalization Scheme bytes, for keys exchanged with OpenWOP hosts.

    JCS is defined over I-JSON, whose numbers are IEEE 754 doubles: an integer beyond ±(2^53-1) is
    written as the nearest double, the number JSON.parse gives a JavaScript host (and orjson gives wop
    for one beyond 64 bits), so every host writes the same bytes; one no double holds is NotJCS.
    Where JCS and orjson's sorted output are the same bytes — strings, integers within ±(2^53-1),
    floats written without an exponent and not integral, and no character at or above U+E000 (where
    JCS's UTF-16 key order and orjson's code-point order part) — orjson writes them, 50x faster than
    the rfc8785 package, which writes everything else (and raises what it raises)."""
    if _orjson_writes_jcs(value):
        try:
            encoded = orjson.dumps(value, option=_SORTED)
        except TypeError:  # a key that is not a string: rfc8785 says what is wrong
            pass
        else:
            if encoded.isascii() or _FROM_U_E000.search(encoded) is None:
                return encoded
    import rfc8785

    return rfc8785.dumps(_as_doubles(value))


_SAFE_INTEGER = 2**53 - 1


def _as_doubles(value: Any) -> Any:
    """value with every integer made the nearest double: JCS writes one within ±(2^53-1) as the integer itself, and
    one beyond as the double JSON.parse gives a host."""
    kind = type(value)
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            raise NotJCS(f"the integer {str(value)[:20]}… is too large for a JSON number (an IEEE 754 double)") from None
    if kind is dict:
        return {key: _as_doubles(child) for key, child in value.items()}
    if kind is list or kind is tuple:
        return [_as_doubles(child) for child in value]
    return value


_FROM_U_E000 = re.compile(rb"[\xee-\xff]")  # the UTF-8 lead bytes of U+E000 and above


def _orjson_writes_jcs(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is dict:
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
        elif kind is int:
            if not -_SAFE_INTEGER <= item <= _SAFE_INTEGER:
                return False
        elif kind is not float or not 1e-4 <= abs(item) < 1e15 or item.is_integer():
            return False
    return True


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of some bytes."""
    return hashlib.sha256(data).hexdigest()


def content_hash(value: Any) -> str:
    """SHA-256 over the canonical bytes of a JSON value: equal values, equal hashes."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()
