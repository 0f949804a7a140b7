"""What the child bootstrap installs in a Python process started by `wop capture`.

The session connects to the parent now, so even a program that never imports openwop_cli is on
record (run start, its processes, the modules it imported). The HTTP adapters attach to their
libraries as those are imported, and connections that bypass every adapter are reported.
"""

import os

from openwop_cli.runtime import adapters, connections
from openwop_cli.runtime.channel import ENV_ADDRESS, tcp_address
from openwop_cli.runtime.session import current


def install() -> None:
    """Start this process's session from the environment, with the adapters and the connection watcher."""
    adapters.install()
    if current() is not None:
        channel = tcp_address(os.environ.get(ENV_ADDRESS, ""))
        connections.watch((channel,) if channel else ())
