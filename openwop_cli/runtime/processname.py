"""Which process of the program this one is, told the same way in every run.

A process's identity is its place in the tree of processes the program starts, numbered by each
parent in start order: (2,) for the second multiprocessing.Process the main process started, (2, 1)
for that one's first, as multiprocessing numbers them. A process os.fork() made is numbered
negatively among its parent's forks: (-3,) for the main process's third, and (-3, 1) for the first
Process that one starts (which multiprocessing, continuing its parent's count, would number like
one of the main process's). A process forked, or a Process the program's own code starts, while its
parent's thread runs a process pool's task has a place named by that task instead (runtime.pooltasks), and
runs the task of that name: its worker, and so the worker's forks and Processes, change from run to run.
Its pid, and the order its siblings reach wop, change from run to run,
and siblings share their argv; so a capture notes each recorded process's identity (the channel's
`mpIdentity` message) and a replay pairs today's processes with the recorded ones by it.

A spawned (or forkserver) process imports the program's main module before its Process object
reaches it: a read at import would pair it by argv and order alone. So its parent adds the
identity, and the name of a named place, to the preparation data it sends first, and the child takes
them from there.
"""

import functools
import os
import threading
from collections.abc import Callable
from typing import Any

_mine: list[Any] = [None]  # (pid, identity) of this process, once known
# how many times this process forked; the identity of the child of the fork under way, and the name of its place
_forks: list[Any] = [0, None, None]
_place_name: list[Callable[[str], str | None]] = [lambda kind: None]  # names a child's place instead (name_places_by)
_starting = threading.local()  # identity, place: the identity of the Process this thread is starting, its place's name
_identified: list[Callable[[], None]] = []  # called once a Process's identity is known (when_identified)
_started: list[Callable[[list[int], Any], None]] = []  # called as a Process is started (when_started)
# in a spawned child's preparation data (spawn.prepare ignores keys it does not use)
_PREPARATION_KEY, _PLACE_KEY = "wopIdentity", "wopPlace"


def identity() -> list[int] | None:
    """This process's identity, or None for a process the program did not start as a Process or by a fork (the main
    one, one started by subprocess)."""
    mine = _mine[0]
    return mine[1] if mine is not None and mine[0] == os.getpid() else None


def when_identified(callback: Callable[[], None]) -> None:
    """Call callback in a multiprocessing.Process as soon as its identity is known: before a spawned one imports the
    main module, as a forked one begins running (the session says so to `wop` then: a process killed while still
    silent, a terminated pool's worker, is then known to have been there and to have been killed)."""
    _identified.append(callback)


def when_started(callback: Callable[[list[int], Any], None]) -> None:
    """Call callback(identity, pid) in a process that has just started a multiprocessing.Process: a child killed
    before it could say anything itself is known from its parent."""
    _started.append(callback)


def _note_mine(told: list[int]) -> None:
    _mine[0] = (os.getpid(), told)
    _tell(_identified)


def _tell(callbacks: list[Callable[..., None]], *args: Any) -> None:
    """Call each of callbacks with args; one that fails is passed over."""
    for callback in callbacks:
        try:
            callback(*args)
        except Exception:  # the program runs on, whatever wop could not say
            pass


def note_forks() -> None:
    """Number this process's forks (os.fork, and a fork start method's Process starts), each child noting its own."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def name_places_by(name: Callable[[str], str | None]) -> None:
    """Ask name(kind), as each child is made (kind `fork`: a fork; `process`: a Process started), for the name of
    its place (a pool task's child: runtime.pooltasks); where it answers None, the child is numbered among this
    process's forks or Processes."""
    _place_name[0] = name


def named_place(name: str) -> list[int]:
    """The identity of a process whose place has a name that is the same in every run and unique in it: 0, which
    numbers no Process and no fork, then 48 bits of the name's digest (exact in any JSON reader)."""
    import hashlib

    return [0, int.from_bytes(hashlib.blake2b(name.encode(), digest_size=6).digest(), "big")]


def _run_named_place(name: str | None) -> None:
    """In a child whose place is named: its main thread runs the pool task of that name, so its calls are served to
    whichever process stands for it."""
    if name is not None:
        # imported here: `wop replay` imports this module (through the channel) before it starts the program
        from openwop_cli.runtime.lineage import set_pool_task

        set_pool_task(name)


def _before_fork() -> None:
    name = getattr(_starting, "place", None) or _place_name[0]("fork")  # a Process started by fork: its own place
    if name is None:
        _forks[0] += 1
        _forks[1:] = [*(identity() or []), -_forks[0]], None
    else:
        _forks[1:] = named_place(name), name


def _after_fork_in_child() -> None:
    _mine[0] = (os.getpid(), _forks[1])
    _forks[0] = 0
    _run_named_place(_forks[2])


def note_started_processes(module: Any) -> None:
    """multiprocessing.process: a Process's identity is its parent's and its number among the Processes its parent
    started; it is noted as the Process begins running (a fork start method's child, started by this very thread,
    finds it in _starting)."""
    bootstrap, start = module.BaseProcess._bootstrap, module.BaseProcess.start

    @functools.wraps(start)
    def noting_start(self: Any) -> None:
        _starting.place = place = _place_name[0]("process")
        _starting.identity = told = [*(identity() or []), self._identity[-1]] if place is None else named_place(place)
        try:
            start(self)
        finally:
            _starting.identity = _starting.place = None
        _tell(_started, told, self.pid)

    @functools.wraps(bootstrap)
    def noting_bootstrap(self: Any, *args: Any, **kwargs: Any) -> Any:
        told = getattr(_starting, "identity", None)
        if told is not None:
            _note_mine(told)
        elif identity() is None:  # started by a parent wop does not run in
            _note_mine([number for number in self._identity if type(number) is int])
        return bootstrap(self, *args, **kwargs)

    module.BaseProcess.start, module.BaseProcess._bootstrap = noting_start, noting_bootstrap


def carry_identity(module: Any) -> None:
    """multiprocessing.spawn: a parent starting a Process adds its identity, and the name of a named place, to the
    child's preparation data; the child notes them as it prepares, before it imports the main module."""
    preparation_data, prepare = module.get_preparation_data, module.prepare

    @functools.wraps(preparation_data)
    def data_with_identity(*args: Any, **kwargs: Any) -> Any:
        data = preparation_data(*args, **kwargs)
        starting = getattr(_starting, "identity", None)
        if starting is not None and isinstance(data, dict):
            data[_PREPARATION_KEY] = starting
            if _starting.place is not None:
                data[_PLACE_KEY] = _starting.place
        return data

    @functools.wraps(prepare)
    def noting_prepare(data: Any, *args: Any, **kwargs: Any) -> Any:
        told, place = (data.get(_PREPARATION_KEY), data.get(_PLACE_KEY)) if isinstance(data, dict) else (None, None)
        if isinstance(told, list) and all(type(number) is int for number in told):
            _note_mine(told)
            _run_named_place(place if isinstance(place, str) else None)
        return prepare(data, *args, **kwargs)

    module.get_preparation_data, module.prepare = data_with_identity, noting_prepare
