"""The cache key matches an independent computation of the recipe: JCS (rfc8785) + sha256."""

import hashlib
import json

import pytest
import rfc8785

from openwop_cli.format.cachekey import CacheKeyInputError, cache_key, cache_key_input, tool_schema_hash
from tests.conftest import run_wop

REQUEST = {
    "provider": "openai",
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
    ],
    "tools": [
        {"name": "weather", "description": "Forecast", "parameters": {"type": "object", "properties": {"z": {}, "a": {}}}},
        {"name": "clock", "parameters": {"type": "object"}},
    ],
    "temperature": 0.2,
    "topP": 1,
}


def independent_key(request):
    canonical = {k: request[k] for k in ("provider", "model", "messages")}
    canonical["tools"] = sorted(request["tools"], key=lambda tool: tool["name"])
    for field in ("temperature", "topP", "topK", "responseFormat"):
        if field in request:
            canonical[field] = request[field]
    return hashlib.sha256(rfc8785.dumps(canonical)).hexdigest()


def test_key_equals_the_recipe_computed_independently():
    assert cache_key(REQUEST) == independent_key(REQUEST)


@pytest.mark.parametrize("noise", [{"max_tokens": 5}, {"stop": ["\n"]}, {"stream": True}, {"metadata": {"a": 1}},
                                   {"user": "u1"}, {"seed": 7}, {"requestId": "r"}, {"traceparent": "00-1"}])
def test_excluded_fields_do_not_change_the_key(noise):
    assert cache_key({**REQUEST, **noise}) == cache_key(REQUEST)


def test_message_fields_outside_the_recipe_do_not_change_the_key():
    """§A: messages are {role, content, name?, toolCallId?}; a message's id, cache_control or anything else is outside
    the closed set. name and toolCallId are in it."""
    noisy = {**REQUEST, "messages": [{**REQUEST["messages"][0], "id": "msg_1", "cache_control": {"type": "ephemeral"}},
                                     {**REQUEST["messages"][1], "timestamp": "2026-01-01", "name": None}]}
    assert cache_key(noisy) == cache_key(REQUEST)
    assert cache_key_input(noisy)["messages"] == REQUEST["messages"]
    named = {**REQUEST, "messages": [REQUEST["messages"][0], {**REQUEST["messages"][1], "name": "ann"}]}
    answered = {**REQUEST, "messages": [REQUEST["messages"][0], {**REQUEST["messages"][1], "toolCallId": "c1"}]}
    assert len({cache_key(named), cache_key(answered), cache_key(REQUEST)}) == 3


def test_tool_order_does_not_change_the_key_but_message_order_does():
    reordered_tools = {**REQUEST, "tools": list(reversed(REQUEST["tools"]))}
    assert cache_key(reordered_tools) == cache_key(REQUEST)
    reordered_messages = {**REQUEST, "messages": list(reversed(REQUEST["messages"]))}
    assert cache_key(reordered_messages) != cache_key(REQUEST)


def test_absent_optional_fields_are_omitted_not_nulled():
    minimal = {"provider": "anthropic", "model": "claude", "messages": [{"role": "user", "content": "hi"}]}
    expected = hashlib.sha256(rfc8785.dumps(minimal)).hexdigest()
    assert cache_key(minimal) == expected
    assert cache_key({**minimal, "temperature": None, "tools": None}) == expected


def test_included_fields_change_the_key():
    assert cache_key({**REQUEST, "temperature": 0.3}) != cache_key(REQUEST)
    assert cache_key({**REQUEST, "topK": 5}) != cache_key(REQUEST)


def test_bad_input_is_a_clear_error():
    with pytest.raises(CacheKeyInputError, match="lowercase"):
        cache_key({**REQUEST, "provider": "OpenAI"})
    with pytest.raises(CacheKeyInputError, match="messages"):
        cache_key({"provider": "openai", "model": "m"})


def test_cli_prints_the_same_key_from_a_file_and_from_stdin(tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    from_file = run_wop("cache-key", str(path))
    from_stdin = run_wop("cache-key", "-", input=json.dumps(REQUEST))
    assert from_file.returncode == 0 and from_stdin.returncode == 0
    assert from_file.stdout.strip() == from_stdin.stdout.strip() == independent_key(REQUEST)


def test_cli_and_the_recorded_key_agree_on_a_message_with_an_id(tmp_path):
    """The key `wop cache-key` prints for a request is the one a capture records for it (a message id aside)."""
    from openwop_cli.runtime.providers import request_keys

    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi", "id": "msg_1"}]}
    recorded = request_keys("openai", "gpt-4o", request)["cacheKey"]
    printed = run_wop("cache-key", "-", input=json.dumps({"provider": "openai", **request}))
    assert printed.returncode == 0 and printed.stdout.strip() == recorded


BIG = 2**53 + 1  # the first integer a double cannot hold: JSON.parse reads it as 2**53


@pytest.mark.parametrize("number", [BIG, -BIG, 2**63, 2**64 + 7, 2**70, -(2**80)])
def test_an_integer_beyond_2_53_is_keyed_as_the_double_a_json_host_reads(number):
    """RFC 8785 is defined over I-JSON, whose numbers are IEEE 754 doubles: an integer beyond 2^53 is keyed as the
    nearest double (what a JavaScript host's JSON.parse gives it), so every host computes the same key."""
    request = {**REQUEST, "tools": [{"name": "t", "parameters": {"type": "integer", "maximum": number}}]}
    as_double = {**REQUEST, "tools": [{"name": "t", "parameters": {"type": "integer", "maximum": float(number)}}]}
    assert cache_key(request) == cache_key(as_double) == hashlib.sha256(rfc8785.dumps(
        cache_key_input(as_double))).hexdigest()


def test_an_integer_no_double_can_hold_is_a_clear_error():
    request = {**REQUEST, "tools": [{"name": "t", "parameters": {"maximum": 10**400}}]}
    with pytest.raises(CacheKeyInputError, match="too large"):
        cache_key(request)


def test_the_cli_keys_a_big_integer_in_a_tool_schema_and_agrees_with_the_recorded_key():
    from openwop_cli.runtime.providers import missing_request_keys

    parameters = {"type": "object", "properties": {"n": {"type": "integer", "maximum": BIG, "minimum": -(2**70)}}}
    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
               "tools": [{"type": "function", "function": {"name": "count", "parameters": parameters}}]}
    recorded = missing_request_keys({"provider": "openai", "model": "gpt-4o", "request": request})  # as a capture
    recipe = {"provider": "openai", "model": "gpt-4o", "messages": request["messages"],
              "tools": [{"name": "count", "parameters": parameters}]}
    printed = run_wop("cache-key", "-", input=json.dumps(recipe))
    assert printed.returncode == 0, printed.stderr
    assert recorded["cacheKey"] is not None and printed.stdout.strip() == recorded["cacheKey"]
    assert recorded["toolSchemaHash"] is not None
    too_big = run_wop("cache-key", "-", input=json.dumps(recipe).replace(str(BIG), "1" + "0" * 400))
    assert too_big.returncode == 2 and "not JSON" in too_big.stderr and len(too_big.stderr.splitlines()) == 1


def test_cli_rejects_bad_input_with_exit_2(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    for args, needle in (((str(path),), "is not JSON"), (("/nope/x.json",), "no such file"),
                         (("-",), "provider must be")):
        done = run_wop("cache-key", *args, input='{"model": "m"}')
        assert done.returncode == 2, done
        assert needle in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("request_, message", [
    ({**REQUEST, "provider": "openaï"}, "provider must be a lowercase ASCII id such as 'openai', got 'openaï'"),
    ({**REQUEST, "provider": 5}, "provider must be a lowercase ASCII id such as 'openai', got 5"),
    ({**REQUEST, "provider": ""}, "provider must be a lowercase ASCII id such as 'openai', got ''"),
    ({**REQUEST, "model": 5}, "model must be a non-empty string, got 5"),
    ({**REQUEST, "model": ""}, "model must be a non-empty string, got ''"),
    ({**REQUEST, "messages": {"role": "user"}}, "messages must be an array of {role, content} objects"),
    ({**REQUEST, "messages": [REQUEST["messages"][0], {"role": "user"}]},
     "messages[1] must be an object with role and content"),
    ({**REQUEST, "messages": [{"content": "hi"}]}, "messages[0] must be an object with role and content"),
    ({**REQUEST, "messages": [["role", "content"]]}, "messages[0] must be an object with role and content"),
    ({**REQUEST, "tools": {"name": "t"}}, "tools must be an array of {name, description?, parameters}"),
    ({**REQUEST, "tools": [REQUEST["tools"][0], {"parameters": {}}]}, "tools[1] must be an object with a string name"),
    ({**REQUEST, "tools": ["weather"]}, "tools[0] must be an object with a string name"),
])
def test_each_shape_the_recipe_refuses_is_named_exactly(request_, message):
    with pytest.raises(CacheKeyInputError) as refused:
        cache_key(request_)
    assert str(refused.value) == message


def test_a_message_may_be_any_mapping_and_keeps_its_name_and_tool_call_id():
    from types import MappingProxyType

    messages = [MappingProxyType({"role": "tool", "content": "42", "name": "calc", "toolCallId": "c1", "id": "x"})]
    assert cache_key_input({**REQUEST, "messages": messages})["messages"] == [
        {"role": "tool", "content": "42", "name": "calc", "toolCallId": "c1"}]
    assert cache_key({**REQUEST, "messages": messages}) == cache_key({**REQUEST, "messages": [dict(messages[0])]})


def test_the_tool_schema_hash_is_the_jcs_hash_of_the_sorted_tools():
    tools = sorted(({key: tool[key] for key in ("name", "description", "parameters") if key in tool}
                    for tool in REQUEST["tools"]), key=lambda tool: tool["name"])
    assert tool_schema_hash(REQUEST) == hashlib.sha256(rfc8785.dumps(tools)).hexdigest()
    assert tool_schema_hash({**REQUEST, "tools": []}) is None and tool_schema_hash({"messages": []}) is None
