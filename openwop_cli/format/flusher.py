"""Bounded latency for buffered writers: one daemon thread per process flushes each buffer at most
FLUSH_SECONDS after its first unwritten item arrived.

The capture sink and the channel sender buffer events so a small event costs a list append. A
writer calls `flush_later(self)` when its buffer goes from empty to non-empty (once per batch, not
per event); this thread calls its `flush()` when the time is up, so a `kill -9` loses at most that
window and no write lands on the recorded program's thread. Writers are held weakly: one that is
gone is skipped. Only what the recorded program has already imported is used (threading, deque).
"""

import os
import threading
import time
import weakref
from collections import deque
from typing import Any

FLUSH_SECONDS = 0.2

_state: dict[str, Any] = {"due": None, "wake": None, "lock": threading.Lock()}


def flush_later(writer: Any) -> None:
    """Have writer.flush() called FLUSH_SECONDS from now on the flusher thread."""
    if _state["due"] is None:
        _start()
    _state["due"].append((time.monotonic() + FLUSH_SECONDS, weakref.ref(writer)))
    _state["wake"].set()


def _start() -> None:
    with _state["lock"]:
        if _state["due"] is None:
            due: deque[tuple[float, Any]] = deque()
            wake = threading.Event()
            threading.Thread(target=_run, args=(due, wake), name="wop-flusher", daemon=True).start()
            _state["wake"] = wake
            _state["due"] = due  # last: a thread that sees it may use wake


def _run(due: "deque[tuple[float, Any]]", wake: threading.Event) -> None:
    while True:
        wake.wait()
        wake.clear()
        while due:  # in the order they were asked for, so each deadline comes no later than the one before
            deadline, reference = due.popleft()
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            writer = reference()
            if writer is not None:
                try:
                    writer.flush()
                except Exception:  # a writer reports its own I/O trouble; this thread must outlive any of it
                    pass


def _after_fork_in_child() -> None:
    _state.update(due=None, wake=None, lock=threading.Lock())  # the thread did not come along: start another


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
