"""Pool tasks: which task a multiprocessing worker is running, so the values it reads belong to the task.

A multiprocessing.Pool (or ThreadPool), a ProcessPoolExecutor or a ThreadPoolExecutor hands each
task to whichever worker is free, so which worker runs which task changes from run to run, while
the tasks themselves are numbered by the parent in the order the program submits them. While a
worker runs one, its events name it in `origin.poolTask` — `pool JOB.INDEX` (a Pool's job and
chunk), `executor NUMBER.WORK_ID` or `threads NUMBER.CALL` — and a replay serves a task's clock,
uuid and random values, and its tool and LLM calls, to whichever worker runs it (replay.ambient,
replay.engine).

The worker function is wrapped, not rewritten: the wrapper keeps its module and name, so a spawned
or forkserver worker, which is handed its target by name, finds it, and its task queue is wrapped
in one that notes the task each `get` returns (in the worker's thread).
"""

import functools
import itertools
from typing import Any, Callable

from openwop_cli.runtime import ambient
from openwop_cli.runtime.session import current_pool_task, set_pool_task

_WORK_ID_BITS = 32
_executors = itertools.count(1)  # 0: an executor made before wop was installed


def patch_pool(module: Any) -> None:
    """multiprocessing.pool.worker: its tasks are (job, index, function, args, kwargs)."""
    _note_tasks(module, "worker", _pool_task)


def patch_executor(module: Any) -> None:
    """concurrent.futures.process._process_worker: its tasks are _CallItems with a work_id. Each executor counts
    its work ids from 0, so each one created is given its own range of them: a program that makes a new executor
    for every batch has its batches' tasks told apart."""
    _note_tasks(module, "_process_worker", _executor_task)
    init = module.ProcessPoolExecutor.__init__

    @functools.wraps(init)
    def numbering_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._queue_count = next(_executors) << _WORK_ID_BITS

    ambient.replace(module.ProcessPoolExecutor, "__init__", numbering_init)


def patch_thread_executor(module: Any) -> None:
    """concurrent.futures.thread.ThreadPoolExecutor (asyncio's run_in_executor and to_thread included): each call
    submitted is a task, `threads N.K` — the executor's number and the call's in submit order — while it runs."""
    submit = module.ThreadPoolExecutor.submit
    numbers = itertools.count(1)

    @functools.wraps(submit)
    def naming_submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        calls = self.__dict__.get("_wop_calls")
        if calls is None:
            calls = self._wop_calls = (next(numbers), itertools.count())
        return submit(self, _as_task(fn, f"threads {calls[0]}.{next(calls[1])}"), *args, **kwargs)

    ambient.replace(module.ThreadPoolExecutor, "submit", naming_submit)


def _as_task(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """fn, run as the task `name` in whichever thread runs it."""

    @functools.wraps(fn)
    def task(*args: Any, **kwargs: Any) -> Any:
        outer = current_pool_task()
        set_pool_task(name)
        try:
            return fn(*args, **kwargs)
        finally:
            set_pool_task(outer)

    return task


def _note_tasks(module: Any, name: str, task_name: Callable[[Any], str | None]) -> None:
    worker = getattr(module, name)

    @functools.wraps(worker)
    def noting_worker(tasks: Any, *args: Any, **kwargs: Any) -> Any:
        return worker(_Tasks(tasks, task_name), *args, **kwargs)

    ambient.replace(module, name, noting_worker, by_name=True)


class _Tasks:
    """A worker's task queue that notes the task each `get` hands out (None: the worker is told to stop)."""

    __slots__ = ("_queue", "_task_name")

    def __init__(self, queue: Any, task_name: Callable[[Any], str | None]) -> None:
        self._queue = queue
        self._task_name = task_name

    def get(self, *args: Any, **kwargs: Any) -> Any:
        task = self._queue.get(*args, **kwargs)
        set_pool_task(self._task_name(task))
        return task

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)


def _pool_task(task: Any) -> str | None:
    return f"pool {task[0]}.{task[1]}" if type(task) is tuple and len(task) == 5 else None


def _executor_task(task: Any) -> str | None:
    work_id = getattr(task, "work_id", None)
    if type(work_id) is not int:
        return None
    executor, work = divmod(work_id, 1 << _WORK_ID_BITS)
    return f"executor {executor}.{work}"
