"""What every provider's response says in its own words: why it stopped, and how many tokens it used.

Shapes known: OpenAI chat completions and responses, Anthropic messages, Gemini generateContent,
Ollama chat, and plain dicts that already use stopReason/usage.
"""

from typing import Any


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
    """Token usage as the provider reports it (usage, usageMetadata, or Ollama's eval counts)."""
    if type(response) is not dict:
        return None
    for key in ("usage", "usageMetadata"):
        if isinstance(response.get(key), dict):
            return response[key]
    if "eval_count" in response or "prompt_eval_count" in response:
        return {"prompt_eval_count": response.get("prompt_eval_count"), "eval_count": response.get("eval_count")}
    return None


RECIPE_ALIASES = {"top_p": "topP", "top_k": "topK", "response_format": "responseFormat"}


def recipe_input(provider: str, model: str, request: dict[str, Any]) -> dict[str, Any]:
    """The cache-key recipe's input for a request in a provider's own shape.

    Snake-case options become the recipe's names, a top-level `system` (Anthropic) becomes the
    first message, and OpenAI/Anthropic tool declarations become {name, description, parameters}.
    """
    recipe: dict[str, Any] = {"provider": provider, "model": model}
    messages = request.get("messages")
    system = request.get("system")
    if system is not None and isinstance(messages, list):
        messages = [{"role": "system", "content": system}, *messages]
    recipe["messages"] = messages
    if request.get("tools") is not None:
        recipe["tools"] = [_recipe_tool(tool) for tool in request["tools"]] if isinstance(request["tools"], list) else request["tools"]
    for key, value in request.items():
        name = RECIPE_ALIASES.get(key, key)
        if name in ("temperature", "topP", "topK", "responseFormat"):
            recipe[name] = value
    return recipe


def _recipe_tool(tool: Any) -> Any:
    if not isinstance(tool, dict):
        return tool
    declared = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    parameters = declared.get("parameters", declared.get("input_schema"))
    flat = {"name": declared.get("name"), "description": declared.get("description"), "parameters": parameters}
    return {key: value for key, value in flat.items() if value is not None}
