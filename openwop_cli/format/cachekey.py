"""The LLM cache-key recipe of openwop-replay-and-fork.md: a closed field set, JCS, SHA-256, hex.

Only the recipe's fields influence the key; anything else (max_tokens, stop, stream, metadata,
user, seed, request ids, trace context, a message's id) is ignored by construction. Numbers are
JCS's (format.canonical.jcs_bytes): an integer beyond ±(2^53-1) is keyed as the nearest double,
and one no double holds has no key (CacheKeyInputError). `recipe_input` reads a request in a
provider's own shape (OpenAI chat and responses, Anthropic, Gemini, Ollama, Bedrock, Cohere) as the
recipe's input. A capture keys a request as it keeps it: after redaction (see README "What a capture
keeps"), so no key covers a secret the event does not show.
"""

import hashlib
from collections.abc import Mapping
from typing import Any

from openwop_cli.format.canonical import NotJCS, jcs_bytes
from openwop_cli.format.events import revived_big_ints

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


RECIPE_ALIASES = {"top_p": "topP", "top_k": "topK", "response_format": "responseFormat"}


def request_keys(provider: str, model: str, request: Any) -> dict[str, Any]:
    """What an llm_request carries to identify its request: `cacheKey` (the recipe's key, the design's normalized
    input hash; None when the request is not in the recipe's shape) and, with tools, `toolSchemaHash`.

    request: its json_form (a replay's keys must be the capture's, whatever Python types the program used), where an
    integer beyond 64 bits is {"$bigint": digits}: keyed as the integer it stands for, as `wop cache-key` keys it."""
    if not isinstance(request, dict):
        return {"cacheKey": None}
    recipe = revived_big_ints(recipe_input(provider, model, request))
    try:
        keys: dict[str, Any] = {"cacheKey": cache_key(recipe)}
    except (CacheKeyInputError, TypeError, ValueError):  # not the recipe's shape, or not JSON: no key, never a failure
        return {"cacheKey": None}
    schema_hash = tool_schema_hash(recipe)
    if schema_hash is not None:
        keys["toolSchemaHash"] = schema_hash
    return keys


def recipe_input(provider: str, model: str, request: dict[str, Any]) -> dict[str, Any]:
    """The cache-key recipe's input for a request in a provider's own shape.

    Snake-case options become the recipe's names, a top-level `system` (Anthropic) becomes the
    first message, and OpenAI/Anthropic tool declarations become {name, description, parameters}.
    """
    recipe: dict[str, Any] = {"provider": provider, "model": model}
    request = _chat_shape(provider, request)
    messages = request.get("messages")
    system = request.get("system")
    if isinstance(messages, list):
        messages = [_shaped_message(message) for message in messages]
        if system is not None:
            messages = [{"role": "system", "content": system}, *messages]
    recipe["messages"] = messages
    if request.get("tools") is not None:
        recipe["tools"] = [_recipe_tool(tool) for tool in request["tools"]] if isinstance(request["tools"], list) else request["tools"]
    for key, value in request.items():
        name = RECIPE_ALIASES.get(key, key)
        if name in ("temperature", "topP", "topK", "responseFormat"):
            recipe[name] = value
    return recipe


def _shaped_message(message: Any) -> Any:
    """A message in the recipe's shape: role, content as it is (null too: the recipe never coalesces; tool calls
    become content blocks), name?, toolCallId?."""
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    calls = message.get("tool_calls")
    if calls:
        blocks = list(content) if isinstance(content, list) else ([{"type": "text", "text": content}] if content else [])
        for call in calls:
            function = call.get("function") or {} if isinstance(call, dict) else {}
            blocks.append({"type": "tool_call", "id": call.get("id") if isinstance(call, dict) else None,
                           "name": function.get("name"), "arguments": function.get("arguments")})
        content = blocks
    shaped = {"role": message.get("role"), "content": content}
    if message.get("name") is not None:
        shaped["name"] = message["name"]
    call_id = message.get("tool_call_id", message.get("toolCallId"))
    if call_id is not None:
        shaped["toolCallId"] = call_id
    return shaped


def _chat_shape(provider: str, request: dict[str, Any]) -> dict[str, Any]:
    """Requests that do not speak in `messages` (OpenAI responses, Gemini, Ollama options) as if they did."""
    if provider == "google" and "contents" in request:
        config = request.get("generationConfig") or {}
        messages = [{"role": content.get("role", "user"), "content": content.get("parts", [])}
                    for content in request.get("contents") or [] if isinstance(content, dict)]
        system = (request.get("systemInstruction") or {}).get("parts") if isinstance(request.get("systemInstruction"), dict) else None
        shaped = {"messages": messages, **{key: config[key] for key in ("temperature", "topP", "topK") if key in config}}
        if system is not None:
            shaped["system"] = system
        if request.get("tools") is not None:
            shaped["tools"] = [declaration for tool in request["tools"] if isinstance(tool, dict)
                               for declaration in tool.get("functionDeclarations", [])]
        return shaped
    if "messages" not in request and "input" in request:
        items = request["input"]
        messages = [{"role": "user", "content": items}] if isinstance(items, str) else [
            {"role": item.get("role", "user"), "content": item.get("content", item)} if isinstance(item, dict)
            else {"role": "user", "content": item} for item in items or []]
        shaped = {**request, "messages": messages}
        if request.get("instructions") is not None:
            shaped["system"] = request["instructions"]
        return shaped
    if provider == "bedrock":
        return _bedrock_shape(request)
    if provider == "cohere":  # its nucleus and top-k options are `p` and `k`
        return {**request, **{alias: request[key] for key, alias in (("p", "top_p"), ("k", "top_k")) if key in request}}
    if provider == "ollama" and isinstance(request.get("options"), dict):
        return {**request, **{key: request["options"][key] for key in ("temperature", "top_p", "top_k") if key in request["options"]}}
    return request


def _bedrock_shape(request: dict[str, Any]) -> dict[str, Any]:
    """Converse's inferenceConfig and toolConfig as the recipe's options and tools (an InvokeModel body, in
    its model's own shape, passes through)."""
    shaped = dict(request)
    config = request.get("inferenceConfig")
    if isinstance(config, dict):
        shaped.update({key: config[key] for key in ("temperature", "topP") if key in config})
    tool_config = request.get("toolConfig")
    if isinstance(tool_config, dict) and isinstance(tool_config.get("tools"), list):
        shaped["tools"] = [_bedrock_tool(tool) for tool in tool_config["tools"]]
    return shaped


def _bedrock_tool(tool: Any) -> Any:
    spec = tool.get("toolSpec") if isinstance(tool, dict) else None
    if not isinstance(spec, dict):
        return tool
    schema = spec.get("inputSchema")
    return {"name": spec.get("name"), "description": spec.get("description"),
            "parameters": schema.get("json") if isinstance(schema, dict) else schema}


def _recipe_tool(tool: Any) -> Any:
    if not isinstance(tool, dict):
        return tool
    function = tool.get("function")
    declared = function if isinstance(function, dict) else tool
    parameters = declared.get("parameters", declared.get("input_schema"))
    flat = {"name": declared.get("name"), "description": declared.get("description"), "parameters": parameters}
    return {key: value for key, value in flat.items() if value is not None}
