"""Canonical bytes: orjson with sorted keys for fast hashing and comparing, JCS where the spec names it."""

import base64
import hashlib
from typing import Any

import orjson

_SORTED = orjson.OPT_SORT_KEYS


def _binary(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"{type(value).__name__} is not JSON")


def canonical_bytes(value: Any) -> bytes:
    """Compact JSON with keys sorted recursively (bytes as base64): the fast path for comparing and hashing."""
    return orjson.dumps(value, option=_SORTED, default=_binary)


def jcs_bytes(value: Any) -> bytes:
    """RFC 8785 JSON Canonicalization Scheme bytes, for keys exchanged with OpenWOP hosts."""
    import rfc8785

    return rfc8785.dumps(value)


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of some bytes."""
    return hashlib.sha256(data).hexdigest()


def content_hash(value: Any) -> str:
    """SHA-256 over the canonical bytes of a JSON value: equal values, equal hashes."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()
