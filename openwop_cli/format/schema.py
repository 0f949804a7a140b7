"""Nesting and wrapping of recorded values: the bounds every capture keeps, and writing outputs that wrap them.

Nesting is bounded by what orjson writes (MAX_DEPTH levels in an event's data, or a manifest): what the sink can
write is exactly what a reader accepts (format/shape.py checks it), no recursion over it meets Python's limit, and
`dumps_wrapping` writes it inside any output (a diff, a report, a state) whatever levels that adds. Imported by the
runtime (the sink cuts what nests too deep): stdlib and orjson only.
"""

from typing import Any

import orjson

MAX_DEPTH = 254  # container levels orjson writes: the deepest an event's data or a manifest may nest
WRAPPING_LEVELS = 8  # the most levels a wop output puts around a recorded value
TOO_DEEP = f"(nested deeper than {MAX_DEPTH} levels: not recorded)"
MAX_INT = 2**53  # seqs, times and counts stay exact in any JSON reader and never overflow what orjson writes
SHALLOW_BYTES = 2 * (MAX_DEPTH + 1)  # a line shorter than this cannot nest deeper than MAX_DEPTH


def too_deep(value: Any) -> bool:
    """True when value nests deeper than MAX_DEPTH levels (orjson, which counts them in C, would refuse it)."""
    try:
        orjson.dumps(value, default=_as_null)
    except orjson.JSONEncodeError:
        return True
    return False


def cut_nesting(value: Any, levels: int) -> Any:
    """value with whatever nests deeper than levels replaced by a note: how a program's too-deep value is recorded."""
    if levels <= 0 and type(value) in (dict, list, tuple):
        return TOO_DEEP
    if type(value) is dict:
        return {key: cut_nesting(item, levels - 1) for key, item in value.items()}
    if type(value) in (list, tuple):
        return [cut_nesting(item, levels - 1) for item in value]
    return value


def shown_bytes(value: Any) -> Any:
    """How an output shows bytes (a resolved binary blob, a program's raw request): their size and the start of
    their sha256, so two that differ read differently, never their content."""
    if isinstance(value, (bytes, bytearray)):
        import hashlib

        return f"<{len(value)} bytes sha256:{hashlib.sha256(value).hexdigest()[:12]}>"
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps_wrapping(value: Any, option: int = 0, default: Any = shown_bytes) -> bytes:
    """orjson.dumps for an output that wraps recorded values (a diff, a report, a state): a value a reader
    accepts may already nest MAX_DEPTH levels, so the output's own levels would take it past what orjson
    writes; then the few outer levels are written here and every value below them by orjson on its own."""
    try:
        return orjson.dumps(value, option=option, default=default)
    except orjson.JSONEncodeError:
        return _spliced(value, WRAPPING_LEVELS, default) + (b"\n" if option & orjson.OPT_APPEND_NEWLINE else b"")


def _spliced(value: Any, levels: int, default: Any) -> bytes:
    if levels and type(value) is dict:
        return b"{" + b",".join(orjson.dumps(str(key)) + b":" + _spliced(item, levels - 1, default)
                                for key, item in value.items()) + b"}"
    if levels and type(value) in (list, tuple):
        return b"[" + b",".join(_spliced(item, levels - 1, default) for item in value) + b"]"
    return orjson.dumps(value, default=default)


def _as_null(_value: Any) -> None:
    """Bytes (resolved binary blobs) count as one level, like any scalar."""
    return None
