"""What the child bootstrap installs in a Python process started by `wop capture`.

The session connects to the parent now, so even a program that never imports openwop_cli is on
record (run start, its processes, the modules it imported). The HTTP adapters attach to their
libraries as those are imported, connections that bypass every adapter are reported, and the
clock, uuid and random reads of the program's code are recorded from its first line on (unless
WOP_AMBIENT=0). A child started while its capture was still being set up (WOP_GATE) waits for the
parent's go before its program's first line.
"""

import os
import sys

from openwop_cli.runtime import adapters, ambient, connections
from openwop_cli.runtime.channel import ENV_ADDRESS, ENV_GATE, tcp_address
from openwop_cli.runtime.session import current


def install() -> None:
    """Start this process's session from the environment, with the adapters, the connection watcher and
    its ambient values."""
    gated = os.environ.pop(ENV_GATE, None) is not None  # popped: the processes this one starts do not wait
    adapters.install()
    session = current()
    if session is None:
        return
    if gated:
        wait_for_go(session.recorder)
    channel = tcp_address(os.environ.get(ENV_ADDRESS, ""))
    connections.watch((channel,) if channel else ())
    if ambient.enabled() and not ambient.installed():
        ambient.install()


def wait_for_go(sender: object) -> None:
    """Ask `wop capture` whether the capture is ready, and wait for its answer; without one (it failed or was
    killed) the program must not run unrecorded: this process ends."""
    try:
        sender.request({"ready": True})  # type: ignore[attr-defined]
    except (OSError, ValueError) as exc:
        print(f"wop: `wop capture` went away before the program started ({exc}); stopping", file=sys.stderr)
        os._exit(3)
