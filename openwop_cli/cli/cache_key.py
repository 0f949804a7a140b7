"""`wop cache-key`: the LLM cache key (openwop-replay-and-fork.md recipe) of a request."""

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
    from openwop_cli.cli.cache_key_action import print_cache_key

    raise typer.Exit(print_cache_key(source=source, json_output=json_output))
