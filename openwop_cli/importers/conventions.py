"""What an LLM or tool span says, read by the conventions that instrumentations write.

- OpenInference (Arize Phoenix): `openinference.span.kind` LLM/TOOL; the request body in `input.value` (its
  instrumentations for SDKs record the call's parameters as JSON), else `llm.input_messages.*`,
  `llm.invocation_parameters`, `llm.tools.*`; the answer in `output.value`, else `llm.output_messages.*`;
  `llm.token_count.*`. What a TraceConfig hid is `__REDACTED__` or left out.
- The OpenTelemetry GenAI semantic conventions: `gen_ai.operation.name` chat/execute_tool, `gen_ai.request.*`,
  `gen_ai.input.messages`/`gen_ai.output.messages`/`gen_ai.system_instructions`/`gen_ai.tool.definitions` as
  attributes or on a `gen_ai.client.inference.operation.details` event, the older per-message events
  (`gen_ai.user.message`, `gen_ai.choice`, …, as span events or log records) and `gen_ai.prompt.N.*` attributes.
  These conventions keep only some request options: the fields they can say are listed (`traced`).

Requests and answers come out in the OpenAI chat completions shape (the provider's own body where the trace kept
it), so a replay serves them to the SDK as the provider would have.
"""

from dataclasses import dataclass, field
from typing import Any

import orjson

from openwop_cli.importers.otlp import Span

REDACTED = "__REDACTED__"  # OpenInference's TraceConfig mask
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
# OpenInference llm.provider / llm.system and GenAI gen_ai.provider.name / gen_ai.system values → wop's provider names
PROVIDERS = {
    "openai": "openai", "azure": "azure", "azure.ai.openai": "azure", "az.ai.openai": "azure", "anthropic": "anthropic",
    "google": "google", "gcp.gemini": "google", "gcp.vertex_ai": "google", "gcp.gen_ai": "google", "vertexai": "google",
    "aws": "bedrock", "aws.bedrock": "bedrock", "mistralai": "mistral", "mistral_ai": "mistral", "xai": "xai",
    "x_ai": "xai", "deepseek": "deepseek", "groq": "groq", "perplexity": "perplexity", "cohere": "cohere",
    "ollama": "ollama", "fireworks": "fireworks", "together": "together", "openrouter": "openrouter",
}
GENAI_OPTIONS = {  # gen_ai.request.* → the OpenAI request field
    "gen_ai.request.temperature": "temperature", "gen_ai.request.top_p": "top_p", "gen_ai.request.top_k": "top_k",
    "gen_ai.request.max_tokens": "max_tokens", "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.presence_penalty": "presence_penalty", "gen_ai.request.stop_sequences": "stop",
    "gen_ai.request.seed": "seed",
}
# The chat completions request's options (what llm.invocation_parameters may hold beside a framework's own keys)
CHAT_OPTIONS = frozenset({
    "model", "temperature", "top_p", "max_tokens", "max_completion_tokens", "n", "stop", "seed", "presence_penalty",
    "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "response_format", "stream", "stream_options",
    "tool_choice", "parallel_tool_calls", "user", "service_tier", "reasoning_effort", "metadata", "store",
    "modalities", "audio", "prediction", "verbosity", "web_search_options"})
# What a request rebuilt from llm.* attributes says: its messages, tools and options (an option absent was not set)
REBUILT_TRACED = frozenset({"messages", "tools", *CHAT_OPTIONS})
# The request fields the GenAI conventions say (an option absent from the span was not set), tools only with
# gen_ai.tool.definitions
GENAI_TRACED = frozenset({"model", "messages", "n", *GENAI_OPTIONS.values()})
_LEGACY_MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                          "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"


@dataclass(slots=True)
class TracedLLM:
    """An LLM call as a span holds it. request/response: OpenAI-shaped bodies (None where the trace hid them);
    streamed: whether the program streamed it (None: the trace does not say); traced: the request fields the trace
    can tell (None: the whole request); hidden: what the trace left out ("input", "output", "input (truncated)", …)."""

    convention: str
    provider: str
    model: str
    request: dict[str, Any] | None
    response: dict[str, Any] | None
    streamed: bool | None
    traced: frozenset[str] | None
    hidden: list[str] = field(default_factory=list)
    server: str | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the request's options a trace keeps when it hides its input


@dataclass(slots=True)
class TracedTool:
    """A tool call as a span holds it (args/result None where hidden)."""

    convention: str
    name: str
    args: Any
    result: Any
    ok: bool
    error: str | None
    hidden: list[str] = field(default_factory=list)


def span_role(span: Span) -> str | None:
    """"llm", "tool", or None for a span that is neither (a chain, an agent, an HTTP client span)."""
    attributes = span.attributes
    kind = attributes.get("openinference.span.kind")
    if isinstance(kind, str):
        kind = kind.upper()
        return "llm" if kind == "LLM" else "tool" if kind == "TOOL" else None
    operation = attributes.get("gen_ai.operation.name")
    if operation in LLM_OPERATIONS or (operation is None and _legacy_prompt(attributes)):
        return "llm"
    if operation == "execute_tool":
        return "tool"
    return None


def traced_llm(span: Span) -> TracedLLM:
    """The LLM call a span (span_role "llm") holds. A span with both conventions' attributes is read by the one that
    wrote it: OpenInference's input.value, else the GenAI operation (Phoenix adds OpenInference names to GenAI spans
    it ingests, from the GenAI attributes, which it keeps)."""
    attributes = span.attributes
    if isinstance(attributes.get("openinference.span.kind"), str) and (
            "input.value" in attributes or "gen_ai.operation.name" not in attributes):
        return _openinference_llm(span)
    return _genai_llm(span)


def traced_tool(span: Span) -> TracedTool:
    """The tool call a span (span_role "tool") holds."""
    attributes = span.attributes
    openinference = isinstance(attributes.get("openinference.span.kind"), str)
    name = attributes.get("tool.name") if openinference else attributes.get("gen_ai.tool.name")
    name = name if isinstance(name, str) and name else span.name
    hidden = []
    if openinference:
        args, args_hidden = _io_value(attributes, "input.value")
        result, result_hidden = _io_value(attributes, "output.value")
    else:
        args, args_hidden = _io_value(attributes, "gen_ai.tool.call.arguments")
        result, result_hidden = _io_value(attributes, "gen_ai.tool.call.result")
    hidden += [f"arguments{args_hidden}"] if args_hidden is not None else []
    hidden += [f"result{result_hidden}"] if result_hidden is not None else []
    error = span.status_message or "the tool failed" if span.status_code == 2 else None
    return TracedTool("openinference" if openinference else "genai", name, args, result, error is None, error, hidden)


# ---- OpenInference ---------------------------------------------------------------------------------------------


def _openinference_llm(span: Span) -> TracedLLM:
    attributes = span.attributes
    provider = _provider(attributes.get("llm.provider"), attributes.get("llm.system"))
    model = _string(attributes.get("llm.model_name"))
    hidden: list[str] = []
    body, body_hidden = _io_value(attributes, "input.value")
    traced: frozenset[str] | None = None
    if _provider_body(body):
        request = body
    else:  # a framework's span (LangChain's input.value is its own messages) or a hidden body: the llm.* attributes
        if body_hidden is not None and body_hidden != " (hidden)":
            hidden.append(f"input{body_hidden}")
        request, traced = _openinference_request(attributes, model, hidden), REBUILT_TRACED
    model = model or _string((request or {}).get("model"))
    if request is not None:
        request.setdefault("model", model)
        if _holds_redacted(request):
            hidden.append("input (hidden)")
            request = None
    answer, answer_hidden = _io_value(attributes, "output.value")
    response = _completion(answer) if isinstance(answer, dict) and isinstance(answer.get("choices"), list) else None
    if response is None:
        response = _openinference_response(attributes, hidden, answer_hidden)
    if response is not None and _holds_redacted(response):
        hidden.append("output (hidden)")
        response = None
    if response is not None:
        response.setdefault("model", model)
        _fill_usage(response, attributes.get("llm.token_count.prompt"), attributes.get("llm.token_count.completion"))
    options = _chat_options(attributes) if request is None else {}
    known = request if request is not None else options
    streamed = known.get("stream") if isinstance(known.get("stream"), bool) else None
    if streamed is None and any("stream" in event.name.lower() for event in span.events):
        streamed = True
    return TracedLLM("openinference", provider, model, request, response, streamed, traced, _unique(hidden),
                     options=options)


def _provider_body(body: Any) -> bool:
    """Whether input.value is the request body an SDK sent (its messages have roles), not a framework's own input."""
    messages = body.get("messages") if isinstance(body, dict) else None
    return isinstance(messages, list) and all(isinstance(message, dict) and "role" in message for message in messages)


def _openinference_request(attributes: dict[str, Any], model: str, hidden: list[str]) -> dict[str, Any] | None:
    """The request rebuilt from llm.input_messages.*, llm.invocation_parameters (the chat completions options
    among them: a framework adds its own) and llm.tools.*."""
    messages = _indexed(attributes, "llm.input_messages.")
    if not messages:
        hidden.append("input (hidden)")
        return None
    request: dict[str, Any] = {"model": model, **_chat_options(attributes)}
    request["messages"] = [_openinference_message(message) for message in messages]
    tools = [_json_or_text(tool.get("tool.json_schema")) for tool in _indexed(attributes, "llm.tools.")]
    if tools:
        request["tools"] = tools
    return request


def _chat_options(attributes: dict[str, Any]) -> dict[str, Any]:
    """The chat completions options among llm.invocation_parameters (a framework adds keys of its own)."""
    parameters, _ = _io_value(attributes, "llm.invocation_parameters")
    if not isinstance(parameters, dict):
        return {}
    return {key: value for key, value in parameters.items() if key in CHAT_OPTIONS and value is not None}


def _openinference_message(flat: dict[str, Any]) -> dict[str, Any]:
    """A message of llm.input_messages/llm.output_messages in the chat completions shape: an assistant message with
    tool calls and no text has content null, and a tool message no name (the API has none: LangChain records it)."""
    role = flat.get("message.role")
    message: dict[str, Any] = {"role": role}
    contents = _indexed(flat, "message.contents.")
    if contents:
        message["content"] = [_content_block(block) for block in contents]
    else:
        message["content"] = flat.get("message.content")
    if "message.name" in flat and role != "tool":
        message["name"] = flat["message.name"]
    if "message.tool_call_id" in flat:
        message["tool_call_id"] = flat["message.tool_call_id"]
    calls = _indexed(flat, "message.tool_calls.")
    if calls:
        message["tool_calls"] = [{"id": call.get("tool_call.id"), "type": "function",
                                  "function": {"name": call.get("tool_call.function.name"),
                                               "arguments": call.get("tool_call.function.arguments", "")}}
                                 for call in calls]
    return message


def _content_block(flat: dict[str, Any]) -> dict[str, Any]:
    kind = flat.get("message_content.type")
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": flat.get("message_content.image.image.url")}}
    return {"type": "text", "text": flat.get("message_content.text", "")}


def _openinference_response(attributes: dict[str, Any], hidden: list[str],
                            answer_hidden: str | None) -> dict[str, Any] | None:
    messages = _indexed(attributes, "llm.output_messages.")
    if not messages:
        hidden.append(f"output{answer_hidden or ' (hidden)'}")
        return None
    finish = attributes.get("llm.finish_reason")
    choices = [{"index": index, "message": _assistant(_openinference_message(message)),
                "finish_reason": finish if isinstance(finish, str) else _finish_of(message)}
               for index, message in enumerate(messages)]
    return _completion({"choices": choices})


def _finish_of(message: dict[str, Any]) -> str:
    return "tool_calls" if any(key.startswith("message.tool_calls.") for key in message) else "stop"


# ---- GenAI semantic conventions --------------------------------------------------------------------------------


def _genai_llm(span: Span) -> TracedLLM:
    attributes = dict(span.attributes)
    for event in span.events:  # the details event holds what the span attributes would
        if event.name == _DETAILS_EVENT:
            attributes.update(event.attributes)
    provider = _provider(attributes.get("gen_ai.provider.name"), attributes.get("gen_ai.system"))
    model = _string(attributes.get("gen_ai.request.model")) or _string(attributes.get("gen_ai.response.model"))
    hidden: list[str] = []
    traced = GENAI_TRACED
    messages = _genai_input(attributes, span)
    request: dict[str, Any] | None = None
    if messages is None:
        hidden.append("input (content not captured)")
    else:
        request = {"model": model, "messages": messages}
        for name, option in GENAI_OPTIONS.items():
            if attributes.get(name) is not None:
                request[option] = attributes[name]
        count = attributes.get("gen_ai.request.choice.count")
        if type(count) is int and count != 1:
            request["n"] = count
        tools = _genai_tools(attributes.get("gen_ai.tool.definitions"))
        if tools is not None:
            traced = traced | {"tools"}
            if tools:
                request["tools"] = tools
    choices = _genai_output(attributes, span)
    response = None
    if choices is None:
        hidden.append("output (content not captured)")
    else:
        response = _completion({"id": attributes.get("gen_ai.response.id"), "choices": choices,
                                "model": attributes.get("gen_ai.response.model") or model})
        _fill_usage(response, attributes.get("gen_ai.usage.input_tokens"), attributes.get("gen_ai.usage.output_tokens"))
    streamed = attributes.get("gen_ai.request.stream")
    server = _server(attributes.get("server.address"), attributes.get("server.port"))
    return TracedLLM("genai", provider, model, request, response, streamed if isinstance(streamed, bool) else None,
                     traced, hidden, server)


def _genai_input(attributes: dict[str, Any], span: Span) -> list[dict[str, Any]] | None:
    """The request's messages: gen_ai.input.messages (and system instructions), the older per-message events, or the
    older gen_ai.prompt attributes; None when the trace has none (content capture off)."""
    structured = _json_or_text(attributes.get("gen_ai.input.messages"))
    system = _json_or_text(attributes.get("gen_ai.system_instructions"))
    if isinstance(structured, list):
        messages = [_genai_message(message) for message in structured if isinstance(message, dict)]
        if isinstance(system, list) and system:
            messages.insert(0, {"role": "system", "content": _parts_content(system)})
        return messages
    legacy = [_legacy_message(_LEGACY_MESSAGE_EVENTS[event.name], event.attributes.get("body"))
              for event in span.events if event.name in _LEGACY_MESSAGE_EVENTS]
    if legacy and all(message is not None for message in legacy):
        return legacy
    prompt = _legacy_prompt(attributes)
    return prompt or None


def _genai_output(attributes: dict[str, Any], span: Span) -> list[dict[str, Any]] | None:
    structured = _json_or_text(attributes.get("gen_ai.output.messages"))
    if isinstance(structured, list):
        return [{"index": index, "message": _assistant(_genai_message(message)),
                 "finish_reason": message.get("finish_reason") or "stop"}
                for index, message in enumerate(structured) if isinstance(message, dict)]
    choices = []
    for event in span.events:
        body = event.attributes.get("body")
        if event.name == "gen_ai.choice" and isinstance(body, dict) and isinstance(body.get("message"), dict):
            message = _legacy_message("assistant", body["message"])
            if message is None:
                return None
            choices.append({"index": body.get("index", len(choices)), "message": _assistant(message),
                            "finish_reason": body.get("finish_reason") or "stop"})
    if choices:
        return choices
    completion = _indexed(attributes, "gen_ai.completion.")
    if completion and all("content" in item for item in completion):
        return [{"index": index, "message": _assistant({"role": "assistant", "content": item["content"]}),
                 "finish_reason": item.get("finish_reason") or "stop"} for index, item in enumerate(completion)]
    return None


def _genai_message(message: dict[str, Any]) -> dict[str, Any]:
    """A GenAI message ({role, parts}) in the OpenAI chat shape."""
    role = message.get("role")
    parts = message.get("parts") if isinstance(message.get("parts"), list) else []
    shaped: dict[str, Any] = {"role": role}
    responses = [part for part in parts if isinstance(part, dict) and part.get("type") == "tool_call_response"]
    if responses:
        shaped["role"] = "tool"
        shaped["tool_call_id"] = responses[0].get("id")
        shaped["content"] = _text_of(responses[0].get("response"))
        return shaped
    calls = [part for part in parts if isinstance(part, dict) and part.get("type") == "tool_call"]
    content_parts = [part for part in parts if isinstance(part, dict) and part.get("type") not in ("tool_call",)]
    if content_parts or not calls:
        shaped["content"] = _parts_content(content_parts)
    if calls:
        shaped["tool_calls"] = [{"id": call.get("id"), "type": "function",
                                 "function": {"name": call.get("name"), "arguments": _text_of(call.get("arguments"))}}
                                for call in calls]
    if isinstance(message.get("name"), str):
        shaped["name"] = message["name"]
    return shaped


def _parts_content(parts: list[Any]) -> Any:
    """Message parts as OpenAI content: one text part as its text, several (or media) as content blocks."""
    texts = [part.get("content", "") for part in parts if isinstance(part, dict) and part.get("type") == "text"]
    if len(texts) == len(parts) == 1:
        return texts[0]
    blocks = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": part.get("content", "")})
        elif part.get("type") == "uri":
            blocks.append({"type": "image_url", "image_url": {"url": part.get("uri")}})
        elif part.get("type") == "blob":
            blocks.append({"type": "image_url", "image_url": {
                "url": f"data:{part.get('mime_type') or 'application/octet-stream'};base64,{part.get('content', '')}"}})
    return blocks


def _legacy_message(role: str, body: Any) -> dict[str, Any] | None:
    """A message of the older GenAI events (body {content, tool_calls, id}); None when its content was not captured."""
    if not isinstance(body, dict):
        return None
    role = body.get("role") if isinstance(body.get("role"), str) else role
    message: dict[str, Any] = {"role": role}
    calls = body.get("tool_calls")
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [{"id": call.get("id"), "type": call.get("type", "function"),
                                  "function": {"name": (call.get("function") or {}).get("name"),
                                               "arguments": _text_of((call.get("function") or {}).get("arguments"))}}
                                 for call in calls if isinstance(call, dict)]
        if any("arguments" not in ((call.get("function") or {}) if isinstance(call, dict) else {}) for call in calls):
            return None
    if role == "tool" and "id" in body:
        message["tool_call_id"] = body["id"]
    if "content" in body:
        message["content"] = body["content"]
    elif "tool_calls" not in message:
        return None
    return message


def _legacy_prompt(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """The older `gen_ai.prompt.N.role/content` attributes as messages."""
    return [{"role": item.get("role"), "content": item.get("content")}
            for item in _indexed(attributes, "gen_ai.prompt.") if "content" in item]


def _genai_tools(definitions: Any) -> list[dict[str, Any]] | None:
    parsed = _json_or_text(definitions)
    if not isinstance(parsed, list):
        return None
    tools = []
    for tool in parsed:
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("function"), dict):
            tools.append(tool)
            continue
        function = {key: tool[key] for key in ("name", "description", "parameters") if key in tool}
        tools.append({"type": tool.get("type", "function"), "function": function})
    return tools


# ---- shared ----------------------------------------------------------------------------------------------------


def _completion(answer: dict[str, Any]) -> dict[str, Any]:
    """A chat completion answer in the shape the provider sends (a stream's accumulated answer too)."""
    choices = []
    for index, choice in enumerate(answer.get("choices") or []):
        if not isinstance(choice, dict):
            continue
        message = choice.get("message") if isinstance(choice.get("message"), dict) else choice.get("delta") or {}
        choices.append({"index": choice.get("index", index), "message": _assistant(message),
                        "finish_reason": choice.get("finish_reason") or "stop", "logprobs": choice.get("logprobs")})
    completion = {key: value for key, value in answer.items() if key not in ("choices",) and value is not None}
    completion.update(choices=choices, object="chat.completion")
    completion.setdefault("id", "chatcmpl-imported")
    return completion


def _assistant(message: dict[str, Any]) -> dict[str, Any]:
    shaped = dict(message)
    shaped["role"] = shaped.get("role") or "assistant"
    shaped.setdefault("content", None)
    return shaped


def _fill_usage(response: dict[str, Any], prompt: Any, completion: Any) -> None:
    if isinstance(response.get("usage"), dict) or type(prompt) is not int or type(completion) is not int:
        return
    response["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _io_value(attributes: dict[str, Any], key: str) -> tuple[Any, str | None]:
    """An attribute's value (JSON parsed when it is JSON) and why it is not whole: " (hidden)", " (truncated)",
    " (not recorded)"; None when it is."""
    if key not in attributes:
        return None, " (not recorded)"
    value = attributes[key]
    if value == REDACTED:
        return None, " (hidden)"
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value), None
        except orjson.JSONDecodeError:
            return value, " (truncated)"
    return value, None


def _holds_redacted(value: Any) -> bool:
    """True when a value holds OpenInference's mask anywhere (looked for in its JSON first: most hold none)."""
    try:
        if REDACTED.encode() not in orjson.dumps(value):
            return False
    except TypeError:  # not JSON as orjson writes it (an integer beyond 64 bits): walked
        pass
    stack = [value]
    while stack:
        item = stack.pop()
        if item == REDACTED:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened list attributes (`prefix.0.rest`) as a list of {rest: value}, in index order."""
    items: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix):].partition(".")
        if index.isdigit() and rest:
            items.setdefault(int(index), {})[rest] = value
    return [items[index] for index in sorted(items)]


def _provider(*names: Any) -> str:
    for name in names:
        if isinstance(name, str) and name:
            return PROVIDERS.get(name.lower(), name.lower())
    return "openai"


def _server(address: Any, port: Any) -> str | None:
    if not isinstance(address, str) or not address:
        return None
    scheme = "http" if address in ("localhost", "127.0.0.1", "::1") else "https"
    host = f"[{address}]" if ":" in address else address
    return f"{scheme}://{host}" + (f":{port}" if type(port) is int else "")


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _text_of(value: Any) -> str:
    """A tool call's arguments or a tool's answer as the text the API carries (JSON for structured values)."""
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value)


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
