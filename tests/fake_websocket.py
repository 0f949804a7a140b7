"""A fake websocket server on 127.0.0.1 for tests: an echo service and an OpenAI-realtime-like service.

Echo: on connect it sends {"type": "hello"} unprompted; each text message comes back as `echo: <text>` (a JSON
object as {"echo": <object>}), each binary one reversed; `bye` is answered by a close with code 4000, reason `done`.
Realtime (path containing /realtime): session.created on connect; response.create is answered by
response.output_text.delta events built from the last conversation item's text, then response.done.
"""

import json
import threading
from typing import Any

from websockets.datastructures import Headers
from websockets.http11 import Response
from websockets.sync.server import serve


class FakeWebsocketServer:
    """`with FakeWebsocketServer() as server:`; server.url is ws://127.0.0.1:PORT; server.received what it got."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None)
        self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handle(self, connection: Any) -> None:
        if "/realtime" in connection.request.path:
            return self._realtime(connection)
        connection.send(json.dumps({"type": "hello"}))
        for message in connection:
            self.received.append(message)
            if message == "bye":
                connection.close(4000, "done")
                return
            if isinstance(message, bytes):
                connection.send(message[::-1])
            elif message.startswith("{"):
                connection.send(json.dumps({"echo": json.loads(message)}))
            else:
                connection.send(f"echo: {message}")

    def _realtime(self, connection: Any) -> None:
        connection.send(json.dumps({"type": "session.created", "event_id": "event_1",
                                    "session": {"id": "sess_1", "object": "realtime.session", "model": "gpt-realtime"}}))
        text = ""
        for message in connection:
            event = json.loads(message)
            self.received.append(event)
            if event["type"] == "conversation.item.create":
                text = event["item"]["content"][0]["text"]
            elif event["type"] == "response.create":
                for index, word in enumerate(f"answer to {text}".split(" ")):
                    connection.send(json.dumps({"type": "response.output_text.delta", "event_id": f"event_d{index}",
                                                "response_id": "resp_1", "item_id": "item_1", "output_index": 0,
                                                "content_index": 0, "delta": word + " "}))
                connection.send(json.dumps({"type": "response.done", "event_id": "event_done",
                                            "response": {"id": "resp_1", "object": "realtime.response",
                                                         "status": "completed", "output": []}}))

    def __enter__(self) -> "FakeWebsocketServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()


class RedirectingWebsocketServer:
    """`with RedirectingWebsocketServer(target) as server:` answers every handshake with a 302 to target."""

    def __init__(self, target: str) -> None:
        self._server = serve(lambda connection: None, "127.0.0.1", 0, process_request=self._redirect)
        self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}"
        self._target = target
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _redirect(self, connection: Any, request: Any) -> Response:
        return Response(302, "Found", Headers({"Location": self._target, "Content-Length": "0"}), b"")

    def __enter__(self) -> "RedirectingWebsocketServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
