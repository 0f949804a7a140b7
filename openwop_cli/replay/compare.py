"""The whole request: once its content key has found a call's recording, what today's run sent is compared with it.

The key (the spec's cache-key recipe for an LLM call) covers the messages, the tools and a few sampling options;
a strict replay compares everything else too — every body field, the HTTP method and the URL path — so a changed
`max_tokens`, an added `tool_choice` or a flipped `stream` is a divergence at its JSON path, never "replays exactly".
Not compared: the headers (they carry SDK versions, request ids, idempotency keys and credentials), the URL's query
(its credentials are redacted), and the body fields in VOLATILE_FIELDS, which SDKs fill with a new value on each call.

Both sides are compared as the capture holds them: today's request passes through the capture's redactor first, so
a secret never shows as the difference. The common case costs one serialization: today's body, as orjson writes it,
found as it is in the recorded event's line.
"""

from collections.abc import Callable
from typing import Any

import orjson

from openwop_cli.replay.divergence import first_difference
from openwop_cli.wire.jsonable import json_form

# Body fields an SDK sets anew on every call: never a change in what the program asked.
VOLATILE_FIELDS = frozenset({"request_id", "requestId", "idempotency_key", "idempotencyKey", "client_request_id"})
# Differences that change the answer's shape: serving the recorded answer would hand the program the wrong kind.
SHAPE_PATHS = frozenset({"$.stream", "$.http.method", "$.http.path"})


def request_difference(line: bytes, recorded: Callable[[], dict[str, Any]], today: dict[str, Any],
                       redactor: Any = None, sent: bytes | None = None) -> tuple[str, Any, Any] | None:
    """(JSON path, recorded value, today's value) of the first difference between a recorded llm_request (its event
    line, and a function parsing its data) and today's request data; None when they are the same.

    sent: the body's bytes as the program sent them (an HTTP adapter has them). An SDK that writes compact JSON
    (httpx's `json=`) sends the very bytes the capture wrote, which then settle the common case without writing
    today's body again. Paths are the body's own (`$.max_tokens`), or `$.http.method` / `$.http.path`."""
    body, http = today.get("request"), today.get("http")
    try:
        if _same_in_place(line, body, http, sent):
            return None
    except TypeError:  # not JSON as it stands (an SDK call's request with Python objects): compared below
        pass
    data = json_form(recorded())  # bytes the capture keeps as blobs come back as bytes: as today's request has them
    today_body = json_form(body)
    if redactor is not None:
        today_body = redactor.redact(today_body)
    path, was, now = first_difference(_comparable(data.get("request")), _comparable(today_body))
    if path is not None:
        return path, was, now
    return _http_difference(data.get("http"), http)


def _same_in_place(line: bytes, body: Any, http: Any, sent: bytes | None = None) -> bool:
    """Whether the recorded event's line holds today's body (and `http`, when today has one) exactly, as wop writes
    an llm_request's data: `"request":BODY` then `,"http":HTTP`. Found by a short search and compared in place (a
    search for the whole 10 KB body cost ten times more). The key found is the data's own only when two objects are
    open before it (the event's and its data's; a key inside a string is escaped, `\\"request\\":`); anything else
    (a nested `request` first, another order) is left to the caller's comparison of parsed values. The body is
    looked for as sent first: the same bytes are the same value, and the check of what follows them (`,"http":`,
    or the data's end) makes sure they are the whole recorded body, not the start of a longer one."""
    start = line.find(_REQUEST_KEY)
    if start < 0 or line.count(b"{", 0, start) != 2:
        return False
    start += len(_REQUEST_KEY)
    value = sent if sent is not None and line.startswith(sent, start) else orjson.dumps(body)
    if not line.startswith(value, start):
        return False
    end = start + len(value)
    if http is not None:
        if not line.startswith(_HTTP_KEY, end):
            return False
        value = orjson.dumps(http)
        end += len(_HTTP_KEY)
        if not line.startswith(value, end):
            return False
        end += len(value)
    return line[end:end + 1] in (b",", b"}")


_REQUEST_KEY = b'"request":'
_HTTP_KEY = b',"http":'


def changes_shape(path: str | None) -> bool:
    """True when a difference at path means the recorded answer has another shape than today's call expects."""
    return path in SHAPE_PATHS


def shape_difference(recorded: dict[str, Any], today: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """The difference (as request_difference's) that gives the recorded answer another shape than today's call
    expects, if any: the `stream` flag, the method or the URL path (Gemini's `:streamGenerateContent`)."""
    was, now = _stream_flag(recorded.get("request")), _stream_flag(today.get("request"))
    if was != now:
        return "$.stream", was, now
    return _http_difference(recorded.get("http"), today.get("http"))


def _stream_flag(body: Any) -> Any:
    return body.get("stream") if isinstance(body, dict) else None


def _comparable(body: Any) -> Any:
    """A request body without its volatile fields (at the top, and in a top-level `metadata`)."""
    if not isinstance(body, dict):
        return body
    kept = {key: value for key, value in body.items() if key not in VOLATILE_FIELDS}
    metadata = kept.get("metadata")
    if isinstance(metadata, dict):
        kept["metadata"] = {key: value for key, value in metadata.items() if key not in VOLATILE_FIELDS}
    return kept


def _http_difference(recorded: Any, today: Any) -> tuple[str, Any, Any] | None:
    """The method or URL path that differs between two requests' `http` parts (absent on one side: not compared)."""
    if not isinstance(recorded, dict) or not isinstance(today, dict):
        return None
    for field, read in (("method", _method), ("path", _path)):
        was, now = read(recorded), read(today)
        if was != now:
            return f"$.http.{field}", was, now
    return None


def _method(http: dict[str, Any]) -> Any:
    method = http.get("method")
    return method.upper() if isinstance(method, str) else method


def _path(http: dict[str, Any]) -> Any:
    url = http.get("url")
    if not isinstance(url, str):
        return url
    from urllib.parse import urlsplit

    return urlsplit(url).path
