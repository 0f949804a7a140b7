"""`wop replay --repeat N`: replay a capture N times and compare the replays with each other.

Every replay is served the same recorded calls and values, so the boundaries a program reaches —
LLM requests, tool arguments, state writes, values — must carry the same payloads every time.
Where replays disagree, the program read something the capture does not hold (a pid, a C
extension's clock, set iteration order): uncaptured nondeterminism, the reason a replay is flaky.

Replays are lined up by process (in the order they appeared), the thread or pool task and the asyncio task
(their stable names: runtime.lineage, runtime.pooltasks), event type and the event's place among that origin's
events of its type, so concurrent threads never line up with each other; each difference is reported once, with its JSON path, every replay's value, the call
site that made the request and a guess of what the value is.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openwop_cli.format.events import LLM_REQUEST, NONDETERMINISTIC, STATE_MUTATION, TOOL_CALL
from openwop_cli.format.reader import CaptureReader
from openwop_cli.replay.divergence import json_path
from openwop_cli.replay.nondeterminism import ORDER, SOME_REPLAYS_ONLY, fix_for, guess_kind


@dataclass(slots=True)
class Nondeterminism:
    """One place where the replays disagree: which event, where in it, each replay's value, and a guess."""

    event_type: str
    ordinal: int
    json_path: str
    values: list[Any]
    site: dict[str, Any] | None
    kind: str
    present: list[bool]

    @property
    def fix(self) -> str:
        """How to make this value replay."""
        return fix_for(self.kind)

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape of `wop replay --repeat --json`."""
        return {"eventType": self.event_type, "ordinal": self.ordinal, "jsonPath": self.json_path,
                "values": self.values, "present": self.present, "site": self.site, "kind": self.kind,
                "fix": self.fix}


def compare_replays(replays: list[Path]) -> list[Nondeterminism]:
    """Every place where the replay captures' boundary payloads differ from each other (see the module docstring)."""
    lined_up: dict[tuple, list[dict[str, Any] | None]] = {}
    for index, path in enumerate(replays):
        for key, event in _boundaries(CaptureReader(path, resolve_blobs=True)):
            lined_up.setdefault(key, [None] * len(replays))[index] = event
    found: list[Nondeterminism] = []
    for key, events in lined_up.items():
        found.extend(_differences(key, events))
    return found


def _boundaries(reader: CaptureReader) -> Iterable[tuple[tuple, dict[str, Any]]]:
    processes: dict[Any, int] = {}
    counts: dict[tuple, int] = {}
    for event in reader:
        event_type = event.get("type")
        data = event.get("data") or {}
        if event_type not in _PAYLOADS or data.get("ambient") is True:
            continue
        origin = event.get("origin") or {}
        process = processes.setdefault(origin.get("pid"), len(processes))
        who = origin.get("poolTask") or origin.get("thread")  # a pool's task runs in whichever worker is free
        where = (process, who, origin.get("task"), event_type)
        counts[where] = counts.get(where, 0) + 1
        yield (*where, counts[where]), event


def _differences(key: tuple, events: list[dict[str, Any] | None]) -> list[Nondeterminism]:
    event_type, ordinal = key[3], key[4]
    present = [event is not None for event in events]
    first = next(event for event in events if event is not None)
    site = (first.get("origin") or {}).get("site")
    if not all(present):
        shown = [None if event is None else _payload(event) for event in events]
        return [Nondeterminism(event_type, ordinal, "$", shown, site, SOME_REPLAYS_ONLY, present)]
    payloads = [_payload(event) for event in events]
    by_path: dict[str, list[Any]] = {}
    for index, payload in enumerate(payloads[1:], start=1):
        for parts, expected, observed in differences(payloads[0], payload):
            values = by_path.setdefault(json_path(parts), [expected] * len(payloads))
            values[index] = observed
    return [Nondeterminism(event_type, ordinal, path, values, site, guess_kind(values), present)
            for path, values in by_path.items()]


def differences(first: Any, second: Any, path: tuple = ()) -> list[tuple[tuple, Any, Any]]:
    """Every (path, first's value, second's value) where two JSON values differ; a list whose items only
    changed places is one difference (an order), not one per item."""
    if first == second:
        return []
    if isinstance(first, dict) and isinstance(second, dict):
        found: list[tuple[tuple, Any, Any]] = []
        for key in sorted(first.keys() | second.keys(), key=str):
            found.extend(differences(first.get(key), second.get(key), (*path, key)))
        return found
    if (isinstance(first, list) and isinstance(second, list) and len(first) == len(second)
            and guess_kind([first, second]) != ORDER):
        return [found for index, (a, b) in enumerate(zip(first, second)) for found in differences(a, b, (*path, index))]
    return [(path, first, second)]


def _payload(event: dict[str, Any]) -> Any:
    data = event.get("data") or {}
    return _PAYLOADS[event["type"]](data)


_PAYLOADS = {
    LLM_REQUEST: lambda data: data.get("request"),
    TOOL_CALL: lambda data: {"name": data.get("name"), "args": data.get("args")},
    STATE_MUTATION: lambda data: {key: data.get(key) for key in ("kind", "channel", "key", "value", "reducer")},
    NONDETERMINISTIC: lambda data: {key: data.get(key) for key in ("source", "key", "value")},
}


@dataclass
class RepeatOutcome:
    """N replays of one capture and where they disagree with each other."""

    replays: list[Any]
    nondeterminism: list[Nondeterminism]

    @property
    def failed(self) -> bool:
        """True when the replays disagree with each other or any of them diverged from the capture."""
        return bool(self.nondeterminism) or any(replay.diverged for replay in self.replays)


def run_repeated(source_dir: Path, argv: list[str], times: int, *, out: Path | None, **options: Any) -> RepeatOutcome:
    """Replay the capture `times` times (run_replay's options; out: a directory for replay-1…N) and compare them."""
    from openwop_cli.host.run_replay import run_replay

    replays = [run_replay(source_dir, argv, out=None if out is None else out / f"replay-{number}", **options)
               for number in range(1, times + 1)]
    return RepeatOutcome(replays, compare_replays([replay.capture.path for replay in replays]))
