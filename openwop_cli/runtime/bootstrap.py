"""What the child bootstrap installs in a Python process started by `wop capture`.

The session connects to the parent now, so even a program that never imports openwop_cli is on
record (run start, its processes, the modules it imported); the clock, uuid and random reads of
its code are recorded from its first line on (unless WOP_AMBIENT=0).
"""

from openwop_cli.runtime import ambient
from openwop_cli.runtime.session import current


def install() -> None:
    """Start this process's session from the environment, with its ambient values."""
    if current() is not None and ambient.enabled() and not ambient.installed():
        ambient.install()
