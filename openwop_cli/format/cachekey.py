"""The LLM cache-key recipe of openwop-replay-and-fork.md: a closed field set, JCS, SHA-256, hex.

Only the recipe's fields influence the key; anything else (max_tokens, stop, stream, metadata,
user, seed, request ids, trace context, a message's id) is ignored by construction. Numbers are
JCS's (format.canonical.jcs_bytes): an integer beyond ±(2^53-1) is keyed as the nearest double,
and one no double holds has no key (CacheKeyInputError).
"""

import hashlib
from typing import Any, Mapping

from openwop_cli.format.canonical import NotJCS, jcs_bytes

OPTIONAL_FIELDS = ("temperature", "topP", "topK", "responseFormat")
TOOL_FIELDS = ("name", "description", "parameters")
OPTIONAL_MESSAGE_FIELDS = ("name", "toolCallId")  # beside role and content: a message's whole field set


class CacheKeyInputError(ValueError):
    """The request does not have the shape of the recipe's LLMCacheKeyInput."""


def cache_key_input(request: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical object the recipe hashes: required fields, present optional fields, sorted tools."""
    provider = request.get("provider")
    if not isinstance(provider, str) or not provider or not provider.isascii() or provider != provider.lower():
        raise CacheKeyInputError(f"provider must be a lowercase ASCII id such as 'openai', got {provider!r}")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise CacheKeyInputError(f"model must be a non-empty string, got {model!r}")
    messages = request.get("messages")
    if not isinstance(messages, list):
        raise CacheKeyInputError("messages must be an array of {role, content} objects")
    canonical: dict[str, Any] = {"provider": provider, "model": model,
                                 "messages": [_recipe_message(index, message) for index, message in enumerate(messages)]}
    tools = request.get("tools")
    if tools is not None:
        canonical["tools"] = _sorted_tools(tools)
    for field in OPTIONAL_FIELDS:
        value = request.get(field)
        if value is not None:
            canonical[field] = value
    return canonical


def cache_key(request: Mapping[str, Any]) -> str:
    """The 64-hex LLM cache key of a request in the recipe's LLMCacheKeyInput shape."""
    return hashlib.sha256(_jcs(cache_key_input(request))).hexdigest()


def tool_schema_hash(request: Mapping[str, Any]) -> str | None:
    """SHA-256 (lowercase hex) of the JCS bytes of the request's tools as the recipe normalizes them (sorted by
    name; name, description, parameters): the design's `tool schema hash`. None when the request has no tools."""
    tools = request.get("tools")
    if not tools:
        return None
    return hashlib.sha256(_jcs(_sorted_tools(tools))).hexdigest()


def _jcs(canonical: Any) -> bytes:
    try:
        return jcs_bytes(canonical)
    except NotJCS as exc:
        raise CacheKeyInputError(str(exc)) from None


def _recipe_message(index: int, message: Any) -> dict[str, Any]:
    """A message as the recipe keys it: role and content as they are, name and toolCallId when present; any other
    field (an id, cache_control, a timestamp) is outside the closed set."""
    if not (type(message) is dict or isinstance(message, Mapping)) or "role" not in message or "content" not in message:
        raise CacheKeyInputError(f"messages[{index}] must be an object with role and content")
    kept = {"role": message["role"], "content": message["content"]}
    for field in OPTIONAL_MESSAGE_FIELDS:
        if message.get(field) is not None:
            kept[field] = message[field]
    return kept


def _sorted_tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise CacheKeyInputError("tools must be an array of {name, description?, parameters}")
    kept = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise CacheKeyInputError(f"tools[{index}] must be an object with a string name")
        kept.append({field: tool[field] for field in TOOL_FIELDS if tool.get(field) is not None})
    return sorted(kept, key=lambda tool: tool["name"])
