"""Streamed LLM responses: server-sent events (and Ollama's JSON lines) split, re-streamed, and assembled.

Recording keeps every event's `data` text exactly as sent, so a replay re-streams bytes that parse
to identical objects in the SDK's stream iterator. The assembled message (text, tool calls, stop
reason, usage) is kept beside it for people and for diffs.
"""

from typing import Any

import orjson

from openwop_cli.runtime.providers import with_token_counts


def split_events(body: bytes) -> list[dict[str, str]]:
    """SSE bytes as [{event?, data, id?}] in order; comment lines and retry hints are dropped."""
    events = []
    text = body.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    for block in text.split("\n\n"):
        event: dict[str, str] = {}
        data_lines = []
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data_lines.append(value)
            elif field in ("event", "id"):
                event[field] = value
        if data_lines or event:
            event["data"] = "\n".join(data_lines)
            events.append(event)
    return events


def split_lines(body: bytes) -> list[dict[str, str]]:
    """Newline-delimited JSON (Ollama streaming) as [{data}] per line."""
    return [{"data": line} for line in body.decode("utf-8", errors="replace").splitlines() if line.strip()]


def event_bytes(event: dict[str, str], ndjson: bool = False) -> bytes:
    """One recorded event back on the wire."""
    if ndjson:
        return event["data"].encode() + b"\n"
    lines = [f"{field}: {event[field]}" for field in ("id", "event") if field in event]
    lines.extend(f"data: {line}" for line in event.get("data", "").split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def openai_chat_events(completion: dict[str, Any], with_usage: bool = False) -> list[dict[str, str]]:
    """A whole chat completion as the stream of chunks OpenAI sends for it (assemble's inverse): a role chunk, the
    text and tool calls of each choice, its finish reason, the usage chunk when the request asked for one, [DONE]."""
    base = {key: completion[key] for key in ("id", "created", "model", "system_fingerprint", "service_tier")
            if completion.get(key) is not None}
    base["object"] = "chat.completion.chunk"
    chunks = []
    for choice in completion.get("choices") or []:
        index = choice.get("index", 0)
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"role": message.get("role") or "assistant", "content": ""}
        chunks.append({**base, "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
        for key in ("content", "refusal"):
            if isinstance(message.get(key), str) and message[key]:
                chunks.append({**base, "choices": [{"index": index, "delta": {key: message[key]},
                                                    "finish_reason": None}]})
        for position, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            chunks.append({**base, "choices": [{"index": index, "finish_reason": None, "delta": {"tool_calls": [
                {"index": position, "id": call.get("id"), "type": call.get("type") or "function",
                 "function": {"name": function.get("name"), "arguments": function.get("arguments") or ""}}]}}]})
        chunks.append({**base, "choices": [{"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}]})
    if with_usage and isinstance(completion.get("usage"), dict):
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    return [{"data": orjson.dumps(chunk).decode()} for chunk in chunks] + [{"data": "[DONE]"}]


def assemble(provider: str, events: list[dict[str, str]]) -> dict[str, Any]:
    """The message a stream adds up to, in a provider-neutral shape: text, toolCalls, stopReason, usage."""
    payloads = [_json(event.get("data", "")) for event in events]
    payloads = [payload for payload in payloads if isinstance(payload, dict)]
    if provider == "anthropic":
        return _assemble_anthropic(payloads)
    if provider == "google":
        return _assemble_gemini(payloads)
    if provider == "ollama":
        return _assemble_ollama(payloads)
    if provider == "cohere":
        return _assemble_cohere(payloads)
    if any(payload.get("type", "").startswith("response.") for payload in payloads):
        return _assemble_openai_responses(payloads)
    return _assemble_openai_chat(payloads)


def _assemble_openai_chat(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    text, calls, stop, usage = [], {}, None, None
    for payload in payloads:
        usage = payload.get("usage") or usage
        for choice in payload.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"id": None, "name": "", "arguments": ""})
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            stop = choice.get("finish_reason") or stop
    return {"text": "".join(text), "toolCalls": [calls[index] for index in sorted(calls)], "stopReason": stop,
            "usage": usage}


def _assemble_openai_responses(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    text, final = [], {}
    for payload in payloads:
        if payload.get("type") == "response.output_text.delta":
            text.append(payload.get("delta", ""))
        if payload.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            final = payload.get("response") or {}
    return {"text": "".join(text), "toolCalls": [], "stopReason": final.get("status"), "usage": final.get("usage")}


def _assemble_anthropic(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    stop, usage = None, {}
    for payload in payloads:
        kind = payload.get("type")
        if kind == "message_start":
            usage.update((payload.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = dict(payload.get("content_block") or {})
            block.setdefault("text", "")
            block["partial_json"] = ""
            blocks[payload.get("index", 0)] = block
        elif kind == "content_block_delta":
            block = blocks.setdefault(payload.get("index", 0), {"type": "text", "text": "", "partial_json": ""})
            delta = payload.get("delta") or {}
            block["text"] += delta.get("text", "")
            block["partial_json"] += delta.get("partial_json", "")
        elif kind == "message_delta":
            stop = (payload.get("delta") or {}).get("stop_reason") or stop
            usage.update(payload.get("usage") or {})
    ordered = [blocks[index] for index in sorted(blocks)]
    text = "".join(block["text"] for block in ordered if block.get("type") == "text")
    calls = [{"id": block.get("id"), "name": block.get("name"), "arguments": block["partial_json"]}
             for block in ordered if block.get("type") == "tool_use"]
    return {"text": text, "toolCalls": calls, "stopReason": stop, "usage": usage or None}


def _assemble_gemini(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    text, stop, usage = [], None, None
    for payload in payloads:
        usage = payload.get("usageMetadata") or usage
        for candidate in payload.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if isinstance(part.get("text"), str):
                    text.append(part["text"])
            stop = candidate.get("finishReason") or stop
    return {"text": "".join(text), "toolCalls": [], "stopReason": stop, "usage": usage}


def _assemble_ollama(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    text, stop, usage = [], None, None
    for payload in payloads:
        message = payload.get("message") or {}
        if isinstance(message.get("content"), str):
            text.append(message["content"])
        if payload.get("done"):
            stop = payload.get("done_reason")
            usage = {"prompt_eval_count": payload.get("prompt_eval_count"), "eval_count": payload.get("eval_count")}
    return {"text": "".join(text), "toolCalls": [], "stopReason": stop, "usage": usage}


def _assemble_cohere(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """Cohere v2 chat events: content-delta texts, tool-call-start/-delta calls, message-end's finish reason and
    usage."""
    text, calls, stop, usage = [], {}, None, None
    for payload in payloads:
        delta = payload.get("delta") if isinstance(payload.get("delta"), dict) else {}
        message = delta.get("message") if isinstance(delta.get("message"), dict) else {}
        kind = payload.get("type")
        if kind == "content-delta":
            content = message.get("content") if isinstance(message.get("content"), dict) else {}
            if isinstance(content.get("text"), str):
                text.append(content["text"])
        elif kind in ("tool-call-start", "tool-call-delta"):
            call = message.get("tool_calls") if isinstance(message.get("tool_calls"), dict) else {}
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            slot = calls.setdefault(payload.get("index", 0), {"id": None, "name": "", "arguments": ""})
            slot["id"] = call.get("id") or slot["id"]
            slot["name"] += function.get("name") or ""
            slot["arguments"] += function.get("arguments") or ""
        elif kind == "message-end":
            stop = delta.get("finish_reason") or stop
            usage = with_token_counts(delta["usage"]) if isinstance(delta.get("usage"), dict) else usage
    return {"text": "".join(text), "toolCalls": [calls[index] for index in sorted(calls)], "stopReason": stop,
            "usage": usage}


def _json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
