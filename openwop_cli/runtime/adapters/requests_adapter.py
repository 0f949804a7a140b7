"""requests: record and replay at `HTTPAdapter.send`, the one place every requests call goes through.

The response body is read whole while recording (a streamed response is handed on after it ends)
and handed back from memory, decoded, so `r.json()`, `r.iter_lines()` and `r.raw` all work.
"""

import io
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime.adapters.exchange import (
    Exchange,
    body_bytes,
    plain_headers,
    recording_session,
    sendable_body,
    to_wop_proxy,
)

_MARK = "__wop_patched__"


def patch(module: Any) -> None:
    """Wrap requests.adapters.HTTPAdapter.send (idempotent); module is the `requests` package."""
    import requests.adapters

    adapter = requests.adapters.HTTPAdapter
    if not getattr(adapter.send, _MARK, False):
        adapter.send = _send_handler(adapter.send)


def _send_handler(original: Callable[..., Any]) -> Callable[..., Any]:
    def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        session = recording_session()
        if session is None or to_wop_proxy(request.url):
            return original(self, request, *args, **kwargs)
        if request.body is not None and not isinstance(request.body, (bytes, str)):  # a file or chunks: read once
            request.body = sendable_body(request.body)
        body = request.body.encode() if isinstance(request.body, str) else body_bytes(request.body)
        exchange = Exchange(session, request.method, request.url, request.headers, body)
        answer = exchange.begin()
        if answer is not None:
            return _response(request, answer)
        with exchange.sending():
            response = original(self, request, *args, **kwargs)
            content = response.content
        headers = plain_headers(response.headers)
        exchange.record_response(response.status_code, headers, content, exchange.is_stream(headers), in_call=True)
        response.raw = io.BytesIO(content)
        response._content_consumed = True
        return response

    setattr(send, _MARK, True)
    return send


def _response(request: Any, parts: tuple) -> Any:
    import requests
    from requests.structures import CaseInsensitiveDict

    status, headers, chunks, _streamed = parts
    body = b"".join(chunks)
    response = requests.Response()
    response.status_code = status
    response.headers = CaseInsensitiveDict(headers)
    response.raw = io.BytesIO(body)
    response._content = body
    response.url = request.url
    response.request = request
    response.reason = "OK" if status < 400 else "wop replay"
    response.encoding = requests.utils.get_encoding_from_headers(response.headers)
    return response
