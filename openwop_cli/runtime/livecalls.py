"""Which threads and tasks are making a call a replay runs live (a fork past its branch point, --allow-tool): the
network guard lets their connections through. Apart from runtime.netguard so that the adapters that mark such calls
need not import the guard, which serves raw sockets through them."""

from contextvars import ContextVar
from typing import Any

LIVE = ContextVar("wop_live_call", default=False)


def live_call() -> Any:
    """Mark the calling thread/task as making a call the replay runs live, until `end_live_call(token)`."""
    return LIVE.set(True)


def end_live_call(token: Any) -> None:
    LIVE.reset(token)
