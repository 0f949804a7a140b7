"""A fake OpenAI-compatible chat completions server on 127.0.0.1 for tests: real sockets, canned answers.

It answers POST /v1/chat/completions with an answer built from the last user message, or a refusal
when the server is in refusal mode; it counts the requests it served.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeProvider:
    """Start with `with FakeProvider() as provider:`; provider.url is the base URL."""

    def __init__(self, *, refuse: bool = False, prefix: str = "answer to") -> None:
        self.refuse = refuse
        self.prefix = prefix
        self.requests: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                provider.requests.append(body)
                reply = json.dumps(provider.completion(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def completion(self, body: dict) -> dict:
        last = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        message = {"role": "assistant", "content": None if self.refuse else f"{self.prefix} {last}",
                   "refusal": "I can't help with that." if self.refuse else None}
        return {"id": "chatcmpl-test", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}}

    def __enter__(self) -> "FakeProvider":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
