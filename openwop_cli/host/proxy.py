"""`--proxy`: a reverse proxy on 127.0.0.1 that records or serves LLM traffic for programs in any language.

The child gets OPENAI_BASE_URL, ANTHROPIC_BASE_URL (and OLLAMA_HOST) pointed at the proxy. In a
capture the proxy forwards each request to the real upstream (the base URL the environment had,
else the provider's public API), passes the answer back as it arrives — streams chunk by chunk —
and records the exchange. In a replay it answers from the capture and never opens a connection.
Built on the standard library's http.server and http.client; it stops when the child exits.
It does not tunnel websockets: a request asking to upgrade (`Upgrade: websocket`, as openai's realtime
client sends to OPENAI_BASE_URL) is answered 501 with a message saying so, never forwarded stripped of
its Upgrade header (which servers refuse with a puzzling 426). A Python program's websockets are
recorded by the websockets adapter, with or without --proxy.

Only the recorded program may use it: the base URLs carry a token made for this run
(`http://127.0.0.1:PORT/TOKEN/openai/v1`), which every SDK keeps in front of the paths it calls, and
which only the processes started with that environment know. Any other process on the machine that
finds the port gets 403 and nothing of its request is recorded or forwarded. (A token in the path, not
in the URL's userinfo: an SDK sends userinfo as Basic credentials in place of its own API key.)
"""

import hmac
import http.client
import os
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from openwop_cli.format.events import PROXY_ORIGIN
from openwop_cli.runtime.adapters.exchange import Exchange, divergence_parts, plain_headers
from openwop_cli.runtime.session import Session
from openwop_cli.wire.environ import ENV_PROXY

ROUTES = {
    # prefix: (environment variable the child gets, suffix the SDKs expect, default upstream)
    "openai": ("OPENAI_BASE_URL", "/v1", "https://api.openai.com/v1"),
    "anthropic": ("ANTHROPIC_BASE_URL", "", "https://api.anthropic.com"),
    "ollama": ("OLLAMA_HOST", "", "http://127.0.0.1:11434"),
}
UPGRADE_REFUSED = ("wop proxy: cannot tunnel an Upgrade (websocket) request; a Python program's websockets are "
                   "recorded without --proxy, by wop's websockets adapter\n")
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
                         "proxy-authorization", "proxy-connection", "host", "content-length", "accept-encoding"})


class ProxySession(Session):
    """The proxy's session: every exchange comes from one origin, `wop-proxy`, whatever thread served it."""

    def origin(self) -> dict[str, Any]:
        return dict(PROXY_ORIGIN)


class LLMProxy:
    """See the module docstring. `session` records (capture) or has a replayer attached (replay)."""

    def __init__(self, session: Session, environ: dict[str, str] | None = None) -> None:
        self.session = session
        source_env = os.environ if environ is None else environ
        self.upstreams = {prefix: (source_env.get(variable) or default).rstrip("/")
                          for prefix, (variable, _suffix, default) in ROUTES.items()}
        self.token = secrets.token_urlsafe(24)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="wop-proxy", daemon=True)

    def child_environment(self) -> dict[str, str]:
        """The base URL variables that send the child's SDKs through the proxy, and the proxy's address
        (what the child's adapters and connection watcher leave to the proxy)."""
        environment = {variable: f"{self.url}/{self.token}/{prefix}{suffix}"
                       for prefix, (variable, suffix, _d) in ROUTES.items()}
        environment[ENV_PROXY] = self.url.removeprefix("http://")
        return environment

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def admits(self, path: str) -> bool:
        """True when path starts with this run's token (compared in constant time)."""
        token, _, _rest = path.lstrip("/").partition("/")
        return hmac.compare_digest(token.encode(), self.token.encode())

    def upstream_url(self, path: str) -> str | None:
        """Where a proxied path goes: /TOKEN/openai/v1/chat/completions → <OpenAI upstream>/chat/completions."""
        _token, _, path = path.lstrip("/").partition("/")
        prefix, _, rest = path.partition("/")
        route = ROUTES.get(prefix)
        if route is None:
            return None
        suffix = route[1]
        rest = "/" + rest
        if suffix and rest.startswith(suffix):
            rest = rest[len(suffix):]
        return self.upstreams[prefix] + rest


def _handler_class(proxy: LLMProxy) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._proxy()

        do_POST = do_PUT = do_DELETE = do_PATCH = do_GET  # noqa: N815

        def _proxy(self) -> None:
            if not proxy.admits(self.path):
                self.close_connection = True
                self._send(403, [("content-type", "text/plain")], [b"wop proxy: only the program wop runs may use "
                                                                   b"this proxy (its requests carry this run's token)"],
                           False)
                return
            target = proxy.upstream_url(self.path)
            if self.headers.get("Upgrade"):
                self._send(501, [("content-type", "text/plain")], [UPGRADE_REFUSED.encode()], False)
                return
            if target is None:
                route = self.path.lstrip("/").partition("/")[2]
                self._send(404, [("content-type", "text/plain")], [b"wop proxy: unknown route /" + route.encode()], False)
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            exchange = Exchange(proxy.session, self.command, target, self.headers, body)
            answer = exchange.begin()
            if answer is not None:
                self._send(*answer)
            elif proxy.session.replayer is not None:
                self._send(*divergence_parts(RuntimeError("a fork cannot run proxied calls live")))
            else:
                self._forward(exchange, target, body)

        def _forward(self, exchange: Exchange, target: str, body: bytes) -> None:
            parts = urlsplit(target)
            connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            connection = connection_class(parts.netloc, timeout=600)
            headers = {name: value for name, value in self.headers.items() if name.lower() not in _HOP_BY_HOP}
            headers["Accept-Encoding"] = "identity"
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            try:
                connection.request(self.command, path, body=body or None, headers=headers)
                upstream = connection.getresponse()
            except OSError as exc:
                exchange.record_failure(exc)
                self._send(502, [("content-type", "text/plain")], [f"wop proxy: upstream failed: {exc}".encode()], False)
                return
            response_headers = [(name, value) for name, value in upstream.getheaders()
                                if name.lower() not in _HOP_BY_HOP]
            plain = plain_headers(response_headers)
            streamed = exchange.is_stream(plain)
            collected = self._relay(upstream, response_headers, streamed)
            connection.close()
            exchange.record_response(upstream.status, plain, collected, streamed)

        def _relay(self, upstream: Any, headers: list[tuple[str, str]], streamed: bool) -> bytes:
            """Pass the upstream answer on as it arrives (chunk by chunk for streams) and return its bytes."""
            if not streamed:
                data = upstream.read()
                self._send(upstream.status, headers, [data], False)
                return data
            self._start(upstream.status, headers, True)
            chunks = []
            while chunk := upstream.read1(65536):
                chunks.append(chunk)
                self._chunk(chunk)
            self._chunk(b"")
            return b"".join(chunks)

        def _send(self, status: int, headers: list[tuple[str, str]], chunks: list[bytes], streamed: bool) -> None:
            if not streamed:
                data = b"".join(chunks)
                self._start(status, headers, False, len(data))
                self.wfile.write(data)
                return
            self._start(status, headers, True)
            for chunk in chunks:
                self._chunk(chunk)
            self._chunk(b"")

        def _start(self, status: int, headers: list[tuple[str, str]], chunked: bool, length: int | None = None) -> None:
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in _HOP_BY_HOP:
                    self.send_header(name, value)
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            if length is not None:
                self.send_header("Content-Length", str(length))
            self.end_headers()

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
