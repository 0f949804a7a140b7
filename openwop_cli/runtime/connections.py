"""Connections no adapter recorded: nothing a capture cannot serve goes by silently.

During a capture, `socket.socket.connect`/`connect_ex` are wrapped. A TCP connection opened while
no recorded boundary is open in the thread/task (an HTTP adapter, `wop.llm_call`, `@wop.tool`)
bypassed every adapter: a raw-socket client, a library wop does not patch. A blocking one is
watched for HTTP/1.1, whose exchanges adapters.raw_socket records (the last line); one that is not
HTTP, and any other, is named: the first one to each destination becomes a `nondeterministic` event
with source `network`, `unrecorded: true`, the host, port and the first frame outside the standard
library that opened it; the `wop capture` parent is told too (with the count at exit), so its last line
says what a replay will not be able to serve. Unix sockets (wop's own channel), wop's own
addresses (its channel over TCP, the --proxy) and loopback ports that the program's own processes listen on
(runtime.listeners: both ends are recorded) or nobody does (refused) are not the program's traffic.
"""

import atexit
import os
import socket
import threading
from typing import Any

from openwop_cli.runtime.session import UNRESOLVED, _inside_boundary, _state
from openwop_cli.wire.environ import ENV_PROXY

UNRECORDED_CONNECTION = "unrecordedConnection"  # the message to the parent
_STREAM = int(socket.SOCK_STREAM)
_INTERNET = (socket.AF_INET, socket.AF_INET6)
_socket_type = socket.socket.__mro__[1].__dict__["type"].__get__  # the C getter: an int, no enum conversion
_seen: dict[tuple[str, int], list[Any]] = {}
_lock = threading.Lock()
_installed: list[bool] = []


def watch(own_addresses: tuple[tuple[str, int], ...] = ()) -> None:
    """Wrap socket connect for the rest of this process (once); own_addresses are wop's, never reported."""
    if _installed:
        return
    _installed.append(True)
    ignored = frozenset(own_addresses) | proxy_address()
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def connect(sock: socket.socket, address: Any) -> Any:
        if type(address) is tuple and not _inside_boundary.get():  # the contextvar itself: one call less
            _note(sock, address, ignored)
        return real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> Any:
        if type(address) is tuple and not _inside_boundary.get():
            _note(sock, address, ignored)
        return real_connect_ex(sock, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    atexit.register(report_counts, _seen, UNRECORDED_CONNECTION)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_seen.clear)


def _note(sock: socket.socket, address: tuple, ignored: frozenset) -> None:
    """A connection outside every boundary: a blocking TCP one is watched for HTTP (adapters.raw_socket records its
    exchanges, or names it once it is not HTTP); any other is named now."""
    session = _state["session"]
    if session is None or session is UNRESOLVED or session.replayer is not None:
        return
    destination = (address[0], address[1])
    if destination in ignored or _socket_type(sock) != _STREAM or _own_loopback(*destination):
        return
    from openwop_cli.runtime.callsite import opening_site  # loaded on the first unrecorded connection

    site = opening_site(2)
    if site is None:
        return
    host, port = destination
    details = {"host": host, "port": port, "site": site}
    if sock.family in _INTERNET and sock.gettimeout() != 0.0:
        from openwop_cli.runtime.adapters import raw_socket

        raw_socket.watch(sock, session, host, port, lambda: note_unrecorded(session, details))
        return
    note_unrecorded(session, details)


def note_unrecorded(session: Any, details: dict[str, Any]) -> None:
    """Count a connection to details' host:port that no adapter recorded; record the first one to each destination
    (details: host, port and the site that opened it) and tell the `wop capture` parent."""
    destination = (details["host"], details["port"])
    with _lock:
        entry = _seen.get(destination)
        if entry is not None and entry[2] is session:
            entry[0] += 1
            return
        _seen[destination] = [1, details, session]  # per session: a later wop.capture in the process reports it again
    host, port = destination
    session.record("nondeterministic", {"source": "network", "key": f"{host}:{port}", "unrecorded": True,
                                        "value": details})
    tell_parent(session, UNRECORDED_CONNECTION, details, 1)


def _own_loopback(host: Any, port: Any) -> bool:
    """A loopback port the program's own processes listen on (both ends recorded), or nobody does (refused, as it
    will be in a replay): not traffic the capture misses."""
    from openwop_cli.runtime.listeners import OUTSIDE, is_loopback, listener

    return is_loopback(host) and listener(port) != OUTSIDE


def tell_parent(session: Any, kind: str, details: dict[str, Any], count: int) -> None:
    """Tell the `wop capture` parent (message kind: unrecordedConnection, unrecordedProcess) what the capture misses,
    for its last line (a capture written in this process has the event: it is flushed)."""
    send = getattr(session.recorder, "send_message", None)
    if send is None:
        session.flush()
        return
    try:
        send({kind: {**details, "count": count}})
    except OSError:
        pass


def report_counts(seen: dict[Any, list[Any]], kind: str) -> None:
    """At exit: how many of each there were (seen: [count, details, session] each; the first was reported as it
    happened)."""
    for count, details, session in list(seen.values()):
        if count > 1:
            tell_parent(session, kind, details, count)


def proxy_address() -> frozenset[tuple[str, int]]:
    """The --proxy's address (WOP_PROXY=host:port): requests to it are recorded by the proxy."""
    host, _, port = os.environ.get(ENV_PROXY, "").rpartition(":")
    return frozenset({(host, int(port))}) if host and port.isdigit() else frozenset()


def describe(unrecorded: list[dict[str, Any]]) -> str:
    """One line for what no adapter recorded, as capture and replay say it: connections ({host, port, count?, site?})
    `2 connections to 127.0.0.1:8000 (opened by agent.py:12) were not recorded: …`, and child processes
    ({executable, argv, count?, site?}, runtime.children) `1 child process node (started by agent.py:9) …`."""
    connections = [entry for entry in unrecorded if "executable" not in entry]
    children = [entry for entry in unrecorded if "executable" in entry]
    sentences = []
    if connections:
        sentences.append(_sentence(connections, "connection", lambda entry: f"to {entry.get('host')}:{entry.get('port')}",
                                   "opened", "replay cannot serve {them}; use --proxy"))
    if children:
        sentences.append(_sentence(children, "child process", lambda entry: str(entry.get("executable")), "started",
                                   "wop cannot see into {them} (a replay runs {them} for real)"))
    return "; ".join(sentences)


def _sentence(entries: list[dict[str, Any]], noun: str, name: Any, verb: str, consequence: str) -> str:
    """`2 connections to h:p (opened by f:l), … were not recorded: <consequence>` (`{them}`: it or them)."""
    nouns = noun + ("es" if noun.endswith("s") else "s")
    parts, single = [], len(entries) == 1
    for entry in entries:
        count = entry.get("count")
        single = single and count == 1
        site = entry.get("site")
        opener = f" ({verb} by {site.get('file')}:{site.get('line')})" if isinstance(site, dict) else ""
        amount = f"{count} {noun if count == 1 else nouns}" if isinstance(count, int) else nouns
        parts.append(f"{amount} {name(entry)}{opener}")
    verdict = "was not recorded" if single else "were not recorded"
    return f"{', '.join(parts)} {verdict}: {consequence.format(them='it' if single else 'them')}"
