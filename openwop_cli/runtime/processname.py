"""Which multiprocessing.Process this process is, told the same way in every run.

A Process is numbered by its parent in the order the program starts them: its `_identity` is (2,)
for the second Process the main process started, (2, 1) for that one's first. Its pid, and the
order its siblings reach wop, change from run to run, and spawned siblings share their argv; so a
capture notes each recorded process's identity (the channel's `mpIdentity` message) and a replay
pairs today's processes with the recorded ones by it.

A spawned (or forkserver) process imports the program's main module before its Process object, and
so its identity, reaches it: a read at import would pair it by argv and order alone. So its parent
adds the identity to the preparation data it sends first, and the child takes it from there.
"""

import functools
import os
import threading
from typing import Any

_started: list[Any] = [None]  # (pid, identity) of the Process that began running in this process
_starting = threading.local()  # the identity of the Process this thread is starting
_PREPARATION_KEY = "wopIdentity"  # in a spawned child's preparation data (spawn.prepare ignores keys it does not use)


def note_started_processes(module: Any) -> None:
    """multiprocessing.process: note the identity of each Process as it begins running (whatever the start method;
    a process forked by other means keeps its parent's Process object, so the pid says whose it is)."""
    bootstrap = module.BaseProcess._bootstrap

    @functools.wraps(bootstrap)
    def noting_bootstrap(self: Any, *args: Any, **kwargs: Any) -> Any:
        _started[0] = (os.getpid(), [number for number in self._identity if type(number) is int])
        return bootstrap(self, *args, **kwargs)

    module.BaseProcess._bootstrap = noting_bootstrap
    start = module.BaseProcess.start

    @functools.wraps(start)
    def noting_start(self: Any) -> None:
        _starting.identity = list(self._identity)
        try:
            start(self)
        finally:
            _starting.identity = None

    module.BaseProcess.start = noting_start


def carry_identity(module: Any) -> None:
    """multiprocessing.spawn: a parent starting a Process adds its identity to the child's preparation data; the child
    notes it as it prepares, before it imports the main module."""
    preparation_data, prepare = module.get_preparation_data, module.prepare

    @functools.wraps(preparation_data)
    def data_with_identity(*args: Any, **kwargs: Any) -> Any:
        data = preparation_data(*args, **kwargs)
        starting = getattr(_starting, "identity", None)
        if starting is not None and isinstance(data, dict):
            data[_PREPARATION_KEY] = starting
        return data

    @functools.wraps(prepare)
    def noting_prepare(data: Any, *args: Any, **kwargs: Any) -> Any:
        told = data.get(_PREPARATION_KEY) if isinstance(data, dict) else None
        if isinstance(told, list) and all(type(number) is int for number in told):
            _started[0] = (os.getpid(), told)
        return prepare(data, *args, **kwargs)

    module.get_preparation_data, module.prepare = data_with_identity, noting_prepare


def identity() -> list[int] | None:
    """This process's multiprocessing identity, or None when it was not started as a multiprocessing.Process."""
    started = _started[0]
    return started[1] if started is not None and started[0] == os.getpid() else None
