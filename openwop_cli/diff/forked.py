"""A capture read in a forked child process while the caller reads another: two runs' diff on two cores.

The child iterates the capture's reader, every check included, hands each event to `consume` (a diff folds it) and
sends `key_of(event)` down a pipe, one line per event; at the end it sends what `result_of()` returns and what the
reader found (its problems, how many events it read, whether it read them all). The caller takes the keys in order
and reads an event itself (`event`, from its line in the file) only when its key says it must: two runs' equal events
are never parsed twice, and the lines before one it reads are only counted. A capture the reader stops in is reported
as the reader would report it, once `finish` has run.

The child is the caller's own program forked, so what it sends is trusted (pickle); what it read is not, and is
checked there as everywhere. It ends with the caller: `close` kills a child the caller no longer waits for, and so
does the garbage collector for a read the caller lost (Ctrl-C before it held it); a child killed from outside ends the
read in ChildLost (a diff then reads the capture itself).
"""

import os
import pickle
import signal
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from openwop_cli.errors import CorruptCapture
from openwop_cli.format import digest, flusher
from openwop_cli.format.files import MAX_LINE_BYTES, open_regular
from openwop_cli.format.manifest import EVENTS_NAME
from openwop_cli.format.reader import CaptureReader

MIN_BYTES = 4 << 20  # smaller captures are read in the caller's process: a fork would cost more than it saves
BATCH_BYTES = 1 << 18  # keys sent down the pipe at once
PIPE_BYTES = 1 << 20  # the pipe's capacity asked for (Linux), so the child seldom waits for the caller
# What the caller reads at once, of the pipe or of B's file: buffers this small come and go from the same memory; a
# fresh megabyte a read fragmented the heap (the caller's peak RSS 34 -> 39 MiB from 100k to 1M events).
READ_BYTES = 64 << 10
FORK_SAFE_THREADS = frozenset({digest.THREAD_NAME, flusher.THREAD_NAME})
_F_SETPIPE_SZ = 1031
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
_MALLOC_KEPT_BYTES = 32 << 20  # allocations up to this size come from (and go back to) the child's heap


class ChildLost(RuntimeError):
    """The child ended without sending its result: killed from outside (the OOM killer, a stray kill)."""


def can_fork(reader: Any) -> bool:
    """True when `reader` can be read in a child: a capture's reader, on a system that forks, from a process whose
    other threads, if any, are wop's own that a fork leaves sound (a fork copies only the forking thread: another
    one's locks would stay taken in the child)."""
    return isinstance(reader, CaptureReader) and hasattr(os, "fork") and all(
        thread is threading.current_thread() or thread.name in FORK_SAFE_THREADS for thread in threading.enumerate())


def pays(reader: Any) -> bool:
    """True when reading `reader` in a child is worth a process: a capture of MIN_BYTES of events or more, and a CPU
    this process may use that nothing else is running on right now."""
    try:
        size = os.stat(reader.capture_dir / EVENTS_NAME, follow_symlinks=False).st_size
    except (AttributeError, OSError):  # not a capture's reader
        return False
    return size >= MIN_BYTES and _a_cpu_is_idle()


def _a_cpu_is_idle() -> bool:
    """True when fewer tasks are running than this process may use CPUs, itself counted (Linux: the kernel's count
    of runnable tasks now; elsewhere the load average, which lags a minute behind)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    running: float
    try:
        with open("/proc/loadavg", "rb") as handle:
            running = int(handle.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        try:
            running = os.getloadavg()[0] + 1
        except OSError:
            return False
    return running < cpus


class ForkedRead:
    """One capture's events read by a child process; see the module docstring. Iterate it once for the key of each
    event the child read, then call `finish` for what it made of them; `close` in any case."""

    def __init__(self, reader: CaptureReader, key_of: Callable[[dict[str, Any]], bytes],
                 consume: Callable[[dict[str, Any]], None], result_of: Callable[[], Any]) -> None:
        self.reader = reader
        self._lines: _LineCursor | None = None
        try:  # open before B's reader opens it in the child: B removed mid-diff leaves both their file
            self._lines = _LineCursor(open_regular(reader.capture_dir / EVENTS_NAME))
        except (OSError, CorruptCapture):  # not a file to read: B's reader says what it is
            pass
        fds: list[int] = []
        try:  # OSError: no pipe or process to be had (EMFILE, EAGAIN), nothing left open
            fds.extend(os.pipe())
            fds.extend(os.pipe())
            keys_in, keys_out, result_in, result_out = fds
            self._keys_fd: int | None = keys_in
            _widen(keys_out)
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # Ctrl-C waits until the child is held
            try:
                pid = os.fork()
            except BaseException:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                raise
        except BaseException:
            for fd in fds:
                os.close(fd)
            if self._lines is not None:
                self._lines.handle.close()
            raise
        if pid == 0:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's: it kills the child if it stops
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(self._keys_fd)
            os.close(result_in)
            _child(reader, key_of, consume, result_of, keys_out, result_out)
        try:
            os.close(keys_out)
            os.close(result_out)
            self._result_fd: int | None = result_in
            self._end = weakref.finalize(self, _end_child, pid, (self._keys_fd, result_in))
        finally:  # a Ctrl-C that came meanwhile is raised now, when a lost read is cleaned up after
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def __iter__(self) -> Iterator[bytes]:
        """The key the child sent for each event it read, in seq order."""
        assert self._keys_fd is not None, "iterated after close"
        tail: list[bytes] = []  # the start of a key whose newline has not come (a blob's key spans many reads)
        while chunk := os.read(self._keys_fd, READ_BYTES):
            if b"\n" not in chunk:
                tail.append(chunk)
                continue
            keys = b"".join((*tail, chunk)).split(b"\n") if tail else chunk.split(b"\n")
            last = keys.pop()
            tail = [last] if last else []
            yield from keys

    def event(self, seq: int) -> dict[str, Any]:
        """The event at seq, read from its line as the child's reader read it (seqs asked for only ever rise)."""
        if self._lines is None:  # (B's file was made after this read began)
            self._lines = _LineCursor(open_regular(self.reader.capture_dir / EVENTS_NAME))
        return self.reader.line_event(self._lines.line(seq), seq + 1)

    def finish(self) -> Any:
        """Wait for the child; the reader's problems, count and completeness become what the child found, and what
        result_of returned there is returned here. ChildLost when the child died without saying."""
        assert self._result_fd is not None, "finish after close"
        chunks = []
        while chunk := os.read(self._result_fd, PIPE_BYTES):
            chunks.append(chunk)
        self.close()
        if not chunks:
            raise ChildLost(f"the process reading {self.reader.capture_dir} ended without a result")
        outcome, value, problems, events_read, complete = pickle.loads(b"".join(chunks))
        if outcome == "raised":
            raise value
        self.reader.problems, self.reader.events_read, self.reader.complete = problems, events_read, complete
        return value

    def close(self) -> None:
        """Close the pipes and the file; a child still running is killed (the caller stopped early) and reaped."""
        if self._lines is not None:
            self._lines.handle.close()
            self._lines = None
        self._end()  # (once: a later call, or the garbage collector's, does nothing)
        self._keys_fd = self._result_fd = None


class _LineCursor:
    """The lines of a file by 0-based index, going forward only: the lines before the one asked for are counted a
    chunk at a time in C, not split; a line longer than MAX_LINE_BYTES, or one past the end, reads as b""."""

    STEP_LINES = 64  # further ahead than this, a chunk's newlines are counted before it is walked

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self._data = b""
        self._start = 0  # where line `_index` starts in _data
        self._index = 0
        self._counted = False  # _data's newlines were counted (counting again would not help)

    def line(self, index: int) -> bytes:
        """Line `index` without its newline (index never less than the last one asked for)."""
        while True:
            data, start = self._data, self._start
            if index - self._index > self.STEP_LINES and not self._counted:
                self._counted = True
                complete = data.count(b"\n", start)
                if complete <= index - self._index:
                    self._index += complete
                    self._start = data.rfind(b"\n", start) + 1 if complete else start
                    if not self._refill():
                        return b""
                    continue
            while self._index < index and (end := data.find(b"\n", start)) >= 0:
                start, self._index = end + 1, self._index + 1
            self._start = start
            if self._index == index and (end := data.find(b"\n", start)) >= 0:
                return data[start:end]
            if not self._refill():
                return b""

    def _refill(self) -> bool:
        chunk = self.handle.read(READ_BYTES)
        rest = self._data[self._start:]
        if not chunk or len(rest) > MAX_LINE_BYTES:
            return False
        self._data, self._start, self._counted = rest + chunk, 0, False
        return True


def _child(reader: CaptureReader, key_of: Callable[[dict[str, Any]], bytes], consume: Callable[[dict[str, Any]], None],
           result_of: Callable[[], Any], keys_out: int, result_out: int) -> None:
    """The child's whole life: read, send, report, exit (never returning into the caller's code)."""
    status = 1
    try:
        _keep_freed_memory()
        try:
            _send_keys(reader, key_of, consume, keys_out)
            report = ("done", result_of(), reader.problems, reader.events_read, reader.complete)
        except Exception as exc:  # the caller raises it as its own
            report = ("raised", _picklable(exc), [], 0, False)
        os.close(keys_out)
        _write_all(result_out, pickle.dumps(report, pickle.HIGHEST_PROTOCOL))
        status = 0
    except BaseException:  # the caller went away (a closed pipe) or killed it: nothing left to tell
        pass
    finally:
        os._exit(status)


def _keep_freed_memory() -> None:
    """Have glibc's malloc keep what the child frees for its next allocations (chunks, batches of keys) instead of
    handing it back to the kernel and faulting fresh pages in again: a child reading 100,000 events took 40,000 page
    faults, a fifth of its time, and 7,000 with this. Elsewhere (musl, macOS) nothing changes."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        mallopt(_M_MMAP_THRESHOLD, _MALLOC_KEPT_BYTES)
        mallopt(_M_TRIM_THRESHOLD, _MALLOC_KEPT_BYTES * 8)
    except (ImportError, OSError, AttributeError):
        pass


def _end_child(pid: int, fds: tuple[int, int]) -> None:
    """Close a read's pipes, and kill and reap its child (a finished one is only reaped): by close, or by the garbage
    collector for a read the caller never held or dropped unclosed (its child would wait on a full pipe for good)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _send_keys(reader: CaptureReader, key_of: Callable[[dict[str, Any]], bytes],
               consume: Callable[[dict[str, Any]], None], keys_out: int) -> None:
    batch: list[bytes] = []
    size = 0
    for event in reader:
        consume(event)
        key = key_of(event)
        batch.append(key)
        size += len(key)
        if size >= BATCH_BYTES:
            _send_batch(batch, keys_out)
            size = 0
    _send_batch(batch, keys_out)


def _send_batch(keys: list[bytes], keys_out: int) -> None:
    """The keys gathered so far down the pipe, each ended by a newline (none: nothing sent); keys is emptied."""
    if keys:
        keys.append(b"")
        _write_all(keys_out, b"\n".join(keys))
        keys.clear()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _widen(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, OSError):  # not Linux, or over the system's limit: the default pipe works, a little slower
        pass


def _picklable(exc: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
