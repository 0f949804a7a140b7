"""Bounded latency for buffered writers: one daemon thread per process flushes each buffer at most
FLUSH_SECONDS after its first unwritten item arrived.

The capture sink and the channel sender buffer events so a small event costs a list append. A
writer calls `flush_later(self)` when its buffer goes from empty to non-empty (once per batch, not
per event); this thread calls its `flush()` when the time is up, so a `kill -9` loses at most that
window and no write lands on the recorded program's thread. Writers are held weakly: one that is
gone is skipped.
"""

import os
import queue
import threading
import time
import weakref
from typing import Any

FLUSH_SECONDS = 0.2

_state: dict[str, Any] = {"queue": None, "lock": threading.Lock()}


def flush_later(writer: Any) -> None:
    """Have writer.flush() called FLUSH_SECONDS from now on the flusher thread."""
    pending = _state["queue"]
    if pending is None:
        pending = _start()
    pending.put((time.monotonic() + FLUSH_SECONDS, weakref.ref(writer)))


def _start() -> "queue.SimpleQueue[tuple[float, Any]]":
    with _state["lock"]:
        if _state["queue"] is None:
            pending: queue.SimpleQueue[tuple[float, Any]] = queue.SimpleQueue()
            threading.Thread(target=_run, args=(pending,), name="wop-flusher", daemon=True).start()
            _state["queue"] = pending
        return _state["queue"]


def _run(pending: "queue.SimpleQueue[tuple[float, Any]]") -> None:
    while True:
        due, reference = pending.get()
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        writer = reference()
        if writer is not None:
            try:
                writer.flush()
            except Exception:  # a writer reports its own I/O trouble; this thread must outlive any of it
                pass


def _after_fork_in_child() -> None:
    _state.update(queue=None, lock=threading.Lock())  # the thread did not come along: the next flush_later starts one


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
