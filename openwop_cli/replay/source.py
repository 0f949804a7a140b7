"""The replay source: a recorded capture turned into call units, a seq-order cursor and a content-key index.

A unit is one thing the program did that replay serves or checks: a tool call with its result, an
LLM request with its response, a nondeterministic value, a getVersion choice, a state write.
Ambient values (clock, uuid, random read by unmodified code) are not units: they are indexed by
call site and origin in `ambient` (replay.ambient serves them). Each
unit has a content key (tool name + canonical args; the LLM recipe cacheKey; source + key of a
value; the channel of a state write), the origin that made it (process, thread, task) and an
overlap group (units issued while another call was still pending share a group). A connection no
adapter recorded is not a unit (nothing can serve it): it is kept by destination in
`unrecorded_connections`, so a replay can say why the network guard blocked one.

The events file is memory-mapped: the index holds seq numbers and byte offsets, and a recorded
result is parsed only when it is served, so a capture of a million events does not become a
million dicts.
"""

import hashlib
import mmap
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from openwop_cli.errors import CaptureError, CorruptCapture, IncompleteCapture
from openwop_cli.format.blobs import BLOB_MARKER, BlobStore
from openwop_cli.format.events import (
    LLM_REQUEST,
    LLM_RESPONSE,
    NONDETERMINISTIC,
    ORIGIN_SCHEME,
    RUN_END,
    STATE_MUTATION,
    TOOL_CALL,
    TOOL_RESULT,
)
from openwop_cli.format.files import open_regular
from openwop_cli.format.manifest import EVENTS_NAME, STATUS_INCOMPLETE, read_manifest
from openwop_cli.replay.ambient import KIND_AMBIENT, ambient_key, served_to_any_process
from openwop_cli.replay.keys import KIND_LLM, KIND_STATE, KIND_TOOL, KIND_VALUE, KIND_VERSION, unit_key
from openwop_cli.replay.telemetry import telemetry_of

_CALL_TYPES = {TOOL_CALL: KIND_TOOL, LLM_REQUEST: KIND_LLM}
_RESULT_TYPES = (TOOL_RESULT, LLM_RESPONSE)


class ReplaySource:
    """Everything replay needs from one capture; see the module docstring.

    only_pid keeps the units one recorded process made (a replayed process serves only its own, and those of every
    multiprocessing pool task: whichever worker runs the task today is served them);
    keyed=False skips the content keys (the parent only counts and checks units).
    """

    def __init__(self, capture_dir: Path, *, only_pid: int | None = None, redactor: Any = None,
                 keyed: bool = True) -> None:
        self.capture_dir = Path(capture_dir)
        self.manifest = read_manifest(self.capture_dir)
        if self.manifest.get("status") == STATUS_INCOMPLETE:
            raise IncompleteCapture(
                f"cannot replay {self.capture_dir}: the capture is incomplete (its run never finalized); "
                "run `wop verify` for details"
            )
        self.blobs = BlobStore(self.capture_dir)
        self.redactor = redactor
        self.only_pid = only_pid
        self.keyed = keyed
        self.event_count = 0
        self.exit_code: int | None = None
        self.kinds = array("b")
        self.keys: list[int] = []
        self.names: list[str | None] = []
        self.request_seqs = array("q")
        self.result_seqs = array("q")
        self.origins = array("i")
        self.groups = array("i")
        self.telemetry = bytearray()  # per unit: 1 for a telemetry call (replay.telemetry), served but never checked
        self.telemetry_seqs: set[int] = set()
        self.destinations: set[str] = set()  # host:port of every recorded HTTP call (a raw socket's, runtime.replay_child)
        self.origin_ids: dict[tuple, int] = {}  # origin_key → origin id
        self.pool_task_origins: dict[int, str] = {}  # origin id → the pool task it stands for
        self.edits: dict[int, list[Any]] = {}
        self.ambient: dict[tuple, list[int]] = {}
        self.declarations: list[tuple[int, str, Any]] = []  # (seq, channel, declaration) of wop.state.declare
        self.unrecorded_connections: dict[str, tuple[int, dict[str, Any]]] = {}
        self.stable_origins = (self.manifest.get("originScheme") or 1) >= ORIGIN_SCHEME  # see format.events
        self._offsets = array("q")
        self._map = self._open_events()
        self._index()

    @classmethod
    def for_serving(cls, capture_dir: Path, only_pid: int | None = None) -> "ReplaySource":
        """A source whose content keys match today's calls: keyed under the capture's own redaction profile,
        with the secrets of this process's environment (so a secret argument still finds its redacted record)."""
        from openwop_cli.format.redact import Redactor

        profile = (read_manifest(Path(capture_dir)).get("redaction") or {}).get("profile", "default")
        return cls(capture_dir, only_pid=only_pid, redactor=Redactor.from_environment(profile))

    # ---- reading ----------------------------------------------------------------------------

    def event(self, seq: int, edited: bool = True) -> dict[str, Any]:
        """The recorded event at seq, blobs resolved (and `--edit`s made, unless edited is False)."""
        start = self._offsets[seq]
        end = self._offsets[seq + 1] if seq + 1 < len(self._offsets) else len(self._map)
        line = self._map[start:end]
        event = orjson.loads(line)
        if BLOB_MARKER in line:
            event["data"] = self.blobs.resolve(event["data"])
        if edited and seq in self.edits:
            from openwop_cli.replay.edits import apply_edits

            event["data"] = apply_edits(event["data"], self.edits[seq])
        return event

    def line(self, seq: int) -> bytes:
        """The bytes of the recorded event at seq, as the capture holds them (its line without the newline)."""
        start = self._offsets[seq]
        end = self._offsets[seq + 1] - 1 if seq + 1 < len(self._offsets) else len(self._map) - 1
        return bytes(self._map[start:end])

    def set_edits(self, edits: list[Any]) -> None:
        """Serve the events these edits name with their values changed (`wop fork --edit`)."""
        self.edits = {}
        for edit in edits:
            self.edits.setdefault(edit.seq, []).append(edit)

    def unit_count(self) -> int:
        """How many call units the capture holds (for this process, with only_pid)."""
        return len(self.kinds)

    def units(self) -> Iterator[int]:
        """Unit ids in seq order: the spec's cursor, with no skipping."""
        return iter(range(len(self.kinds)))

    def cursor(self) -> "Cursor":
        """The spec's ReplaySource interface: next(expectedType), peek(), remaining(), in seq order."""
        return Cursor(self)

    def close(self) -> None:
        """Release the memory map."""
        if self._map is not None and len(self._map):
            self._map.close()

    # ---- building ---------------------------------------------------------------------------

    def _open_events(self) -> Any:
        path = self.capture_dir / EVENTS_NAME
        try:
            with open_regular(path) as handle:
                size = handle.seek(0, 2)
                mapped: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except OSError as exc:
            raise CorruptCapture(f"cannot read {path}: {exc.strerror or exc}") from None
        expected = (self.manifest.get("integrity") or {}).get("eventsHash")
        if expected and hashlib.sha256(mapped).hexdigest() != expected:
            raise CorruptCapture(self._describe_damage())
        return mapped

    def _describe_damage(self) -> str:
        from openwop_cli.format.verify import verify_capture

        report = verify_capture(self.capture_dir)
        first = str(report.problems[0]) if report.problems else "events.jsonl does not match its sha256"
        return f"cannot replay {self.capture_dir}: {first}"

    def _index(self) -> None:
        mapped = self._map
        pending: dict[str, int] = {}
        open_calls = 0
        group = 0
        position, seq, size = 0, 0, len(mapped)
        from openwop_cli.format.shape import EventValidator  # msgspec: loaded once the program is started

        check = EventValidator(self.manifest["captureId"], self.manifest["runId"]).problem
        while position < size:
            end = mapped.find(b"\n", position)
            if end < 0:
                raise CorruptCapture(f"cannot replay {self.capture_dir}: the last line of {EVENTS_NAME} is cut off")
            line = mapped[position:end]
            self._offsets.append(position)
            position = end + 1
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise CorruptCapture(f"cannot replay {self.capture_dir}: line {seq + 1} is not JSON") from None
            problem = check(event, line)
            if problem is not None:
                raise CorruptCapture(f"cannot replay {self.capture_dir}: line {seq + 1} seq {seq}: {problem}")
            if event["seq"] != seq:
                raise CorruptCapture(f"cannot replay {self.capture_dir}: line {seq + 1} holds seq {event['seq']}")
            seq += 1
            event_type, data = event["type"], event["data"]
            if event_type == RUN_END:
                self.exit_code = data.get("exitCode")
                continue
            if event_type in _RESULT_TYPES:
                if BLOB_MARKER in line and not self.keyed:  # what will be served: checked before the program runs
                    self._resolved(data, seq - 1)
                unit = pending.pop(data.get("callId"), None)
                if unit is not None:
                    self.result_seqs[unit] = event["seq"]
                    open_calls -= 1
                continue
            kind = _CALL_TYPES.get(event_type)
            if kind is None:
                if event_type == NONDETERMINISTIC and data.get("unrecorded") is True:
                    self.unrecorded_connections.setdefault(str(data.get("key")), (event["seq"], data))
                    continue
                kind = _instant_kind(event_type, data)
                if kind is None:
                    self._note_declaration(event, line)
                    continue
            origin = event.get("origin") or {}
            if self.only_pid is not None and origin.get("pid") != self.only_pid and not served_to_any_process(origin):
                continue
            if kind == KIND_AMBIENT:
                if self.keyed:
                    self.ambient.setdefault(ambient_key(data, origin, self.stable_origins), []).append(event["seq"])
                continue
            if open_calls == 0:
                group += 1
            if BLOB_MARKER in line:
                data = self._resolved(data, seq - 1)
            unit = len(self.kinds)
            self.kinds.append(kind)
            self.keys.append(self.unit_key(kind, data, origin) if self.keyed else 0)
            self.names.append(_unit_name(kind, data))
            self.request_seqs.append(event["seq"])
            self.result_seqs.append(-1)
            self.origins.append(self._origin_id(origin))
            self.groups.append(group)
            is_telemetry = kind == KIND_TOOL and telemetry_of(data) is not None
            self.telemetry.append(is_telemetry)
            if is_telemetry:
                self.telemetry_seqs.add(event["seq"])
            if kind in (KIND_TOOL, KIND_LLM):
                pending[data.get("callId")] = unit
                open_calls += 1
                self._note_destination(kind, data)
        self.event_count = seq

    def unit_key(self, kind: int, data: dict[str, Any], origin: dict[str, Any]) -> int:
        """A unit's content key (replay.keys), made by origin for a keyed value: `wop.randint(key="k")` read by
        two threads is two values, each its thread's, in a capture whose origins are stable from run to run."""
        key = unit_key(kind, data, self.redactor)
        return by_origin(key, origin) if kind == KIND_VALUE and self.stable_origins else key

    def _resolved(self, data: Any, seq: int) -> Any:
        """data with its blobs put back; CorruptCapture naming the seq when one is missing, altered or unknown."""
        try:
            return self.blobs.resolve(data)
        except CaptureError as exc:
            raise CorruptCapture(f"cannot replay {self.capture_dir}: seq {seq}: {exc}") from None

    def _note_destination(self, kind: int, data: dict[str, Any]) -> None:
        http = data.get("http") if kind == KIND_LLM else data.get("args") if data.get("name") == "http" else None
        url = http.get("url") if isinstance(http, dict) else None
        if isinstance(url, str):
            try:
                parts = urlsplit(url)
                port = parts.port or (443 if parts.scheme == "https" else 80)
            except ValueError:
                return
            self.destinations.add(f"{parts.hostname}:{port}")

    def _note_declaration(self, event: dict[str, Any], line: bytes) -> None:
        data = event["data"]
        if event["type"] != STATE_MUTATION or data.get("kind") != "declare":
            return
        if self.only_pid is None or (event.get("origin") or {}).get("pid") == self.only_pid:
            if BLOB_MARKER in line:
                data = self.blobs.resolve(data)
            self.declarations.append((event["seq"], str(data.get("channel")), data.get("declaration")))

    def _origin_id(self, origin: dict[str, Any]) -> int:
        key = origin_key(origin)
        found = self.origin_ids.get(key)
        if found is None:
            found = self.origin_ids[key] = len(self.origin_ids)
            if key[3] is not None:
                self.pool_task_origins[found] = key[3]
        return found


def by_origin(key: int, origin: dict[str, Any]) -> int:
    """A content key made specific to the thread, task or pool task in origin (not to its process: replayed
    processes have other pids)."""
    return hash((key, origin_key(origin)[1:]))


def origin_key(origin: dict[str, Any]) -> tuple:
    """Whose calls are ordered together: (pid, thread, asyncio task, None), or for a pool task (pid, None, asyncio
    task, pool task) — whichever worker ran it, in whatever thread, and for a process pool's, in whatever process."""
    pool_task = origin.get("poolTask")
    if pool_task is not None:
        return None if served_to_any_process(origin) else origin.get("pid"), None, origin.get("task"), pool_task
    return origin.get("pid"), origin.get("thread"), origin.get("task"), None


def _unit_name(kind: int, data: dict[str, Any]) -> str | None:
    """What a unit is called: the tool name, the state channel (or variable), the value's key."""
    if kind == KIND_TOOL:
        return data.get("name")
    if kind == KIND_STATE:
        return data.get("channel", data.get("key"))
    if kind == KIND_LLM:
        return None
    return data.get("key")


def _instant_kind(event_type: str, data: dict[str, Any]) -> int | None:
    if event_type == NONDETERMINISTIC:
        if data.get("ambient") is True:
            return KIND_AMBIENT
        return KIND_VERSION if data.get("source") == "version" else KIND_VALUE
    if event_type == STATE_MUTATION and data.get("kind") != "declare":
        return KIND_STATE
    return None


class Cursor:
    """A strict cursor over the recorded call units in seq order (capture-replay-design.md ReplaySource):
    `next` never skips a unit of another type, it answers None and stays put."""

    def __init__(self, source: ReplaySource) -> None:
        self.source = source
        self.position = 0

    def peek(self) -> dict[str, Any] | None:
        """The next recorded request event, without moving."""
        if self.position >= self.source.unit_count():
            return None
        return self.source.event(self.source.request_seqs[self.position])

    def next(self, expected_type: str) -> dict[str, Any] | None:
        """The next recorded request event if it has expected_type (and move past it), else None."""
        event = self.peek()
        if event is None or event["type"] != expected_type:
            return None
        self.position += 1
        return event

    def remaining(self) -> int:
        """How many recorded units are still ahead."""
        return self.source.unit_count() - self.position
