"""Offline by construction: during a replay, the program's outbound connections fail with a clear error.

Internet sockets (IPv4/IPv6) may not connect and host names other than localhost may not be
resolved; the error names the host and port and says the call is not in the capture. Unix
sockets (local IPC) and wop's own addresses (its channel over TCP, the --proxy) stay open. Each
blocked attempt is also handed to `on_blocked(host, port, site)` — site: the first frame outside
the standard library that made it — so the replay reports it as a divergence of its own.
"""

import socket
from typing import Any, Callable, Collection

from openwop_cli.runtime.callsite import opening_site

_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "", None})


class NetworkBlocked(ConnectionRefusedError):
    """A connection attempt during replay: it would reach the network, and its answer is not in the capture."""


def block_network(allowed: Collection[tuple[str, int]] = (),
                  on_blocked: Callable[[str, Any, dict[str, Any] | None], None] | None = None) -> Callable[[], None]:
    """Patch socket connect and name resolution (allowed: wop's own addresses); returns the undo."""
    real_connect, real_connect_ex, real_getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo
    allowed = frozenset(allowed)

    def blocked(host: Any, port: Any, depth: int) -> NetworkBlocked:
        """depth: frames from here up to the patched function (its caller opened the connection)."""
        if on_blocked is not None:
            on_blocked(host, port, opening_site(depth + 1))
        return NetworkBlocked(_message(host, port))

    def refuse(sock: Any, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and tuple(address[:2]) not in allowed:
            raise blocked(address[0], address[1], 2)

    def connect(sock: Any, address: Any) -> Any:
        refuse(sock, address)
        return real_connect(sock, address)

    def connect_ex(sock: Any, address: Any) -> Any:
        refuse(sock, address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in _LOCAL_NAMES and not _is_numeric(name):
            raise blocked(name, port, 1)
        return real_getaddrinfo(host, port, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo

    def unblock() -> None:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo

    return unblock


def _message(host: Any, port: Any) -> str:
    return (f"wop replay: connection to {host}:{port} blocked: it is not in the capture "
            "(replay is offline; `wop fork` runs calls live)")


def _is_numeric(name: str) -> bool:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, name)
            return True
        except (OSError, ValueError):
            continue
    return False
