"""Machine-readable output shared by every `--json` flag."""

import sys
from typing import Any

import orjson

from openwop_cli.format.schema import dumps_wrapping


def print_json(value: Any) -> None:
    """Write value as indented JSON to stdout (recorded values in it however deep a capture may hold them)."""
    sys.stdout.buffer.write(dumps_wrapping(value, orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
    sys.stdout.flush()


def json_line(value: Any) -> bytes:
    """Compact JSON bytes of a value (bytes values become a size placeholder)."""
    return dumps_wrapping(value)


def human_size(size: int) -> str:
    """A byte count as people read it: 812 B, 14.2 KB, 3.4 MB."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
