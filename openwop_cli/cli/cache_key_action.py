"""What `wop cache-key` does once its options are parsed: print the LLM cache key of a request.

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

import sys
from pathlib import Path


def print_cache_key(*, source: str, json_output: bool) -> int:
    """Print the cache key of the request in source (a file, or - for standard input); returns wop's exit code."""
    import orjson

    from openwop_cli.errors import UsageError
    from openwop_cli.format.cachekey import CacheKeyInputError, cache_key, cache_key_input

    raw = _read_source(source)
    try:
        request = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{_name(source)} is not JSON: {exc}") from None
    if not isinstance(request, dict):
        raise UsageError(f"{_name(source)} must hold a JSON object (an LLMCacheKeyInput)")
    try:
        key = cache_key(request)
    except CacheKeyInputError as exc:
        raise UsageError(f"{_name(source)}: {exc}") from None
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json({"cacheKey": key, "canonicalInput": cache_key_input(request)})
    else:
        print(key, flush=True)
    return 0


def _read_source(source: str) -> bytes:
    from openwop_cli.errors import UsageError
    from openwop_cli.format.files import MAX_INPUT_BYTES, read_regular

    if source == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise UsageError(f"standard input holds more than the {MAX_INPUT_BYTES:,} bytes wop reads as a request")
        return data
    try:
        return read_regular(Path(source), MAX_INPUT_BYTES, UsageError, follow=True)
    except FileNotFoundError:
        raise UsageError(f"no such file: {source}") from None


def _name(source: str) -> str:
    return "standard input" if source == "-" else source
