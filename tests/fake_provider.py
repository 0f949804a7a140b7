"""A fake LLM provider on 127.0.0.1 speaking the OpenAI and Anthropic wire formats, for tests.

- POST …/chat/completions: OpenAI chat completions, JSON or SSE (`stream: true`); with `tools` and
  no tool result yet, it answers with a call of the first tool.
- POST …/v1/messages: Anthropic messages, JSON or SSE.
- anything else: 200 with a small JSON echo (a plain HTTP API).
Answers are built from the last user message; `refuse=True` makes chat answers refusals. It
records each request body and the headers it received.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeProvider:
    """Start with `with FakeProvider() as provider:`; provider.url is the base URL (no /v1)."""

    def __init__(self, *, refuse: bool = False, prefix: str = "answer to") -> None:
        self.refuse = refuse
        self.prefix = prefix
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"{}")
                provider.requests.append(body)
                provider.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path.endswith("/chat/completions"):
                    self._answer(body, provider.openai_events(body) if body.get("stream") else provider.openai(body))
                elif self.path.endswith("/v1/messages"):
                    self._answer(body, provider.anthropic_events(body) if body.get("stream") else provider.anthropic(body))
                else:
                    self._answer(body, {"echo": body, "path": self.path})

            def do_GET(self) -> None:  # noqa: N802
                provider.requests.append({"GET": self.path})
                self._answer({}, {"path": self.path, "ok": True})

            def _answer(self, body: dict, reply: object) -> None:
                if isinstance(reply, list):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for event in reply:
                        self._chunk(event.encode())
                    self._chunk(b"")
                    return
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # ---- OpenAI ---------------------------------------------------------------------------------

    def answer_text(self, body: dict) -> str:
        last = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        return f"{self.prefix} {last if isinstance(last, str) else json.dumps(last)}"

    def wants_tool(self, body: dict) -> bool:
        return bool(body.get("tools")) and not any(m.get("role") == "tool" for m in body.get("messages", []))

    def openai(self, body: dict) -> dict:
        message: dict = {"role": "assistant", "content": None if self.refuse else self.answer_text(body),
                         "refusal": "I can't help with that." if self.refuse else None}
        finish = "stop"
        if self.wants_tool(body) and not self.refuse:
            name = body["tools"][0]["function"]["name"]
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": name, "arguments": '{"order_id": "A-1"}'}}]}
            finish = "tool_calls"
        return {"id": "chatcmpl-test", "object": "chat.completion", "created": 1763875573, "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}}

    def openai_events(self, body: dict) -> list[str]:
        base = {"id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 1763875573,
                "model": body.get("model")}
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
        for word in self.answer_text(body).split(" "):
            chunks.append({**base, "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        return [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]

    # ---- Anthropic ------------------------------------------------------------------------------

    def anthropic(self, body: dict) -> dict:
        return {"id": "msg_test", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": [{"type": "text", "text": self.answer_text(body)}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": 7, "output_tokens": 5}}

    def anthropic_events(self, body: dict) -> list[str]:
        message = {**self.anthropic(body), "content": [], "stop_reason": None}
        events = [("message_start", {"type": "message_start", "message": message}),
                  ("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})]
        for word in self.answer_text(body).split(" "):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": word + " "}}))
        events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                   ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                      "usage": {"output_tokens": 5}}),
                   ("message_stop", {"type": "message_stop"})]
        return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events]

    def __enter__(self) -> "FakeProvider":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
