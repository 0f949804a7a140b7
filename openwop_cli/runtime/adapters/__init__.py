"""Adapters: each HTTP (and websocket) library, and MCP's client transports, recorded and replayed at its transport,
one file per library.

`ADAPTERS` is the registry: the module a library is imported as → the adapter's patch function
(`file:function` in this package). `install()` asks the post-import hook to call each one right
after its library is first imported (or now, if it already is), so a program that never imports
a library pays nothing for its adapter, and supporting a new client is one file plus one row here.
The adapters nest: requests sits on urllib3, urllib3 on http.client; whichever is entered first
records the call and the ones below pass it through (session.inside_boundary).
"""

import importlib
from typing import Any

from openwop_cli.runtime.imports import when_imported

ADAPTERS = {
    "httpx": "httpx_transport:patch",
    "httpx2": "httpx_transport:patch",
    "requests": "requests_adapter:patch",
    "aiohttp": "aiohttp_adapter:patch",
    "urllib3": "urllib3_adapter:patch",
    "http.client": "http_client:patch",
    "websockets.client": "websockets_adapter:patch",
    "websockets.asyncio.client": "websockets_adapter:patch",
    "websockets.sync.client": "websockets_adapter:patch",
    "websockets.legacy.client": "websockets_adapter:patch",
    "mcp.client.stdio": "mcp_adapter:patch",
    "mcp.client.streamable_http": "mcp_adapter:patch",
    "mcp.client.sse": "mcp_adapter:patch",
    "mcp.client.websocket": "mcp_adapter:patch",
}

_installed: list[bool] = []


def install() -> None:
    """Attach every registered adapter to its library when (if ever) it is imported (once per process)."""
    if _installed:
        return
    _installed.append(True)
    for library, target in ADAPTERS.items():
        when_imported(library, _patcher(target))


def _patcher(target: str) -> Any:
    file, _, function = target.partition(":")

    def patch(module: object) -> None:
        getattr(importlib.import_module(f"{__name__}.{file}"), function)(module)

    return patch
