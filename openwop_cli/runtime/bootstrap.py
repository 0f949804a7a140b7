"""What the child bootstrap installs in a Python process started by `wop capture`.

The session is set up now (it connects to the parent on its first message, at the latest at exit), so
even a program that never imports openwop_cli is on record (run start, its processes, the modules it
imported). The HTTP adapters attach to their
libraries as those are imported, connections that bypass every adapter and children wop cannot see are
reported (a Python child that lost the bootstrap gets it back), and the
clock, uuid and random reads of the program's code are recorded from its first line on (unless
WOP_AMBIENT=0). (A child started while its capture was still being set up has had its go by now: the
bootstrap waits for it before it calls `install`.)
"""

import os

from openwop_cli.runtime import adapters, ambient, children, connections, outputmarks, patching
from openwop_cli.runtime.session import current
from openwop_cli.wire.channel import ENV_ADDRESS, tcp_address


def install() -> None:
    """Start this process's session from the environment, with the adapters, the connection and child process
    watchers and its ambient values."""
    adapters.install()
    if current() is None:
        return
    channel = tcp_address(os.environ.get(ENV_ADDRESS, ""))
    connections.watch((channel,) if channel else ())
    children.watch()
    outputmarks.watch_listening()
    if not ambient.installed():
        patching.install(values=ambient.enabled())

