"""LLM providers on the wire: recognising their calls, and reading their requests and responses.

Known: OpenAI chat completions and responses (and any OpenAI-compatible server: the path decides it is
one, the host or the SDK's user agent which vendor: mistral, groq, together…), Anthropic messages,
Gemini generateContent, Ollama chat, Cohere v2 chat, Amazon Bedrock runtime (Converse, ConverseStream,
InvokeModel, InvokeModelWithResponseStream). A recognised request yields
the provider, the model, whether it streams, and the cache-key recipe's input; a response yields its
stop reason and usage.
"""

from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from openwop_cli.format.cachekey import CacheKeyInputError, cache_key, tool_schema_hash
from openwop_cli.runtime.jsonable import json_form, revive_big_ints


@dataclass(frozen=True, slots=True)
class LLMCall:
    """A recognised LLM request: who, which model, and how its answer comes back."""

    provider: str
    model: str
    stream: bool
    ndjson: bool = False


# OpenAI-compatible vendors, named by their API host (or by the SDK's user agent when the host is a proxy or a
# test server); their requests keep the OpenAI shape, only the provider name differs.
VENDOR_HOSTS = {
    "api.mistral.ai": "mistral", "api.groq.com": "groq", "api.together.xyz": "together", "api.together.ai": "together",
    "api.deepseek.com": "deepseek", "api.x.ai": "xai", "api.fireworks.ai": "fireworks", "openrouter.ai": "openrouter",
    "api.perplexity.ai": "perplexity", "api.cerebras.ai": "cerebras",
}
VENDOR_HOST_SUFFIXES = ((".openai.azure.com", "azure"),)
VENDOR_USER_AGENTS = (("mistral-client", "mistral"), ("mistralai", "mistral"), ("groq/", "groq"),
                      ("together/", "together"), ("fireworks", "fireworks"))  # lowercase, in the lowercased user agent


def recognize(method: str, url: str, body: Any, user_agent: str = "") -> LLMCall | None:
    """The LLM call an HTTP request is, or None for any other request."""
    if method.upper() != "POST" or not isinstance(body, dict):
        return None
    path = url.partition("?")[0]  # what the path ends with or holds is all that is asked of it
    if path.endswith("/chat/completions") or path.endswith("/responses"):
        provider = _vendor_of_url(url, user_agent)
        return LLMCall(provider, str(body.get("model", "")), bool(body.get("stream")))
    if path.endswith("/v1/messages"):
        return LLMCall("anthropic", str(body.get("model", "")), bool(body.get("stream")))
    if ":generateContent" in path or ":streamGenerateContent" in path:
        model = path.rsplit("/models/", 1)[-1].split(":", 1)[0]
        return LLMCall("google", model, ":streamGenerateContent" in path)
    if path.endswith("/v2/chat"):
        return LLMCall("cohere", str(body.get("model", "")), bool(body.get("stream")))
    if path.endswith("/api/chat"):
        return LLMCall("ollama", str(body.get("model", "")), body.get("stream", True) is not False, ndjson=True)
    if "/model/" in path:
        model, _, operation = path.rsplit("/model/", 1)[-1].rpartition("/")
        if operation in _BEDROCK_OPERATIONS:
            return LLMCall("bedrock", unquote(model), operation.endswith("stream"))
    return None


_BEDROCK_OPERATIONS = frozenset({"converse", "converse-stream", "invoke", "invoke-with-response-stream"})


@lru_cache(maxsize=256)
def _vendor_of_url(url: str, user_agent: str) -> str:
    """openai_compatible_vendor of a URL's host (a program calls the same few URLs again and again)."""
    return openai_compatible_vendor(urlsplit(url).hostname or "", user_agent)


def openai_compatible_vendor(host: str, user_agent: str = "") -> str:
    """The provider name of an OpenAI-shaped API: the vendor its host or SDK says, else `openai`."""
    host = host.lower()
    if host in VENDOR_HOSTS:
        return VENDOR_HOSTS[host]
    for suffix, vendor in VENDOR_HOST_SUFFIXES:
        if host.endswith(suffix):
            return vendor
    user_agent = user_agent.lower()
    for marker, vendor in VENDOR_USER_AGENTS:
        if marker in user_agent:
            return vendor
    return "openai"


_SECRET_QUERY_NAMES = frozenset({"key", "api_key", "apikey", "api-key", "token", "access_token", "sig", "signature",
                                 "code", "password", "secret", "client_secret"})


def url_without_secrets(url: str) -> str:
    """url with the values of credential-looking query parameters (key=, token=, …) replaced."""
    if "?" not in url and "@" not in url:
        return url
    parts = urlsplit(url)
    if not parts.query and not parts.password:
        return url
    query = [(name, "***REDACTED***" if name.lower() in _SECRET_QUERY_NAMES else value)
             for name, value in parse_qsl(parts.query, keep_blank_values=True)]
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="*"), parts.fragment))


def stop_reason(response: Any) -> str | None:
    """The provider's stop/finish reason, or None when the response does not say."""
    if type(response) is not dict:
        return None
    for key in ("stopReason", "stop_reason", "finish_reason", "done_reason"):
        if isinstance(response.get(key), str):
            return response[key]
    for list_key, key in (("choices", "finish_reason"), ("candidates", "finishReason")):
        items = response.get(list_key)
        if isinstance(items, list) and items and isinstance(items[0], dict) and isinstance(items[0].get(key), str):
            return items[0][key]
    status = response.get("status")
    if isinstance(status, str) and response.get("object") == "response":
        details = response.get("incomplete_details")
        return details.get("reason", status) if isinstance(details, dict) else status
    return None


def usage(response: Any) -> dict[str, Any] | None:
    """Token usage as the provider reports it (usage, usageMetadata, or Ollama's eval counts); Cohere's, which counts
    under `tokens` and `billed_units`, with its input and output tokens named at the top as well."""
    if type(response) is not dict:
        return None
    for key in ("usage", "usageMetadata"):
        if isinstance(response.get(key), dict):
            return with_token_counts(response[key])
    if "eval_count" in response or "prompt_eval_count" in response:
        return {"prompt_eval_count": response.get("prompt_eval_count"), "eval_count": response.get("eval_count")}
    return None


def with_token_counts(reported: dict[str, Any]) -> dict[str, Any]:
    """A usage dict with `input_tokens`/`output_tokens` at the top when the provider nests them (Cohere: the
    `tokens` the model saw, else the `billed_units`); any other usage as it is."""
    if "input_tokens" in reported or "output_tokens" in reported:
        return reported
    for nested in ("tokens", "billed_units"):
        counts = reported.get(nested)
        if isinstance(counts, dict) and ("input_tokens" in counts or "output_tokens" in counts):
            return {"input_tokens": counts.get("input_tokens"), "output_tokens": counts.get("output_tokens"),
                    **reported}
    return reported


RECIPE_ALIASES = {"top_p": "topP", "top_k": "topK", "response_format": "responseFormat"}


def request_keys(provider: str, model: str, request: Any) -> dict[str, Any]:
    """What an llm_request carries to identify its request: `cacheKey` (the recipe's key, the design's normalized
    input hash; None when the request is not in the recipe's shape) and, with tools, `toolSchemaHash`.

    request: its json_form (a replay's keys must be the capture's, whatever Python types the program used), where an
    integer beyond 64 bits is {"$bigint": digits}: keyed as the integer it stands for, as `wop cache-key` keys it."""
    if not isinstance(request, dict):
        return {"cacheKey": None}
    recipe = revive_big_ints(recipe_input(provider, model, request))
    try:
        keys: dict[str, Any] = {"cacheKey": cache_key(recipe)}
    except (CacheKeyInputError, TypeError, ValueError):  # not the recipe's shape, or not JSON: no key, never a failure
        return {"cacheKey": None}
    schema_hash = tool_schema_hash(recipe)
    if schema_hash is not None:
        keys["toolSchemaHash"] = schema_hash
    return keys


def with_request_keys(data: dict[str, Any]) -> dict[str, Any]:
    """An llm_request's data with its request_keys, when it does not carry them yet. A capture adds them where
    the event is written (`wop capture`, or the sink of an in-process capture), off the recorded call's path; a
    replay computes them in the program, where it matches calls by them."""
    keys = missing_request_keys(data)
    return {**data, **keys} if keys else data


def missing_request_keys(data: dict[str, Any], *, parsed: bool = False) -> dict[str, Any]:
    """The request_keys an llm_request's data lacks ({} when it carries them). parsed: the data was read from JSON
    (bytes-free), so its request already is its JSON form."""
    if "cacheKey" in data:
        return {}
    request = data.get("request")
    return request_keys(str(data.get("provider", "")), str(data.get("model", "")),
                        request if parsed else json_form(request))


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
        messages = [_recipe_message(message) for message in messages]
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


def _recipe_message(message: Any) -> Any:
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
    declared = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    parameters = declared.get("parameters", declared.get("input_schema"))
    flat = {"name": declared.get("name"), "description": declared.get("description"), "parameters": parameters}
    return {key: value for key, value in flat.items() if value is not None}
