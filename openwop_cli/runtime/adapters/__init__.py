"""HTTP adapters: httpx, httpx2 and requests recorded and replayed at their transport.

`install()` arranges for each library to be patched right after it is first imported (or now, if
it already is), so programs that never import them pay nothing.
"""

from openwop_cli.runtime.imports import when_imported


_installed: list[bool] = []


def install() -> None:
    """Attach the adapters to httpx, httpx2 and requests when (if ever) they are imported (once per process)."""
    if _installed:
        return
    _installed.append(True)
    when_imported("httpx", _patch_httpx)
    when_imported("httpx2", _patch_httpx)
    when_imported("requests", _patch_requests)


def _patch_httpx(module: object) -> None:
    from openwop_cli.runtime.adapters import httpx_transport

    httpx_transport.patch(module)


def _patch_requests(module: object) -> None:
    from openwop_cli.runtime.adapters import requests_adapter

    requests_adapter.patch(module)
