"""A sha256 computed off the caller's thread: hashlib lets go of the GIL while it hashes, so a capture's events hash
on another core while the thread that reads or writes them goes on."""

import hashlib
import os
import signal
import threading
import weakref
from typing import Any

THREAD_NAME = "wop-events-hash"  # ended before this process forks (see BackgroundHash)
INLINE_BYTES = 1 << 20  # hashed on the caller's thread: a small capture starts no thread (nor imports queue)
MAX_WAITING = 2  # chunks handed and not yet hashed, at most: past them the caller waits, so memory stays flat


class BackgroundHash:
    """The sha256 of the chunks handed to `update`, in order: their first INLINE_BYTES on the caller's thread, the
    rest on a thread of its own (started then). The thread hashes whatever chunks are waiting, one by one (hashlib
    lets go of the GIL for each); at most MAX_WAITING wait, past them `update` waits for the thread. Before the
    process forks, the thread hashes what waits and ends (a child forked while it held the hash's lock would find
    that lock taken for good); the next chunk starts another. A lock of its own, held across a fork by the thread
    that forks, keeps another thread from starting or stopping the hashing thread meanwhile."""

    def __init__(self) -> None:
        self._chunks: Any = None  # a queue.SimpleQueue of chunks (None: the end), once the thread starts
        self._room = threading.Semaphore(MAX_WAITING)  # one per chunk that may wait: a busy machine's thread lags
        self._digest = hashlib.sha256()
        self._inline = INLINE_BYTES
        self._thread: threading.Thread | None = None
        self._closed = False
        self._lock = threading.Lock()
        with _live_lock:
            _live.add(self)

    def update(self, chunk: bytes) -> None:
        """Hash chunk after the ones before it."""
        with self._lock:
            if self._closed or self._inline > 0:
                self._inline -= len(chunk)
                self._digest.update(chunk)
                return
            if self._thread is None:
                if self._chunks is None:
                    import queue

                    self._chunks = queue.SimpleQueue()
                thread = threading.Thread(target=self._hash, name=THREAD_NAME, daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no thread to be had now (`ulimit -u`): this chunk is hashed here
                    self._digest.update(chunk)
                    return
                self._thread = thread
            self._room.acquire()
            self._chunks.put(chunk)

    def hexdigest(self) -> str:
        """The sha256 of every chunk handed so far."""
        self.close()
        return self._digest.hexdigest()

    def close(self) -> None:
        """Let the thread hash what it was handed, and end; chunks handed later are hashed on the caller's thread."""
        with self._lock:
            self._closed = True
            self._stop_thread()

    def _stop_thread(self) -> None:
        if self._thread is not None:
            self._chunks.put(None)
            self._thread.join()
            self._thread = None

    def _hash(self) -> None:
        if hasattr(signal, "pthread_sigmask"):  # Ctrl-C goes to the main thread, even while it holds it (diff.forked)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        chunks = self._chunks
        while True:
            batch = [chunks.get()]
            while batch[-1] is not None and not chunks.empty():
                batch.append(chunks.get())
            done = batch[-1] is None
            for chunk in batch[:-1] if done else batch:  # one by one: a join would copy what waited once more
                self._digest.update(chunk)
            if len(batch) > done:
                self._room.release(len(batch) - done)
            if done:
                return


_live: "weakref.WeakSet[BackgroundHash]" = weakref.WeakSet()
_live_lock = threading.Lock()  # held across a fork with the locks of the hashes in _held (threads may fork at once)
_held: list[BackgroundHash] = []


def _before_fork() -> None:
    _live_lock.acquire()
    _held[:] = _live
    for hashed in _held:
        hashed._lock.acquire()
        hashed._stop_thread()


def _after_fork() -> None:
    for hashed in _held:
        hashed._lock.release()
    _held.clear()
    _live_lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)
