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

from openwop_cli.format.cachekey import request_keys
from openwop_cli.format.credentials import CREDENTIAL_QUERY_NAMES, REDACTED
from openwop_cli.wire.jsonable import json_form


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


def url_without_secrets(url: str) -> str:
    """url with the values of credential query parameters (format.credentials: key=, token=, a SAS's sig=, a presigned
    URL's X-Amz-Signature=, …) replaced, and without its user and password."""
    if "?" not in url and "@" not in url:
        return url
    parts = urlsplit(url)
    if not parts.query and not parts.password:
        return url
    query = [(name, REDACTED if name.lower() in CREDENTIAL_QUERY_NAMES else value)
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


def kept_request_keys(provider: str, model: str, request: Any, redactor: Any) -> dict[str, Any]:
    """request_keys of a request as a capture keeps it, after its redactor: a capture keys what it keeps (no key
    covers a secret), so a replay keys today's request so too (redactor: the replay source's)."""
    return keyed_request(provider, model, request, redactor)[0]


def keyed_request(provider: str, model: str, request: Any, redactor: Any) -> tuple[dict[str, Any], bytes | None]:
    """kept_request_keys, and the request's JSON the redactor wrote on the way (None when it wrote none): the bytes
    a served call's request comparison looks for in the recorded event (replay.compare)."""
    if redactor is None:
        return request_keys(provider, model, request), None
    kept, written = redactor.redact_flagged_written(request)
    return request_keys(provider, model, kept), written


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
