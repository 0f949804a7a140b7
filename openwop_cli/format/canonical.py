"""Canonical bytes: orjson with sorted keys for fast hashing and comparing, JCS where the spec names it."""

import hashlib
from typing import Any

import orjson
import rfc8785

_SORTED = orjson.OPT_SORT_KEYS


def canonical_bytes(value: Any) -> bytes:
    """Compact JSON with keys sorted recursively: the fast path for comparing and hashing events."""
    return orjson.dumps(value, option=_SORTED)


def jcs_bytes(value: Any) -> bytes:
    """RFC 8785 JSON Canonicalization Scheme bytes, for keys exchanged with OpenWOP hosts."""
    return rfc8785.dumps(value)


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of some bytes."""
    return hashlib.sha256(data).hexdigest()


def content_hash(value: Any) -> str:
    """SHA-256 over the canonical bytes of a JSON value: equal values, equal hashes."""
    return hashlib.sha256(orjson.dumps(value, option=_SORTED)).hexdigest()
