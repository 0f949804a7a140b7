"""Stable names for threads and asyncio tasks: who made each one and in what order, never a process-wide count.

Python names threads `Thread-7 (worker)` and asyncio tasks `Task-121` by counting every one the process made,
libraries' included, so a run that makes one task less (a replay, which does no real I/O) renames all the rest.
A recorded value belongs to the thread or task that read it, so its name must be the same from run to run:

- a thread is named by the thread that started it and its place among the threads of the same target that
  thread started: `MainThread/worker#2` is the second `worker` thread the main thread started;
- an asyncio task by the task that created it and its place among that task's tasks of the same coroutine:
  `main#1/fetch#3`; a task created outside any task (asyncio.run's) is counted in its thread, or in the pool task
  running (runtime.pooltasks), whose name the origin carries beside it.

Counting per target or coroutine keeps a library's own threads and tasks, as many as its I/O makes, from
shifting the program's. A thread or task made while a recorded call is open in the maker (a tool's body, an HTTP
request being sent) belongs to that call, which a replay serves without running: it is not counted (`~target`).
"""

import threading
import weakref
from typing import Any

_task_names: Any = weakref.WeakKeyDictionary()  # asyncio task → its stable name
_task_children: Any = weakref.WeakKeyDictionary()  # asyncio task → {coroutine name: tasks of it created}
_thread_tasks = threading.local()  # `counts`: {coroutine name: top-level tasks of it this thread created}


def thread_name(thread: threading.Thread) -> str:
    """The stable name of a thread (origin.thread): its lineage, or Python's name for one wop did not see start
    (the main thread, threads started before wop was installed)."""
    return thread.__dict__.get("_wop_lineage") or thread._name  # type: ignore[attr-defined]


def name_new_thread(thread: threading.Thread, counted: bool) -> None:
    """Give a thread about to start (from the current thread) its stable name."""
    parent = threading.current_thread()
    target = getattr(thread, "_target", None)
    kind = _callable_name(target) if target is not None else type(thread).__qualname__
    if not counted:
        thread._wop_lineage = f"{thread_name(parent)}/~{kind}"  # type: ignore[attr-defined]
        return
    children = parent.__dict__.setdefault("_wop_children", {})
    place = children[kind] = children.get(kind, 0) + 1
    thread._wop_lineage = f"{thread_name(parent)}/{kind}#{place}"  # type: ignore[attr-defined]


def task_name(task: Any) -> str:
    """The stable name of an asyncio task (origin.task): its lineage, or asyncio's name for one wop did not see made."""
    return _task_names.get(task) or task.get_name()


def name_new_task(task: Any, parent: Any, coro: Any, counted: bool, scope: dict[str, int] | None = None) -> None:
    """Give a task just created its stable name. parent: the task running where it was created (None at the top);
    scope: the counts of top-level tasks to number it among (a pool task's), else the current thread's."""
    kind = _callable_name(coro)
    above = _task_names.get(parent) if parent is not None else None
    prefix = f"{above}/" if above is not None else ""
    if not counted:
        _task_names[task] = f"{prefix}~{kind}"
        return
    if above is not None:
        counts = _task_children.get(parent)
        if counts is None:
            counts = _task_children[parent] = {}
    elif scope is not None:
        counts = scope
    else:
        counts = _thread_tasks.__dict__.setdefault("counts", {})
    place = counts[kind] = counts.get(kind, 0) + 1
    _task_names[task] = f"{prefix}{kind}#{place}"


def _callable_name(what: Any) -> str:
    """A function's, coroutine's or callable object's qualified name (its class's for anything else)."""
    name = getattr(what, "__qualname__", None)
    if type(name) is not str:
        name = type(what).__qualname__
    return name.replace("<locals>.", "")


class _PoolTask(threading.local):
    """The pool task a thread runs: a worker thread's, not a context's (asyncio.to_thread runs a call in the caller's
    context). None by default, as a class attribute: asking a thread-local for an attribute it lacks raises inside,
    4k instructions on every recorded request."""

    name: str | None = None


running_pool_task = _PoolTask()


def set_pool_task(name: str | None) -> None:
    """Note the pool task this thread runs from now on (runtime.pooltasks): `origin.poolTask`."""
    running_pool_task.name = name


def current_pool_task() -> str | None:
    """The pool task this thread runs (None outside one)."""
    return running_pool_task.name
