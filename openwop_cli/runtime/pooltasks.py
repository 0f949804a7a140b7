"""Pool tasks: which task a worker is running, so the values it reads and the calls it makes belong to the task.

A multiprocessing.Pool (or ThreadPool), a ProcessPoolExecutor, a ThreadPoolExecutor or a queue.Queue
that hand-rolled worker threads pull from hands each task to whichever worker is free, so which
worker runs which task changes from run to run, while the tasks themselves are numbered by the
process that submits them, in submit order. While a worker runs one, its events name it in
`origin.poolTask` — `pool JOB.INDEX` (a Pool's job and chunk), `executor NUMBER.WORK_ID`,
`threadpool NUMBER.JOB.INDEX` (a ThreadPool's), `threads NUMBER.CALL` (a ThreadPoolExecutor's) or
`queue NUMBER.ITEM` (a queue's item, put by the program's own code) — and a replay serves a task's
clock, uuid and random values, and its tool and LLM calls, to whichever worker runs it
(replay.ambient, replay.engine).

A process pool's task may run in any of its worker processes; its name says which process numbered
it (`process 2/pool 0.1`: a Pool of the second multiprocessing.Process the program started) unless
that is the program's main process. A thread pool's task runs in the process that submitted it: its
name is that process's (`threads …` and `threadpool …` are local to a process), or, submitted from
within a pool task, that task's (`pool 0.1/threads 1.0`: thread pools numbered per task), so it moves
with the task. Thread pool tasks are counted per submitting function, so a library's own submissions,
as many as a race decides, leave the program's numbered as they were, and per submitting asyncio task or
thread (`… by LINEAGE`), so tasks racing to submit number theirs alike in every run; and a call submitted while a
recorded call is open (inside a tool's body) is part of that call, not a task: a replay, serving
the call, does not make it, and numbering it would shift the program's tasks.

A process forked while a process pool's task runs (os.fork in the task, or a Process a library starts by fork) runs
a task of its own, the task's K-th fork, `pool 0.1/fork K`, and a multiprocessing.Process the task's own code starts,
by any start method, the task's K-th Process, `pool 0.1/process K`, each in the place that task names
(processname.named_place): its calls are ordered apart from its worker's, which cannot see them served, and a replay
pairs it with the recorded child of the same task, whichever worker runs the task today. Likewise a thread the code
of any pool task starts runs the task's K-th thread, `pool 0.1/thread K`: its calls are ordered apart from the task's
own thread's and move with the task (numbered by its worker's thread, they would follow the worker).

The worker function is wrapped, not rewritten: the wrapper keeps its module and name, so a spawned
or forkserver worker, which is handed its target by name, finds it, and its task queue is wrapped
in one that notes the task each `get` returns (in the worker's thread).
"""

import collections
import functools
import itertools
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from openwop_cli.format.events import moves_between_processes
from openwop_cli.runtime import ambient
from openwop_cli.runtime.callsite import PROGRAM, opening_place, place
from openwop_cli.runtime.lineage import (
    current_pool_task,
    name_new_task,
    name_new_thread,
    set_pool_task,
    task_name,
    thread_name,
)
from openwop_cli.runtime.processname import identity, name_places_by
from openwop_cli.runtime.session import inside_boundary

_WORK_ID_BITS = 32
_executors = itertools.count(1)  # 0: an executor made before wop was installed
_numbering = threading.Lock()
# the pool task submitting (None: none) → the line submitting (_numbered) → the thread pools' count
_thread_executors: dict[str | None, dict[str | None, Iterator[int]]] = {}
_thread_pool_jobs: Any = weakref.WeakValueDictionary()  # a ThreadPool's job → its result (named when submitted)
_origin_calls: Any = weakref.WeakKeyDictionary()  # an asyncio task or thread submitting → its pools' count
_asyncio_tasks: dict[str, dict[str, int]] = {}  # a pool task → its top-level asyncio tasks, counted by coroutine
# a pool task → the kind of child (fork, process, thread) → the count of those it made
_task_children: dict[str, dict[str, Iterator[int]]] = {}


def patch_pool(module: Any) -> None:
    """multiprocessing.pool.worker: its tasks are (job, index, function, args, kwargs). A process Pool's job is
    numbered by the process (multiprocessing's own count); a ThreadPool's, `threadpool N.J`, like an executor's."""
    _note_tasks(module, "worker", "pool", _pool_task)
    for result in (module.ApplyResult, module.IMapIterator):  # a job: apply_async; map and starmap; imap
        _name_thread_pool_jobs(module, result)


def _name_thread_pool_jobs(module: Any, result: Any) -> None:
    init = result.__init__

    @functools.wraps(init)
    def naming_init(self: Any, pool: Any, *args: Any, **kwargs: Any) -> None:
        init(self, pool, *args, **kwargs)
        if isinstance(pool, module.ThreadPool) and not inside_boundary():
            self._wop_task = _numbered(pool, "threadpool")
            _thread_pool_jobs[self._job] = self

    ambient.replace(result, "__init__", naming_init)


def patch_executor(module: Any) -> None:
    """concurrent.futures.process._process_worker: its tasks are _CallItems with a work_id. Each executor counts
    its work ids from 0, so each one created is given its own range of them: a program that makes a new executor
    for every batch has its batches' tasks told apart."""
    _note_tasks(module, "_process_worker", "executor", _executor_task)
    init = module.ProcessPoolExecutor.__init__

    @functools.wraps(init)
    def numbering_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._queue_count = next(_executors) << _WORK_ID_BITS

    ambient.replace(module.ProcessPoolExecutor, "__init__", numbering_init)


def patch_thread_executor(module: Any) -> None:
    """concurrent.futures.thread.ThreadPoolExecutor (asyncio's run_in_executor and to_thread included): each call
    submitted is a task, `threads N.K from FUNCTION` (see _numbered), while it runs."""
    submit = module.ThreadPoolExecutor.submit

    @functools.wraps(submit)
    def naming_submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if inside_boundary():  # part of a recorded call (a tool's body): a replay does not make it
            return submit(self, fn, *args, **kwargs)
        return submit(self, _as_task(fn, _numbered(self, "threads")), *args, **kwargs)

    ambient.replace(module.ThreadPoolExecutor, "submit", naming_submit)


def patch_queue(module: Any) -> None:
    """queue.Queue and every kind made from it (LifoQueue, PriorityQueue, a program's subclass with its own _put and
    _get): an item the program's own code puts is a task, `queue N.K from FUNCTION` (see _numbered), which the thread
    other than the main one that gets it, in its own code, runs until its next get. Hand-rolled workers pulling from
    a shared queue take the items in an order a race decides; named so, each item's clock, uuid and random values
    and its calls are served to whichever worker takes it."""
    init = module.Queue.__init__
    here = module.__file__

    @functools.wraps(init)
    def tracking_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _name_queued_items(self, here)

    ambient.replace(module.Queue, "__init__", tracking_init)


def _name_queued_items(queue: Any, here: str) -> None:
    """Wrap this queue's _put and _get (called with its lock held, by put, get and their _nowait forms in the queue
    module, here) to keep each item's name by the item's identity: a priority queue or a subclass takes its items
    in its own order. Names left by items the queue dropped (a subclass that drops duplicates, a program that
    clears queue.queue) are forgotten whenever the queue is empty."""
    put, get, size = queue._put, queue._get, queue._qsize
    names: dict[int, collections.deque] = {}

    def naming_put(item: Any) -> None:
        if names and not size():
            names.clear()
        put(item)
        by_program = _placed(_outside(sys._getframe(1), here)) == PROGRAM and not inside_boundary()
        name = _numbered(queue, "queue", 3) if by_program else None
        names.setdefault(id(item), collections.deque()).append(name)

    def task_setting_get() -> Any:
        item = get()
        waiting = names.get(id(item))
        name = waiting.popleft() if waiting else None
        if not waiting:
            names.pop(id(item), None)
            if names and not size():
                names.clear()
        if (name is not None and threading.current_thread() is not threading.main_thread()
                and _placed(_outside(sys._getframe(1), here)) == PROGRAM):
            _start_task(name)
        return item

    queue._put, queue._get = naming_put, task_setting_get


def _outside(frame: Any, filename: str) -> Any:
    """The first of frame and its callers not in filename (put_nowait calls put, which calls _put)."""
    while frame.f_code.co_filename == filename:
        frame = frame.f_back
    return frame


def patch_threads(module: Any) -> None:
    """threading.Thread: a thread the program's own code starts while a pool task runs runs the task's next thread,
    `TASK/thread K`, from its start (see the module's docstring); any other is named by its lineage
    (runtime.lineage). A thread started in a recorded call (a tool's body) is part of that call: a replay, serving
    the call, does not start it."""
    start = module.Thread.start

    @functools.wraps(start)
    def naming_start(self: Any) -> None:
        task = current_pool_task()
        in_call = inside_boundary()
        if task is not None and _placed(sys._getframe(1)) == PROGRAM and not in_call:
            self.run = _as_task(self.run, _next_child(task, "thread"))
        else:
            name_new_thread(self, counted=not in_call)
        start(self)

    ambient.replace(module.Thread, "start", naming_start)


def patch_event_loop(module: Any) -> None:
    """asyncio.base_events.BaseEventLoop.create_task: every task is named by its lineage (runtime.lineage), not by
    its name, Task-N, which counts the process's tasks: a replay, which does no real I/O, makes fewer of them, and
    threads running event loops side by side make them in any order. A task made at the top while a pool task runs
    is numbered among that pool task's."""
    create_task = module.BaseEventLoop.create_task
    current_task = sys.modules["asyncio.tasks"].current_task

    @functools.wraps(create_task)
    def numbering_create_task(self: Any, coro: Any, *args: Any, **kwargs: Any) -> Any:
        task = create_task(self, coro, *args, **kwargs)
        within = current_pool_task()
        scope = None
        if within is not None:
            with _numbering:
                scope = _asyncio_tasks.setdefault(within, {})
        name_new_task(task, current_task(self), coro, not inside_boundary(), scope)
        return task

    ambient.replace(module.BaseEventLoop, "create_task", numbering_create_task)


def _placed(frame: Any) -> int:
    """The place (callsite.PROGRAM…) of a frame's code."""
    return place(frame.f_code.co_filename)[0]


def _start_task(name: str | None) -> None:
    """This thread runs the task name from now on (the task it ran is over)."""
    finished = current_pool_task()
    if finished is not None:
        _forget(finished)
    set_pool_task(name)


def _forget(task: str) -> None:
    """Drop the counts a pool task kept (it is over)."""
    _thread_executors.pop(task, None)
    _asyncio_tasks.pop(task, None)
    _task_children.pop(task, None)


def _child_place(kind: str) -> str | None:
    """The name of the place of the child process (kind: fork, process) this thread makes now, if it runs a process
    pool's task: `TASK/KIND K`, the task's K-th. None for the process's own, and for a Process the program's own code
    does not start (a pool's worker, numbered among its parent's Processes; frame 2: the caller of Process.start)."""
    task = current_pool_task()
    if task is None or not moves_between_processes(task):
        return None
    if kind == "process" and _placed(sys._getframe(2)) != PROGRAM:
        return None
    return _next_child(task, kind)


def _next_child(task: str, kind: str) -> str:
    """`TASK/KIND K`: the name of the K-th child of its kind the pool task has made."""
    with _numbering:
        count = _task_children.setdefault(task, {}).setdefault(kind, itertools.count(1))
    return f"{task}/{kind} {next(count)}"


def _numbered(pool: Any, kind: str, depth: int = 2) -> str:
    """`kind N.K` for the K-th call (or job) submitted to a thread pool from the pool task running here, N being the
    pool's number among those that task submitted to; under that task's name, so it moves with the task. Calls are
    counted per submitter, the first frame outside the stdlib (`kind N.K from FUNCTION`, nothing when there is none):
    a library's own calls (openai's platform lookup, made by as many requests as race to make it first) leave the
    program's numbered as they were. Outside a pool task, an asyncio task or a thread other than the main one counts
    the program's own (`… by LINEAGE`): tasks that race to submit (gathered tasks each calling run_in_executor)
    then number their calls alike in every run (a library's are still counted together: which task makes them first
    is the race). depth: as opening_site's, from the caller's frame."""
    within = current_pool_task()
    opened = opening_place(depth)
    submitter = None if opened is None else opened[1]["function"]  # its function: the same when its file is renamed
    by_program = opened is not None and opened[0] == PROGRAM
    submitting = None if within is not None or not by_program else _submitting_origin()
    key: tuple[Any, str | None]
    with _numbering:
        if submitting is None:
            counts, key = pool.__dict__.setdefault("_wop_calls", {}), (within, submitter)
            pools = _thread_executors.setdefault(within, {})
        else:
            counts, pools = _submitters_counts(pool, submitting[0])
            key = (None, submitter)
        calls = counts.get(key)
        if calls is None:
            calls = counts[key] = (next(pools.setdefault(submitter, itertools.count(1))), itertools.count())
        name = f"{kind} {calls[0]}.{next(calls[1])}" + ("" if submitter is None else f" from {submitter}")
    if submitting is not None:
        return f"{name} by {submitting[1]}"
    return name if within is None else f"{within}/{name}"


def _submitters_counts(pool: Any, owner: Any) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """(the calls pool has numbered for owner, an asyncio task or thread; owner's count of pools per submitting
    function), each held weakly by the other side: gone with the task, or with the pool (a server makes tasks for
    ever, and may make a pool per request)."""
    pools = _origin_calls.get(owner)
    if pools is None:
        pools = _origin_calls[owner] = {}
    origins = pool.__dict__.get("_wop_origins")
    if origins is None:
        origins = pool.__dict__["_wop_origins"] = weakref.WeakKeyDictionary()
    counts = origins.get(owner)
    if counts is None:
        counts = origins[owner] = {}
    return counts, pools


def _submitting_origin() -> tuple[Any, str] | None:
    """The asyncio task, else the thread, submitting, and its stable name (runtime.lineage); None for the main
    thread outside a task, and for a task or thread named in an order a race decides (`~`): their submissions are
    counted together, per submitting function."""
    thread = threading.current_thread()
    asyncio = sys.modules.get("asyncio")
    task = asyncio.current_task() if asyncio is not None and asyncio._get_running_loop() is not None else None
    if task is None and thread is threading.main_thread():
        return None
    name = thread_name(thread) if task is None else f"{thread_name(thread)} {task_name(task)}"
    return None if "~" in name else (thread if task is None else task, name)


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
            _forget(name)

    return task


def _note_tasks(module: Any, name: str, kind: str, task_number: Callable[[Any], str | None]) -> None:
    worker = getattr(module, name)

    @functools.wraps(worker)
    def noting_worker(tasks: Any, *args: Any, **kwargs: Any) -> Any:
        return worker(_Tasks(tasks, _task_naming(kind, task_number)), *args, **kwargs)

    ambient.replace(module, name, noting_worker, by_name=True)


def _task_naming(kind: str, task_number: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """How a worker names the tasks it gets: a ThreadPool's thread by the name its job got when submitted; a process
    pool's worker by the number its parent gave it, under the parent's name unless that is the program's main one."""
    if threading.current_thread() is not threading.main_thread():
        return _thread_pool_task
    parent = (identity() or [])[:-1]
    prefix = f"process {'.'.join(map(str, parent))}/{kind}" if parent else kind

    def name(task: Any) -> str | None:
        number = task_number(task)
        return None if number is None else f"{prefix} {number}"

    return name


class _Tasks:
    """A worker's task queue that notes the task each `get` hands out (None: the worker is told to stop)."""

    __slots__ = ("_queue", "_name")

    def __init__(self, queue: Any, name: Callable[[Any], str | None]) -> None:
        self._queue = queue
        self._name = name

    def get(self, *args: Any, **kwargs: Any) -> Any:
        task = self._queue.get(*args, **kwargs)
        _start_task(self._name(task))
        return task

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)


def _pool_task(task: Any) -> str | None:
    return f"{task[0]}.{task[1]}" if type(task) is tuple and len(task) == 5 else None


def _thread_pool_task(task: Any) -> str | None:
    job = _thread_pool_jobs.get(task[0]) if type(task) is tuple and len(task) == 5 else None
    return None if job is None else f"{job._wop_task}.{task[1]}"


def _executor_task(task: Any) -> str | None:
    work_id = getattr(task, "work_id", None)
    if type(work_id) is not int:
        return None
    executor, work = divmod(work_id, 1 << _WORK_ID_BITS)
    return f"{executor}.{work}"


name_places_by(_child_place)
