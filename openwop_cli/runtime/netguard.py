"""Offline by construction: during a replay, the program's outbound connections fail with a clear error.

Internet sockets (IPv4/IPv6) may not connect and host names other than localhost may not be
resolved; the error names the host and port and says the call is not in the capture. Unix
sockets (local IPC) and wop's own addresses (its channel over TCP, the --proxy) stay open. Each
blocked attempt is also handed to `on_blocked(host, port, site)` — site: the first frame outside
the standard library that made it — so the replay reports it as a divergence of its own. A call the
replay lets run live (an --allow-tool http request, one an imported trace does not hold) connects
inside `live_call()`.

With `may_serve(host, port)` (a replay of a capture whose raw-socket HTTP the socket recorder kept), a
blocking TCP connection it allows is not refused but answered from the capture (adapters.raw_socket.serve),
and a host name resolves to a stand-in address (in 192.0.2.0/24, which routes nowhere) so such a
client gets as far as its connection; refused ones are reported by that name.

A loopback port one of the program's own processes listens on is open: both ends are replayed (an
MCP or HTTP server the program starts itself, and the probe that waits for it). So is one nobody
listens on, unless the capture names it as a connection it did not record: the kernel refuses it,
as it refused it in the capture. Once a strict replay has stopped (`stopped()`), a program that
tries the network again — a retry loop swallowing the refusal — is ended then and there, not left
to spin until wop's grace period runs out.
"""

import os
import socket
import sys
from collections.abc import Callable, Collection
from typing import Any

from openwop_cli.runtime.callsite import opening_site
from openwop_cli.runtime.listeners import NOBODY, TREE, is_loopback, listener
from openwop_cli.runtime.livecalls import LIVE
from openwop_cli.runtime.outputmarks import flush_standard_streams

_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "", None})
_STAND_INS = 254  # host names a replay resolves to stand-in addresses (192.0.2.1…254); later ones are refused


class NetworkBlocked(ConnectionRefusedError):
    """A connection attempt during replay: it would reach the network, and its answer is not in the capture."""


def block_network(allowed: Collection[tuple[str, int]] = (),
                  on_blocked: Callable[[str, Any, dict[str, Any] | None], None] | None = None,
                  may_serve: Callable[[str, int], bool] | None = None, *,
                  stopped: Callable[[], bool] = lambda: False,
                  unrecorded_in_capture: Callable[[str], bool] = lambda destination: True) -> Callable[[], None]:
    """Patch socket connect and name resolution (allowed: wop's own addresses); returns the undo.

    stopped: whether a strict replay has stopped the program; unrecorded_in_capture("host:port"): whether the capture
    names that destination as a connection it did not record."""
    real_connect, real_connect_ex, real_getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo
    allowed = frozenset(allowed)
    stand_ins: dict[str, str] = {}  # a stand-in address -> the host name it stands for

    def report(host: Any, port: Any, site: dict[str, Any] | None) -> NetworkBlocked:
        host = stand_ins.get(host, host)
        if stopped():
            _end_program(host, port)
        if on_blocked is not None:
            on_blocked(host, port, site)
        return NetworkBlocked(_message(host, port))

    def blocked(host: Any, port: Any, depth: int) -> NetworkBlocked:
        """depth: frames from here up to the patched function (its caller opened the connection)."""
        return report(host, port, opening_site(depth + 1))

    def own_loopback(host: Any, port: Any) -> bool:
        if not is_loopback(host):
            return False
        found = listener(port)
        return found == TREE or (found == NOBODY and not unrecorded_in_capture(f"{host}:{port}"))

    def refuse(sock: Any, address: Any) -> bool:
        """False to connect, True when the capture answers the connection; raises for a refused one."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or tuple(address[:2]) in allowed or LIVE.get():
            return False
        host, port = address[0], address[1]
        if (may_serve is not None and sock.type == socket.SOCK_STREAM and sock.gettimeout() != 0.0
                and may_serve(stand_ins.get(host, host), port)):
            from openwop_cli.runtime.adapters import raw_socket
            from openwop_cli.runtime.session import current

            site = opening_site(2)
            raw_socket.serve(sock, current(), stand_ins.get(host, host), port, lambda: report(host, port, site))
            return True
        if own_loopback(host, port):
            return False
        raise blocked(host, port, 2)

    def connect(sock: Any, address: Any) -> Any:
        if not refuse(sock, address):
            return real_connect(sock, address)
        return None

    def connect_ex(sock: Any, address: Any) -> Any:
        if not refuse(sock, address):
            return real_connect_ex(sock, address)
        return 0

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in _LOCAL_NAMES and not _is_numeric(name) and not LIVE.get():
            if may_serve is None or len(stand_ins) >= _STAND_INS:
                raise blocked(name, port, 1)
            address = next((stand_in for stand_in, known in stand_ins.items() if known == name), None)
            if address is None:
                address = f"192.0.2.{len(stand_ins) + 1}"
                stand_ins[address] = name
            number = port if isinstance(port, int) else socket.getservbyname(port) if port else 0
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, number))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo

    def unblock() -> None:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo

    return unblock


def _end_program(host: Any, port: Any) -> None:
    """The strict replay stopped the program and it tries the network again: end it now (its events and output go
    first; os._exit sends the queued events, see session.attach_channel)."""
    print(f"wop replay: the replay has stopped and the program tried the network again ({host}:{port}): ending it",
          file=sys.stderr)
    flush_standard_streams()
    os._exit(1)


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
