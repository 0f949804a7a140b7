"""A local stand-in for a chat-completions model, so the example runs offline and answers the same way every time.

It reads the conversation like a model would: the order facts come from the tool message, the
tone from the system prompt. The response has the OpenAI chat-completions shape.
"""

import re

_ORDER_FACTS = re.compile(r"order (?P<id>\S+) status=(?P<status>\S+) eta=(?P<eta>\S+)")


def complete(model: str, messages: list[dict], temperature: float = 1.0, max_tokens: int = 256) -> dict:
    """Answer the last user question from the facts in the conversation."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    facts = next((match for m in messages if m["role"] == "tool" and (match := _ORDER_FACTS.search(m["content"]))), None)
    if facts is None:
        answer = "I could not find that order; could you check the order number?"
    elif facts["status"] == "shipped":
        answer = f"Your order {facts['id']} has shipped and should arrive on {facts['eta']}."
    else:
        answer = f"Your order {facts['id']} is {facts['status']}; we expect it to ship by {facts['eta']}."
    if "warm" in system.lower():
        answer = "Thanks for your patience! " + answer
    prompt_tokens = sum(len(m["content"].split()) for m in messages)
    completion_tokens = len(answer.split())
    return {
        "id": "chatcmpl-fake-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def serve() -> str:
    """Start the stand-in as an OpenAI-compatible server on 127.0.0.1 (a daemon thread); returns its base URL.

    For examples that talk to a model over HTTP the way real agents do, while still running offline.
    """
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            reply = json.dumps(complete(body.get("model", "fake-gpt"), body.get("messages", []))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"
