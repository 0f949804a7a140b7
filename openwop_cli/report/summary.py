"""One-line, human summaries of events for timelines: provider/model, tool name and args, values."""

from typing import Any

import orjson

MAX_VALUE_CHARS = 80


def summarize(event: dict[str, Any]) -> str:
    """What happened in this event, in one short line."""
    data = event.get("data") or {}
    summarizer = _SUMMARIZERS.get(event.get("type", ""))
    return summarizer(data) if summarizer else short_json(data)


def plural(count: int, noun: str) -> str:
    """`1 message`, `3 messages`: a count with its noun in the right number."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def short_json(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """Compact JSON of a value, cut to limit characters with an ellipsis."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value, default=repr).decode()
        except TypeError:
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _run_start(data: dict[str, Any]) -> str:
    argv = data.get("argv")
    return " ".join(map(str, argv)) if isinstance(argv, list) else short_json(data)


def _run_end(data: dict[str, Any]) -> str:
    parts = [f"status {data.get('status', '?')}"]
    if "exitCode" in data:
        parts.append(f"exit {data['exitCode']}")
    if isinstance(data.get("durationMs"), (int, float)):
        parts.append(f"{data['durationMs'] / 1000:.2f}s")
    if data.get("error"):
        parts.append(short_json(data["error"], 60))
    return " · ".join(parts)


def _llm_request(data: dict[str, Any]) -> str:
    request = data.get("request") or {}
    messages = request.get("messages") if isinstance(request, dict) else None
    parts = [f"{data.get('provider', '?')} {data.get('model', '?')}"]
    if isinstance(messages, list):
        parts.append(plural(len(messages), "message"))
        last = messages[-1] if messages else None
        if isinstance(last, dict) and "content" in last:
            parts.append(short_json(last["content"], 50))
    return " · ".join(parts)


def _llm_response(data: dict[str, Any]) -> str:
    if data.get("ok") is False:
        return "error " + failure_text(data)
    parts = [str(data["stopReason"])] if data.get("stopReason") is not None else []
    usage = data.get("usage")
    if isinstance(usage, dict):
        prompt = usage.get("input_tokens", usage.get("prompt_tokens", usage.get("inputTokens")))
        completion = usage.get("output_tokens", usage.get("completion_tokens", usage.get("outputTokens")))
        if prompt is not None or completion is not None:
            parts.append(f"{prompt}→{completion} tokens")
    text = data.get("text")
    if text is None:
        text = response_text(data.get("response"))
    if text is not None:
        parts.append(text if isinstance(text, str) and len(text) <= 50 else short_json(text, 50))
    return " · ".join([*parts, *_stream_end(data)])


def response_text(response: Any) -> Any:
    """The answer's text in the common provider shapes, else the response itself."""
    if isinstance(response, dict):
        choices = response.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                return message["content"]
        if isinstance(response.get("text"), str):
            return response["text"]
        content = response.get("content")
        if isinstance(content, list) and content and isinstance(content[0], dict) and isinstance(content[0].get("text"), str):
            return content[0]["text"]
        if isinstance(content, str):
            return content
    return response if isinstance(response, (dict, list, str)) and response != {} else None


def _tool_call(data: dict[str, Any]) -> str:
    if data.get("kind") == "mcp" and isinstance(data.get("args"), dict):
        return _mcp_call(data["args"])
    return f"{data.get('name', '?')}({short_json(data.get('args', {}), 60)})"


def _mcp_call(args: dict[str, Any]) -> str:
    """`mcp python server.py tools/call lookup_order({"order_id":"A-1"})`: the server, the method, what it asks."""
    params = args.get("params") if isinstance(args.get("params"), dict) else {}
    name = params.get("name", params.get("uri"))
    if isinstance(name, str):
        asked = f"{name}({short_json(params.get('arguments', {}), 60)})" if "name" in params else name
    else:
        rest = {key: value for key, value in params.items() if key != "_meta"}
        asked = short_json(rest, 60) if rest else ""
    return f"mcp {server_label(args.get('server'))} {args.get('method', '?')} {asked}".rstrip()


def server_label(server: Any) -> str:
    """A short name for an MCP server: `python server.py`, `127.0.0.1:8000/mcp`."""
    if not isinstance(server, dict):
        return "?"
    if isinstance(server.get("url"), str):
        return server["url"].split("://", 1)[-1]
    words = [server.get("command"), *(server.get("args") or [])]
    label = " ".join(word.rstrip("/").rsplit("/", 1)[-1] or word for word in words if isinstance(word, str))
    return short_json(label, 40)


def _tool_result(data: dict[str, Any]) -> str:
    reply = data.get("result")
    if data.get("ok", True) and isinstance(reply, dict) and isinstance(reply.get("error"), dict) and "id" in reply:
        error = reply["error"]  # an MCP server's JSON-RPC error
        return f"error {error.get('code', '?')}: {short_json(error.get('message', ''), 60)}"
    if data.get("ok", True) and isinstance(reply, dict) and "result" in reply and "id" in reply:
        return "ok " + short_json(reply["result"], 70)
    if data.get("ok", True):
        return " · ".join(["ok " + short_json(data.get("result"), 70), *_stream_end(data)])
    return "error " + failure_text(data)


def _stream_end(data: dict[str, Any]) -> list[str]:
    """How a streamed answer that did not end stopped: `stream broke: <exception>` (its connection broke), or
    `stream not read to its end`; nothing for one that ended."""
    if data.get("streamComplete") is not False:
        return []
    error = data.get("streamError")
    if isinstance(error, dict):
        return [f"stream broke: {error.get('type', '?')}: {short_json(error.get('message', ''), 40)}"]
    return ["stream not read to its end"]


def failure_text(data: dict[str, Any], limit: int = 60) -> str:
    """Why a call failed (an ok:false result's data), in one line: the recorded exception's type and message, or
    — for an HTTP answer with a 4xx/5xx status, which carries no exception — `HTTP <status>` and its body's start."""
    error = data.get("error")
    if isinstance(error, dict):
        return f"{error.get('type', '?')}: {short_json(error.get('message', ''), limit)}"
    if error is not None:
        return short_json(error, limit)
    answer = data.get("result")
    if isinstance(answer, dict) and "status" in answer:  # an HTTP tool call's answer
        status, body = answer.get("status"), answer.get("body")
    elif "status" in data:  # an LLM call's HTTP answer
        status, body = data.get("status"), data.get("response")
    else:
        return "(no error recorded)"
    text = f"HTTP {short_json(status, 10)}"
    return f"{text} {short_json(body, limit)}" if body not in (None, "", {}, []) else text


def _state_mutation(data: dict[str, Any]) -> str:
    if data.get("kind", "channel") == "channel":
        reducer = data.get("reducer", "replace")
        return f"{data.get('channel', '?')} ← {short_json(data.get('value'), 60)} ({reducer})"
    return f"{data.get('kind')} {short_json({k: v for k, v in data.items() if k != 'kind'}, 60)}"


def _nondeterministic(data: dict[str, Any]) -> str:
    if data.get("unrecorded") is True:
        value = data.get("value") if isinstance(data.get("value"), dict) else {}
        site = value.get("site")
        if data.get("source") == "process":
            opener = f" (started by {site.get('file')}:{site.get('line')})" if isinstance(site, dict) else ""
            argv = value.get("argv") if isinstance(value.get("argv"), list) else [data.get("key")]
            return f"child process {short_json(' '.join(map(str, argv)), 50)} not recorded{opener}: {value.get('reason')}"
        opener = f" (opened by {site.get('file')}:{site.get('line')})" if isinstance(site, dict) else ""
        return f"connection to {data.get('key')} not recorded{opener}"
    return f"{data.get('source', '?')} {data.get('key', '')} = {short_json(data.get('value'), 50)}".replace("  ", " ")


def _replay_diverged(data: dict[str, Any]) -> str:
    """`code at seq N $.path`; a divergence about no recorded event (an unexpected call) is `before seq N`."""
    seq, point = data.get("eventSeq"), data.get("divergencePoint")
    where = f"at seq {seq}" if seq is not None else f"before seq {point}" if point is not None else ""
    return f"{data.get('code', 'diverged')} {where} {data.get('jsonPath') or ''}".replace("  ", " ").strip()


_SUMMARIZERS = {
    "run_start": _run_start,
    "run_end": _run_end,
    "llm_request": _llm_request,
    "llm_response": _llm_response,
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "state_mutation": _state_mutation,
    "nondeterministic": _nondeterministic,
    "replay_diverged": _replay_diverged,
}
