"""Who listens on a loopback port: a process of the recorded program, one outside it, or nobody.

A connection from the program to a port one of its own processes listens on (an MCP or HTTP server
it started) has both ends recorded, and in a replay both ends replayed: it is not traffic the
capture misses, and a replay lets it through. Linux says who listens through /proc: the listening
sockets in /proc/net/tcp{,6} by inode, and the processes holding that inode below the `wop`
process (WOP_PARENT_PID). Elsewhere every listener counts as outside, as before.
"""

import os
from typing import Any

from openwop_cli.wire.environ import ENV_PARENT_PID

TREE, OUTSIDE, NOBODY = "tree", "outside", "nobody"
_LISTEN = "0A"
_ANY_ADDRESSES = frozenset({"00000000", "00000000000000000000000000000000"})
_LOOPBACK_NAMES = frozenset({"localhost", "0.0.0.0", "::"})
_tree_ports: set[int] = set()  # ports found to be the tree's: they stay so while it runs


def is_loopback(host: Any) -> bool:
    """True for 127.0.0.0/8, ::1, localhost (and the any-address, which connects to this machine)."""
    if not isinstance(host, str):
        return False
    return host in _LOOPBACK_NAMES or host.startswith("127.") or host in ("::1", "::ffff:127.0.0.1")


def listener(port: Any) -> str:
    """TREE when a process the recorded program started (or the program) listens on this loopback port, OUTSIDE when
    another does (or it cannot be told), NOBODY when nothing listens on it."""
    if not isinstance(port, int) or not os.path.isdir("/proc/net"):
        return OUTSIDE
    if port in _tree_ports:
        return TREE
    inodes = _listening_inodes(port)
    if not inodes:
        return NOBODY
    root = os.environ.get(ENV_PARENT_PID, "")
    if not root.isdigit() or not _held_below(int(root), inodes):
        return OUTSIDE
    _tree_ports.add(port)
    return TREE


def _listening_inodes(port: int, tables: tuple[str, ...] = ("/proc/net/tcp", "/proc/net/tcp6")) -> set[str]:
    """The inodes of the sockets listening on port at a loopback or any address (tables: /proc/net's)."""
    wanted = f"{port:04X}"
    inodes = set()
    for table in tables:
        try:
            with open(table) as lines:
                next(lines, None)
                for line in lines:
                    fields = line.split()
                    address, _, local_port = fields[1].partition(":")
                    if local_port == wanted and fields[3] == _LISTEN and (address in _ANY_ADDRESSES
                                                                          or _is_loopback_hex(address)):
                        inodes.add(fields[9])
        except (OSError, IndexError, UnicodeDecodeError):
            continue
    return inodes


def _is_loopback_hex(address: str) -> bool:
    """/proc/net's hex address (little-endian words) of 127.x.x.x, ::1 or ::ffff:127.x.x.x."""
    if len(address) == 8:
        return address.endswith("7F")
    return address == "00000000000000000000000001000000" or (
        address.startswith("0000000000000000FFFF0000") and address.endswith("7F"))


def _held_below(root: int, inodes: set[str]) -> bool:
    """True when a process below root (its descendants, not root itself: `wop`) holds one of the socket inodes."""
    targets = {f"socket:[{inode}]" for inode in inodes}
    for pid in _descendants(root):
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink(f"/proc/{pid}/fd/{name}") in targets:
                    return True
            except OSError:
                continue
    return False


def _descendants(root: int) -> list[int]:
    """The processes below root, from /proc/*/stat's parent pids."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, pending = [], list(children.get(root, ()))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found
