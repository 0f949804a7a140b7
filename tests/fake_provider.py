"""A fake LLM provider on 127.0.0.1 speaking the OpenAI, Anthropic, Gemini and Bedrock wire formats, for tests.

- POST …/chat/completions: OpenAI chat completions, JSON or SSE (`stream: true`); with `tools` and
  no tool result yet, it answers with a call of the first tool.
- POST …/responses: the OpenAI Responses API, JSON.
- POST …/v1/messages: Anthropic messages, JSON or SSE.
- POST …/models/M:generateContent and :streamGenerateContent (SSE): Gemini.
- POST …/v2/chat: Cohere v2 chat, JSON or SSE (`stream: true`).
- POST /model/M/converse, /converse-stream, /invoke, /invoke-with-response-stream: Amazon Bedrock
  runtime; the streams are AWS event streams (binary frames with CRCs), InvokeModel speaks Anthropic.
- anything else: 200 with a small JSON echo (a plain HTTP API).
Answers are built from the last user message; `refuse=True` makes chat answers refusals, and
`event_delay` spaces out the events of a stream. It records each request body and the headers it
received.
"""

import base64
import json
import struct
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


class FakeProvider:
    """Start with `with FakeProvider() as provider:`; provider.url is the base URL (no /v1)."""

    def __init__(self, *, refuse: bool = False, prefix: str = "answer to", event_delay: float = 0.0,
                 piece: int | None = None) -> None:
        """event_delay: seconds between the events of a stream (a slow model); piece: a stream's text comes in pieces
        of this many characters (a word each, with its space, without it)."""
        self.piece = piece
        self.refuse = refuse
        self.prefix = prefix
        self.event_delay = event_delay
        self.requests: list[dict] = []
        self.raw_requests: list[bytes] = []  # each request body as it came
        self.headers: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self._body()
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:  # a plain HTTP API's binary or text upload
                    body = {"bytes": len(raw)}
                provider.requests.append(body)
                provider.raw_requests.append(raw)
                provider.headers.append({k.lower(): v for k, v in self.headers.items()})
                path = urlsplit(self.path).path
                if path.endswith("/chat/completions"):
                    self._answer(body, provider.openai_events(body) if body.get("stream") else provider.openai(body))
                elif path.endswith("/responses"):
                    self._answer(body, provider.responses(body))
                elif path.endswith("/v1/messages"):
                    self._answer(body, provider.anthropic_events(body) if body.get("stream") else provider.anthropic(body))
                elif path.endswith(":generateContent"):
                    self._answer(body, provider.gemini(body, path))
                elif path.endswith(":streamGenerateContent"):
                    self._answer(body, provider.gemini_events(body, path))
                elif path.endswith("/v2/chat"):
                    self._answer(body, provider.cohere_events(body) if body.get("stream") else provider.cohere(body))
                elif path.startswith("/model/"):
                    self._bedrock(body, path.rsplit("/", 1)[-1])
                else:
                    self._answer(body, {"echo": body, "path": self.path})

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":  # an upload streamed in chunks
                    return self.rfile.read(int(self.headers.get("Content-Length", 0)))
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(chunks)

            def _bedrock(self, body: dict, operation: str) -> None:
                if operation == "converse":
                    self._answer(body, provider.bedrock_converse(body))
                elif operation == "invoke":
                    self._answer(body, provider.anthropic(body))
                else:
                    frames = (provider.bedrock_converse_frames(body) if operation == "converse-stream"
                              else provider.bedrock_invoke_frames(body))
                    self.send_response(200)
                    self.send_header("Content-Type", "application/vnd.amazon.eventstream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for frame in frames:
                        self._chunk(frame)
                    self._chunk(b"")

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
                        try:
                            self._chunk(event.encode())
                        except OSError:  # the client stopped reading
                            return
                        time.sleep(provider.event_delay)
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

    def pieces(self, text: str) -> list[str]:
        """A streamed answer's text as its chunks carry it."""
        if self.piece:
            return [text[start:start + self.piece] for start in range(0, len(text), self.piece)]
        return [word + " " for word in text.split(" ")]

    def answer_text(self, body: dict) -> str:
        messages = body.get("messages") or [{"role": content.get("role", "user"), "content": content.get("parts")}
                                            for content in body.get("contents", [])]
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        if isinstance(last, list) and all(isinstance(block, dict) and "text" in block for block in last):
            last = " ".join(block["text"] for block in last)  # content blocks (Anthropic, Gemini parts, Bedrock)
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
        for piece in self.pieces(self.answer_text(body)):
            chunks.append({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        return [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]

    def responses(self, body: dict) -> dict:
        """An OpenAI Responses API answer (non-streamed) to `input` (a string or a list of messages)."""
        given = body.get("input")
        text = self.answer_text({"messages": [{"role": "user", "content": given}] if isinstance(given, str) else given})
        return {"id": "resp_test", "object": "response", "created_at": 1763875573, "status": "completed",
                "model": body.get("model"), "output": [
                    {"type": "message", "id": "msg_test", "status": "completed", "role": "assistant",
                     "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                "parallel_tool_calls": True, "tool_choice": body.get("tool_choice", "auto"), "tools": [],
                "usage": {"input_tokens": 5, "output_tokens": 4, "total_tokens": 9,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}

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
        for piece in self.pieces(self.answer_text(body)):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": piece}}))
        events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                   ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                      "usage": {"output_tokens": 5}}),
                   ("message_stop", {"type": "message_stop"})]
        return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events]

    # ---- Gemini ---------------------------------------------------------------------------------

    def gemini(self, body: dict, path: str, text: str | None = None, finish: str | None = "STOP") -> dict:
        model = path.rsplit("/models/", 1)[-1].split(":", 1)[0]
        candidate = {"content": {"role": "model", "parts": [{"text": self.answer_text(body) if text is None else text}]},
                     "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "modelVersion": model,
                "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 4, "totalTokenCount": 9}}

    def gemini_events(self, body: dict, path: str) -> list[str]:
        words = self.pieces(self.answer_text(body))
        chunks = [self.gemini(body, path, word, "STOP" if index == len(words) - 1 else None)
                  for index, word in enumerate(words)]
        return [f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks]

    # ---- Cohere ---------------------------------------------------------------------------------

    COHERE_USAGE = {"billed_units": {"input_tokens": 5, "output_tokens": 4},
                    "tokens": {"input_tokens": 71, "output_tokens": 4}}

    def cohere(self, body: dict) -> dict:
        return {"id": "co-test", "finish_reason": "COMPLETE", "usage": self.COHERE_USAGE,
                "message": {"role": "assistant", "content": [{"type": "text", "text": self.answer_text(body)}]}}

    def cohere_events(self, body: dict) -> list[str]:
        events = [{"type": "message-start", "id": "co-test", "delta": {"message": {"role": "assistant"}}},
                  {"type": "content-start", "index": 0,
                   "delta": {"message": {"content": {"type": "text", "text": ""}}}}]
        for word in self.answer_text(body).split(" "):
            events.append({"type": "content-delta", "index": 0,
                           "delta": {"message": {"content": {"text": word + " "}}}})
        events += [{"type": "content-end", "index": 0},
                   {"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": self.COHERE_USAGE}}]
        return [f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events]

    # ---- Bedrock --------------------------------------------------------------------------------

    def bedrock_converse(self, body: dict) -> dict:
        return {"output": {"message": {"role": "assistant", "content": [{"text": self.answer_text(body)}]}},
                "stopReason": "end_turn", "usage": {"inputTokens": 7, "outputTokens": 5, "totalTokens": 12},
                "metrics": {"latencyMs": 12}}

    def bedrock_converse_frames(self, body: dict) -> list[bytes]:
        events = [("messageStart", {"role": "assistant"})]
        for piece in self.pieces(self.answer_text(body)):
            events.append(("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}}))
        events += [("contentBlockStop", {"contentBlockIndex": 0}), ("messageStop", {"stopReason": "end_turn"}),
                   ("metadata", {"usage": {"inputTokens": 7, "outputTokens": 5, "totalTokens": 12},
                                 "metrics": {"latencyMs": 12}})]
        return [event_stream_frame(name, data) for name, data in events]

    def bedrock_invoke_frames(self, body: dict) -> list[bytes]:
        events = [json.loads(line[len("data: "):]) for event in self.anthropic_events(body)
                  for line in event.splitlines() if line.startswith("data: ")]
        return [event_stream_frame("chunk", {"bytes": base64.b64encode(json.dumps(event).encode()).decode()})
                for event in events]

    def __enter__(self) -> "FakeProvider":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def event_stream_frame(event_type: str, payload: dict) -> bytes:
    """One AWS event-stream frame: prelude (lengths + CRC32), string headers, JSON payload, message CRC32."""
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")):
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
    data = json.dumps(payload).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(data), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + data
    return message + struct.pack(">I", zlib.crc32(message))
