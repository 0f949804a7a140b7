"""Which multiprocessing.Process this process is, told the same way in every run.

A Process is numbered by its parent in the order the program starts them: its `_identity` is (2,)
for the second Process the main process started, (2, 1) for that one's first. Its pid, and the
order its siblings reach wop, change from run to run, and spawned siblings share their argv; so a
capture notes each recorded process's identity (the channel's `mpIdentity` message) and a replay
pairs today's processes with the recorded ones by it.
"""

import functools
import os
from typing import Any

_started: list[Any] = [None]  # (pid, identity) of the Process that began running in this process


def note_started_processes(module: Any) -> None:
    """multiprocessing.process: note the identity of each Process as it begins running (whatever the start method;
    a process forked by other means keeps its parent's Process object, so the pid says whose it is)."""
    bootstrap = module.BaseProcess._bootstrap

    @functools.wraps(bootstrap)
    def noting_bootstrap(self: Any, *args: Any, **kwargs: Any) -> Any:
        _started[0] = (os.getpid(), [number for number in self._identity if type(number) is int])
        return bootstrap(self, *args, **kwargs)

    module.BaseProcess._bootstrap = noting_bootstrap


def identity() -> list[int] | None:
    """This process's multiprocessing identity, or None when it was not started as a multiprocessing.Process."""
    started = _started[0]
    return started[1] if started is not None and started[0] == os.getpid() else None
