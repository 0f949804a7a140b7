"""What the child bootstrap installs in a Python process started by `wop capture`.

The session connects to the parent now, so even a program that never imports openwop_cli is on
record (run start, its processes, the modules it imported).
"""

from openwop_cli.runtime.session import current


def install() -> None:
    """Start this process's session from the environment."""
    current()
