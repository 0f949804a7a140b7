"""Ambient values in a replay: each call site and thread/task is served its recorded values in order.

ReplaySource indexes every `nondeterministic` event marked `ambient` (a clock, uuid or random read
of unmodified code, runtime.ambient) by (source, key, call site, thread, task) instead of making it
a unit: ambient values are never matched, ordered or counted like calls. A value nobody reads is no
divergence, and a read with no value left gets a live one that the replay report notes — what
strict replay judges are the boundaries those values flow into. A fork serves only the values
recorded before its branch point. A pool's workers (processes, or threads in a ThreadPool or a
ThreadPoolExecutor) take its tasks in a different order each run, so the values a pool task read
are keyed by the task and served to whichever worker runs it — a process pool's, in any replayed
process (runtime.pooltasks).
"""

from typing import Any

from openwop_cli.format.events import moves_between_processes

KIND_AMBIENT = 6


def ambient_key(data: dict[str, Any], origin: dict[str, Any], by_origin: bool = True) -> tuple:
    """Where an ambient value belongs: its source and key, the call site, and the thread/task that read it — or,
    instead of the thread, the multiprocessing pool task it ran (runtime.pooltasks).

    A site is its file, its function and its line's text and occurrence in the function (runtime.callsite), so
    lines added or removed elsewhere leave it the same; a site recorded without its text (an older capture, source
    that could not be read) is its line. by_origin=False (a capture whose origins are not stable from run to run:
    manifest.originScheme below 2) leaves the thread and task out."""
    site = origin.get("site") or {}
    text = site.get("text")
    where = (site.get("function"), text, site.get("occurrence") if text is not None else site.get("line"))
    if not by_origin:
        return (data.get("source"), data.get("key"), site.get("file"), *where)
    pool_task = origin.get("poolTask")
    return (data.get("source"), data.get("key"), site.get("file"), *where,
            origin.get("thread") if pool_task is None else None, origin.get("task"), pool_task)


def moved(key: tuple) -> tuple:
    """An ambient_key without its file: a value read at the same site of a file renamed since."""
    return (*key[:2], None, *key[3:])


def served_to_any_process(origin: dict[str, Any]) -> bool:
    """True for what a process pool's task did (a value it read, a call it made): a replay serves it to whichever
    worker runs that task, not only to the process that stands for the recorded one."""
    pool_task = origin.get("poolTask")
    return pool_task is not None and moves_between_processes(pool_task)


class AmbientValues:
    """The recorded values per ambient_key, each handed out once, in recorded order (callers hold a lock)."""

    def __init__(self, index: dict[tuple, list[int]], before_seq: int | None = None, by_origin: bool = True) -> None:
        """index: ambient_key → recorded seqs; before_seq: serve only values recorded before it (a fork);
        by_origin: as ambient_key's."""
        self._index = index
        self._next: dict[tuple, int] = {}
        self._before_seq = before_seq
        self._by_origin = by_origin
        self._moved: dict[tuple, list[tuple]] | None = None

    def take(self, data: dict[str, Any], origin: dict[str, Any]) -> int | None:
        """The seq of the next value recorded for this read, or None when none is left."""
        key = ambient_key(data, origin, self._by_origin)
        if key not in self._index:
            key = self._renamed(key)
        seqs = self._index.get(key)
        if seqs is None:
            return None
        position = self._next.get(key, 0)
        if position >= len(seqs) or (self._before_seq is not None and seqs[position] >= self._before_seq):
            return None
        self._next[key] = position + 1
        return seqs[position]

    def recorded_here(self, data: dict[str, Any], origin: dict[str, Any]) -> bool:
        """True when the capture holds values of this read's site and thread/task (served, or all used up)."""
        key = ambient_key(data, origin, self._by_origin)
        return key in self._index or self._renamed(key) in self._index

    def _renamed(self, key: tuple) -> tuple:
        """The recorded key of the same site in another file (the program's file renamed), if there is one."""
        if self._moved is None:
            self._moved = {}
            for recorded in self._index:
                self._moved.setdefault(moved(recorded), []).append(recorded)
        candidates = self._moved.get(moved(key), ())
        return candidates[0] if len(candidates) == 1 else key
