"""`wop cache-key`: the LLM cache key (openwop-replay-and-fork.md recipe) of a request."""

import sys
from pathlib import Path

import typer


def command(
    source: str = typer.Argument(..., metavar="FILE|-", help="LLMCacheKeyInput JSON file, or - for standard input."),
    json_output: bool = typer.Option(False, "--json", help="Print the key and the canonical input as JSON."),
) -> None:
    """Print the 64-hex LLM cache key of a request: JCS over the recipe's fields, then SHA-256.

    Only provider, model, messages (role, content, name, toolCallId: a message's id and other
    fields are left out), tools (sorted by name), temperature, topP, topK and responseFormat
    count; max_tokens, stop, stream, metadata, user, seed and the rest are ignored.

    \b
    Examples:
      wop cache-key request.json
      echo '{"provider":"openai","model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}' | wop cache-key -
    """
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
        typer.echo(key)


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
