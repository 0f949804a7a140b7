"""Bounded latency for buffered writers: one daemon thread per process writes each buffer at most
FLUSH_SECONDS after its first unwritten item arrived.

The capture sink and the channel sender buffer events so a small event costs a list append. When its
buffer goes from empty to non-empty and no flush is pending, a writer calls `flush_later(self, due)`;
at `due` this thread calls `writer.flush_due()`, which writes the buffer if its oldest item has waited
long enough, or says when to ask again (a busy writer's full batches write themselves, so the thread
wakes a few times a second at most). A `kill -9` loses at most that window, and no write lands on the
recorded program's thread. Writers are held weakly; only what the program has already imported is used.
"""

import os
import threading
import time
import weakref
from typing import Any

from openwop_cli.heldsignals import with_handlers_held

FLUSH_SECONDS = 0.2
THREAD_NAME = "wop-flusher"  # its state is made anew in a forked child (see the end of this module)

_state: dict[str, Any] = {"pending": None, "wake": None, "lock": threading.Lock()}


def flush_later(writer: Any, due: float) -> None:
    """Call writer.flush_due() at monotonic time `due` (and again at whatever time it returns) on the flusher thread."""
    with _state["lock"]:
        if _state["pending"] is None:
            wake = threading.Lock()
            wake.acquire()
            pending: dict[int, tuple[float, Any]] = {}
            thread = threading.Thread(target=_run, args=(pending, wake), name=THREAD_NAME, daemon=True)
            # a program's signal handler that raises while start() waits would leave the thread half started (its
            # bootstrap fails) and no flusher ever again: the handler runs once the thread is up
            with_handlers_held(thread.start)
            _state["pending"], _state["wake"] = pending, wake
        _state["pending"][id(writer)] = (due, weakref.ref(writer))
        wake = _state["wake"]
    try:
        wake.release()  # a lock as a binary semaphore: one C call here and in the thread, where an Event takes two
    except RuntimeError:  # released already: the thread has yet to look
        pass


def _run(pending: dict[int, tuple[float, Any]], wake: Any) -> None:
    while True:
        with _state["lock"]:
            soonest = min(pending.items(), key=_due, default=None)
        if soonest is None:
            wake.acquire()
            continue
        key, entry = soonest
        due, reference = entry
        delay = due - time.monotonic()
        if delay > 0:
            wake.acquire(timeout=delay)  # or sooner, when another writer asks
            continue
        writer = reference()
        try:
            again = writer.flush_due() if writer is not None else None
        except Exception:  # a writer reports its own I/O trouble; this thread must outlive any of it
            again = None
        with _state["lock"]:
            if pending.get(key) is entry:  # not asked again meanwhile
                if again is None:
                    del pending[key]
                else:
                    pending[key] = (again, reference)


def _due(item: tuple[int, tuple[float, Any]]) -> float:
    return item[1][0]


def _after_fork_in_child() -> None:
    _state.update(pending=None, wake=None, lock=threading.Lock())  # the thread did not come along: start another


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
