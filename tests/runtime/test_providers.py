"""Provider recognition, the recipe input of each wire format, and streamed answers split and assembled."""

import orjson
import pytest

from openwop_cli.format.cachekey import cache_key, recipe_input
from openwop_cli.runtime.adapters import sse
from openwop_cli.runtime.providers import recognize, stop_reason, url_without_secrets, usage


@pytest.mark.parametrize("url, body, expected", [
    ("https://api.openai.com/v1/chat/completions", {"model": "gpt-4o", "stream": True}, ("openai", "gpt-4o", True)),
    ("http://localhost:8000/v1/chat/completions", {"model": "llama"}, ("openai", "llama", False)),
    ("https://api.openai.com/v1/responses", {"model": "gpt-5", "input": "hi"}, ("openai", "gpt-5", False)),
    ("https://api.anthropic.com/v1/messages", {"model": "claude", "stream": False}, ("anthropic", "claude", False)),
    ("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
     {"contents": []}, ("google", "gemini-2.0-flash", True)),
    ("http://127.0.0.1:11434/api/chat", {"model": "qwen"}, ("ollama", "qwen", True)),
])
def test_llm_calls_are_recognised_by_path(url, body, expected):
    call = recognize("POST", url, body)
    assert (call.provider, call.model, call.stream) == expected


@pytest.mark.parametrize("url, user_agent, provider", [
    ("https://api.mistral.ai/v1/chat/completions", "", "mistral"),
    ("https://api.groq.com/openai/v1/chat/completions", "", "groq"),
    ("https://my-team.openai.azure.com/openai/deployments/x/chat/completions", "", "azure"),
    ("http://127.0.0.1:8000/v1/chat/completions", "mistral-client-python/3.7.0", "mistral"),
    ("http://127.0.0.1:8000/v1/chat/completions", "OpenAI/Python 2.54.0", "openai"),
    ("https://api.together.xyz/v1/chat/completions", "", "together"),
    ("https://api.fireworks.ai/inference/v1/chat/completions", "", "fireworks"),
    ("https://api.deepseek.com/chat/completions", "", "deepseek"),
    ("https://api.x.ai/v1/chat/completions", "", "xai"),
    ("https://openrouter.ai/api/v1/chat/completions", "", "openrouter"),
    ("http://127.0.0.1:8000/openai/v1/chat/completions", "Groq/Python 1.7.0", "groq"),
])
def test_openai_compatible_vendors_get_their_own_provider_name_and_keep_the_openai_shape(url, user_agent, provider):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    call = recognize("POST", url, body, user_agent)
    assert call.provider == provider
    assert recipe_input(call.provider, "m", body)["messages"] == [{"role": "user", "content": "hi"}]


def test_cohere_v2_chat_is_recognised_with_its_options_in_the_recipe_and_its_token_counts():
    body = {"model": "command-r-plus", "messages": [{"role": "user", "content": "hi"}], "p": 0.5, "stream": True}
    call = recognize("POST", "https://api.cohere.com/v2/chat", body, "cohere/7.3.1")
    assert (call.provider, call.model, call.stream) == ("cohere", "command-r-plus", True)
    assert recipe_input("cohere", "command-r-plus", body)["topP"] == 0.5
    assert "topK" not in recipe_input("cohere", "command-r-plus", body)
    reported = {"billed_units": {"input_tokens": 5, "output_tokens": 4}, "tokens": {"input_tokens": 71, "output_tokens": 4}}
    counted = usage({"finish_reason": "COMPLETE", "usage": reported})
    assert (counted["input_tokens"], counted["output_tokens"], counted["tokens"]) == (71, 4, reported["tokens"])
    billed_only = usage({"usage": {"billed_units": {"input_tokens": 5, "output_tokens": 4}}})
    assert (billed_only["input_tokens"], billed_only["output_tokens"]) == (5, 4)
    assert stop_reason({"finish_reason": "COMPLETE", "usage": reported}) == "COMPLETE"


@pytest.mark.parametrize("method, url, body", [
    ("GET", "https://api.openai.com/v1/models", None),
    ("POST", "https://example.com/orders", {"order": 1}),
    ("POST", "https://api.openai.com/v1/chat/completions", "not json"),
])
def test_other_requests_are_not_llm_calls(method, url, body):
    assert recognize(method, url, body) is None


def test_every_wire_format_gives_the_same_key_for_the_same_conversation():
    expected = cache_key({"provider": "p", "model": "m", "messages": [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], "temperature": 0.5})
    shapes = [
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], "temperature": 0.5},
        {"system": "be brief", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5, "max_tokens": 9},
        {"instructions": "be brief", "input": "hi", "temperature": 0.5},
    ]
    for shape in shapes:
        assert cache_key(recipe_input("p", "m", shape)) == expected
    gemini = recipe_input("google", "g", {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                                          "generationConfig": {"temperature": 0.2, "maxOutputTokens": 5}})
    assert gemini["messages"] == [{"role": "user", "content": [{"text": "hi"}]}] and gemini["temperature"] == 0.2
    ollama = recipe_input("ollama", "q", {"messages": [{"role": "user", "content": "hi"}], "options": {"temperature": 0}})
    assert ollama["temperature"] == 0


def test_the_recipe_keeps_only_the_recipes_message_fields():
    """A provider message becomes {role, content, name?, toolCallId?}: its id, cache_control, annotations and the
    like are not the recipe's (§A), whichever client sent them."""
    request = {"messages": [
        {"role": "user", "content": "hi", "id": "msg_1", "cache_control": {"type": "ephemeral"}, "name": "ann"},
        {"role": "tool", "content": "42", "tool_call_id": "call_1", "annotations": []}]}
    assert recipe_input("openai", "m", request)["messages"] == [
        {"role": "user", "content": "hi", "name": "ann"}, {"role": "tool", "content": "42", "toolCallId": "call_1"}]


def test_a_null_content_is_kept_verbatim_never_coalesced_to_an_empty_string():
    """§B: messages[i].content is preserved verbatim; `null` and `""` are two requests with two keys."""
    def recipe(content):
        return recipe_input("openai", "m", {"messages": [{"role": "assistant", "content": content}]})

    assert recipe(None)["messages"] == [{"role": "assistant", "content": None}]
    assert cache_key(recipe(None)) != cache_key(recipe(""))
    assert recipe_input("openai", "m", {"messages": [{"role": "assistant"}]})["messages"] == [
        {"role": "assistant", "content": None}], "a message without content is keyed as content null"


def test_tool_call_turns_get_a_key_that_depends_on_the_call():
    def turn(arguments):
        return {"messages": [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
    first, second = (cache_key(recipe_input("openai", "m", turn(args))) for args in ('{"a": 1}', '{"a": 2}'))
    assert first != second


def test_secret_query_parameters_are_masked():
    masked = url_without_secrets("https://x.com/v1/models/g:generateContent?key=AIzaSECRET&alt=sse")
    assert "AIzaSECRET" not in masked and "alt=sse" in masked and "key=***REDACTED***" in masked
    assert url_without_secrets("https://user:pw@x.com/a") == "https://x.com/a"


def test_responses_say_why_they_stopped_and_what_they_used():
    assert stop_reason({"candidates": [{"finishReason": "STOP"}]}) == "STOP"
    assert usage({"usageMetadata": {"totalTokenCount": 3}}) == {"totalTokenCount": 3}
    assert stop_reason({"done_reason": "stop", "done": True}) == "stop"
    assert usage({"prompt_eval_count": 2, "eval_count": 5}) == {"prompt_eval_count": 2, "eval_count": 5}


def test_a_cohere_stream_assembles_its_text_tool_calls_stop_reason_and_token_counts():
    events = [
        {"type": "message-start", "delta": {"message": {"role": "assistant"}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "hello "}}}},
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "there"}}}},
        {"type": "tool-call-start", "index": 1, "delta": {"message": {"tool_calls": {
            "id": "t1", "type": "function", "function": {"name": "lookup", "arguments": ""}}}}},
        {"type": "tool-call-delta", "index": 1, "delta": {"message": {"tool_calls": {"function": {"arguments": "{}"}}}}},
        {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": {
            "billed_units": {"input_tokens": 2, "output_tokens": 3}, "tokens": {"input_tokens": 9, "output_tokens": 3}}}},
    ]
    body = b"".join(sse.event_bytes({"event": event["type"], "data": orjson.dumps(event).decode()}) for event in events)
    message = sse.assemble("cohere", sse.split_events(body))
    assert message["text"] == "hello there" and message["stopReason"] == "TOOL_CALL"
    assert message["toolCalls"] == [{"id": "t1", "name": "lookup", "arguments": "{}"}]
    assert (message["usage"]["input_tokens"], message["usage"]["output_tokens"]) == (9, 3)


def test_sse_round_trips_and_streams_assemble_per_provider():
    body = (b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3}}}\n\n'
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
            b': keep-alive comment\n\n'
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n'
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}\n\n'
            b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\n')
    events = sse.split_events(body)
    assert len(events) == 5 and events[0]["event"] == "message_start"
    assert sse.split_events(b"".join(sse.event_bytes(event) for event in events)) == events
    message = sse.assemble("anthropic", events)
    assert message["text"] == "Hello" and message["stopReason"] == "end_turn"
    assert message["usage"] == {"input_tokens": 3, "output_tokens": 2}
    chat = sse.split_events(b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":'
                            b'{"name":"f","arguments":"{\\"a\\""}}]}}]}\n\ndata: {"choices":[{"index":0,"delta":'
                            b'{"tool_calls":[{"index":0,"function":{"arguments":": 1}"}}]},"finish_reason":"tool_calls"}]}\n\n'
                            b'data: [DONE]\n\n')
    assembled = sse.assemble("openai", chat)
    assert assembled["toolCalls"] == [{"id": "c1", "name": "f", "arguments": '{"a": 1}'}]
    assert assembled["stopReason"] == "tool_calls"
    lines = sse.split_lines(b'{"message":{"content":"a"}}\n{"message":{"content":"b"},"done":true,"done_reason":"stop"}\n')
    assert sse.assemble("ollama", lines)["text"] == "ab"
