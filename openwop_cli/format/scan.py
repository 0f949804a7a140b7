"""Hyperscan databases for bytes scans that must be fast (the redaction prefilter, the reader's nesting bound),
compiled once and cached in the user's cache directory. ImportError where Hyperscan is not installed."""

import hashlib
import os
from collections.abc import Sequence
from typing import Any

import orjson


class HyperscanMatcher:
    """Patterns in Hyperscan databases (the prefilter's, or any other bytes scan that must be fast); each
    thread scans with its own scratch space. ImportError where Hyperscan is not installed.

    Compiling `parts` takes tens of milliseconds, more than a small capture's whole run, so their database is
    kept in the user's cache directory and loaded in microseconds by later runs; `secret_parts` (the values of
    secret environment variables) are compiled in every run, in a database of their own that never reaches a disk.
    Each pattern reports its first match only, which is all `search` and `matched` need."""

    def __init__(self, parts: list[str], secret_parts: Sequence[str] = ()) -> None:
        import threading

        import hyperscan

        self._hyperscan = hyperscan
        self._databases = [_cached_database(hyperscan, parts)]
        if secret_parts:
            self._databases.append(_compiled_database(hyperscan, list(secret_parts)))
        self._local = threading.local()

    def search(self, data: bytes) -> bool:
        """True when any pattern matches somewhere in data (the scan stops at the first match)."""
        scratches = self._scratches()
        try:
            for database, scratch in zip(self._databases, scratches):
                database.scan(data, match_event_handler=_stop, scratch=scratch)
        except self._hyperscan.ScanTerminated:
            return True
        return False

    def _scratches(self) -> list[Any]:
        """This thread's scratch space for each database (Hyperscan's scans may not share one across threads)."""
        scratches = getattr(self._local, "scratches", None)
        if scratches is None:
            scratches = self._local.scratches = [self._hyperscan.Scratch(database) for database in self._databases]
        return scratches

    def matched(self, data: bytes) -> set[int]:
        """The indexes of the patterns that match somewhere in data."""
        found: set[int] = set()
        for database, scratch in zip(self._databases, self._scratches()):
            database.scan(data, match_event_handler=_note, context=found, scratch=scratch)
        return found


def _compiled_database(hyperscan: Any, parts: list[str]) -> Any:
    database = hyperscan.Database()
    database.compile(expressions=[part.encode() for part in parts], ids=list(range(len(parts))),
                     flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(parts))
    return database


def _cached_database(hyperscan: Any, parts: list[str]) -> Any:
    """parts compiled, from the cache when an earlier run of this Hyperscan compiled them (Hyperscan checks a
    loaded database's checksum and platform; anything it refuses is compiled and cached again)."""
    identity = orjson.dumps([hyperscan.__version__, parts])
    key = hashlib.sha256(identity).hexdigest()[:32]
    from platformdirs import user_cache_dir

    path = os.path.join(user_cache_dir("wop", appauthor=False), f"hyperscan-{key}.db")
    try:
        with open(path, "rb") as handle:
            database = hyperscan.loadb(handle.read(), hyperscan.HS_MODE_BLOCK)
        hyperscan.Scratch(database)
        return database
    except (OSError, hyperscan.error):
        pass
    from openwop_cli.format.detectors import write_cache_file

    database = _compiled_database(hyperscan, parts)
    write_cache_file(path, hyperscan.dumpb(database))
    return database


def _note(pattern_id: int, _start: int, _end: int, _flags: int, found: set[int]) -> None:
    found.add(pattern_id)


def _stop(*_match: Any) -> bool:
    return True
