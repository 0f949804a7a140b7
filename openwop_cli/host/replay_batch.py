"""Running many captures (store.find_captures finds them under directories): a stable shard of them for CI
matrices, replaying them on N threads, and JUnit XML of the verdicts.

Each replay runs its program as a child process, so threads are enough to keep N of them busy;
every replay writes its own new capture (random id, its own directory and channel socket), so
nothing is shared between them but the store directory itself.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openwop_cli.errors import CaptureError, NotACapture, UntrustedCommand, UsageError, WopError
from openwop_cli.format.manifest import read_manifest


@dataclass
class BatchResult:
    """One capture of a batch: its outcome (a ReplayOutcome) or the error that kept it from running."""

    source: Path
    manifest: dict[str, Any] | None
    outcome: Any = None
    error: WopError | None = None
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return str((self.manifest or {}).get("name") or self.source.name)

    @property
    def capture_id(self) -> str:
        return str((self.manifest or {}).get("captureId") or "")

    @property
    def verdict(self) -> str:
        """`ok`, `diverged`, `skipped` (its recorded command is not trusted here: trust.py) or `error` (the capture
        could not be replayed)."""
        if isinstance(self.error, UntrustedCommand):
            return "skipped"
        if self.error is not None:
            return "error"
        return "diverged" if self.outcome.diverged else "ok"


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` as (K, N), 1 <= K <= N."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()) or not 1 <= int(index) <= int(count):
        raise UsageError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. --shard 2/4")
    return int(index), int(count)


def shard_of(manifest: dict[str, Any] | None, capture: Path, count: int) -> int:
    """The shard (1..count) a capture belongs to: a hash of its captureId (its directory name when the
    manifest cannot be read), so it is the same on every machine and independent of the other captures."""
    import hashlib  # here: a replay's start-up does not load OpenSSL before its program starts

    key = str((manifest or {}).get("captureId") or capture.name)
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % count + 1


def plan(sources: list[Path]) -> list[BatchResult]:
    """The batch's entries with their manifests read (None when unreadable: the replay reports why)."""
    entries = []
    for source in sources:
        try:
            manifest: dict[str, Any] | None = read_manifest(source)
        except (CaptureError, NotACapture):
            manifest = None
        entries.append(BatchResult(source, manifest))
    return entries


def select_shard(entries: list[BatchResult], index: int, count: int) -> list[BatchResult]:
    """The entries in shard index of count (see shard_of)."""
    return [entry for entry in entries if shard_of(entry.manifest, entry.source, count) == index]


def default_jobs() -> int:
    """How many replays run at once by default: the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run_batch(entries: list[BatchResult], replay: Callable[[Path], Any], *, jobs: int,
              on_done: Callable[[BatchResult], None] = lambda entry: None) -> list[BatchResult]:
    """Replay every entry (replay(source) -> ReplayOutcome) on up to jobs threads; each entry gets its
    outcome or its WopError and its time. on_done is called in this thread as each one finishes."""
    def one(entry: BatchResult) -> BatchResult:
        started = time.monotonic()
        try:
            entry.outcome = replay(entry.source)
        except WopError as exc:
            entry.error = exc
        entry.seconds = time.monotonic() - started
        return entry

    if jobs <= 1 or len(entries) <= 1:
        for entry in entries:
            on_done(one(entry))
        return entries
    from concurrent.futures import ThreadPoolExecutor, as_completed  # (with logging) only for parallel replays

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="wop-replay")
    try:
        for future in as_completed([pool.submit(one, entry) for entry in entries]):
            on_done(future.result())
    finally:  # on Ctrl-C the replays running finish (their programs got the signal too); no new one starts
        pool.shutdown(wait=True, cancel_futures=True)
    return entries


def exit_code(entries: list[BatchResult]) -> int:
    """The batch's exit code: the worst error's (3 corrupt capture, 2 bad input or a capture skipped as not trusted:
    a CI job never passes with captures it did not replay), else 1 on any divergence, else 0."""
    errors = [entry.error.exit_code for entry in entries if entry.error is not None]
    if errors:
        return max(errors)
    return 1 if any(entry.outcome.diverged for entry in entries) else 0


def write_junit(path: Path, entries: list[BatchResult]) -> None:
    """JUnit XML: one testcase per capture, a <failure> per divergence, an <error> for a capture that could not run."""
    import xml.etree.ElementTree as ET

    failures = sum(entry.verdict == "diverged" for entry in entries)
    errors = sum(entry.verdict == "error" for entry in entries)
    skipped = sum(entry.verdict == "skipped" for entry in entries)
    suite = ET.Element("testsuite", name="wop replay", tests=str(len(entries)), failures=str(failures),
                       errors=str(errors), skipped=str(skipped), time=f"{sum(entry.seconds for entry in entries):.3f}")
    for entry in entries:
        case = ET.SubElement(suite, "testcase", classname="wop.replay", name=entry.name, file=str(entry.source),
                             time=f"{entry.seconds:.3f}")
        if isinstance(entry.error, UntrustedCommand):
            ET.SubElement(case, "skipped", message=f"not trusted: {entry.error.reason}")
            continue
        if entry.error is not None:
            ET.SubElement(case, "error", message=entry.error.message, type=type(entry.error).__name__)
            continue
        for divergence in entry.outcome.divergences:
            where = f" at seq {divergence.event_seq}" if divergence.event_seq is not None else ""
            failure = ET.SubElement(case, "failure", type=divergence.code,
                                    message=f"{divergence.code}{where} {divergence.json_path or ''}".strip())
            expected, observed = divergence.sides()
            failure.text = f"{divergence.detail}\nexpected: {expected!r}\nobserved: {observed!r}"
    root = ET.Element("testsuites")
    root.append(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
