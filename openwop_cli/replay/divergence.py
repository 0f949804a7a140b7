"""Divergences: where today's run parts ways with the capture, in the shape of capture-replay-design.md.

`jsonPath` is the first path `differences` finds, computed only for events that differ.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

EVENT_TYPE_MISMATCH = "event_type_mismatch"
EVENT_PAYLOAD_MISMATCH = "event_payload_mismatch"
EVENT_MISSING = "event_missing"
EVENT_UNEXPECTED = "event_unexpected"
NONDETERMINISTIC_UNDERFLOW = "nondeterministic_underflow"
REFUSAL_DIVERGENCE = "replay_diverged_at_refusal"
NETWORK_BLOCKED = "replay_network_blocked"
OUTPUT_MISMATCH = "output_mismatch"  # the program printed another line than the recorded run (replay.output)
CODES = (EVENT_TYPE_MISMATCH, EVENT_PAYLOAD_MISMATCH, EVENT_MISSING, EVENT_UNEXPECTED, NONDETERMINISTIC_UNDERFLOW,
         REFUSAL_DIVERGENCE, NETWORK_BLOCKED, OUTPUT_MISMATCH)
EXTRA_CODES = frozenset({EVENT_UNEXPECTED, NONDETERMINISTIC_UNDERFLOW, NETWORK_BLOCKED, OUTPUT_MISMATCH})


@dataclass(slots=True)
class Divergence:
    """One divergence (capture-replay-design.md ReplayDivergence): code, the recorded seq it concerns, the JSON
    path, a one-line detail, and both sides twice: `expected` (the recorded CaptureEvent) and `observed` (today's
    `{type, data}`), and the values at the JSON path (`expected_value`, `observed_value`).

    `point` is the recorded seq where the runs part ways when the divergence concerns no recorded event (an
    unexpected call: the recorded call today's run had not reached yet); it is event_seq otherwise.
    """

    code: str
    event_seq: int | None
    json_path: str | None
    expected_value: Any
    observed_value: Any
    detail: str
    event_type: str | None = None
    expected: dict[str, Any] | None = None
    observed: dict[str, Any] | None = None
    point: int | None = None
    site: dict[str, Any] | None = None  # where today's call was made: {file, line, function} in the program

    @property
    def divergence_point(self) -> int | None:
        """The recorded seq where this divergence happens (the determinism score's firstDivergenceSeq)."""
        return self.event_seq if self.event_seq is not None else self.point

    def sides(self) -> tuple[Any, Any]:
        """What to show as expected vs observed: the values at the JSON path, or the calls themselves without one."""
        if self.json_path is not None:
            return self.expected_value, self.observed_value
        return tuple(None if event is None else event_summary(str(event.get("type")), event.get("data") or {})
                     for event in (self.expected, self.observed))  # type: ignore[return-value]

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape (replay_diverged event data and `--json` reports); the spec's optional
        fields (`expected`, `observed`, `eventSeq`, `jsonPath`) are left out when there is nothing to say."""
        data: dict[str, Any] = {"code": self.code}
        for key, value in (("eventSeq", self.event_seq), ("jsonPath", self.json_path), ("expected", self.expected),
                           ("observed", self.observed)):
            if value is not None:
                data[key] = value
        data.update(eventType=self.event_type, expectedValue=self.expected_value, observedValue=self.observed_value,
                    divergencePoint=self.divergence_point, detail=self.detail, site=self.site)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Divergence":
        """The inverse of to_json."""
        seq = data.get("eventSeq")
        return cls(data.get("code", ""), seq, data.get("jsonPath"), data.get("expectedValue"),
                   data.get("observedValue"), data.get("detail", ""), data.get("eventType"), data.get("expected"),
                   data.get("observed"), data.get("divergencePoint") if seq is None else None,
                   data.get("site") if isinstance(data.get("site"), dict) else None)


def observed_event(event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    """Today's side of a divergence: the event the program made, as `{type, data}`."""
    return {"type": event_type, "data": data}


def network_blocked(destination: str, site: dict[str, Any] | None,
                    recorded: tuple[int, dict[str, Any]] | None) -> Divergence:
    """replay_network_blocked: the network guard refused a connection to destination (host:port), opened at
    site (observed). recorded is the capture's event for connections there that no adapter recorded, if it
    has one: then `expected` is that event and `eventSeq` its seq; else both are absent."""
    host, _, port = destination.rpartition(":")
    opener = f" (opened by {site['file']}:{site['line']})" if site else ""
    value = {"host": host, "port": int(port) if port.isdigit() else port, "site": site}
    observed = observed_event("nondeterministic", {"source": "network", "key": destination, "value": value})
    if recorded is None:
        return Divergence(NETWORK_BLOCKED, None, None, None, value,
                          f"the program opened a connection to {destination}{opener} and replay blocked it: the "
                          "capture has no call there to serve", "nondeterministic", None, observed, site=site)
    seq, data = recorded
    return Divergence(NETWORK_BLOCKED, seq, None, data.get("value"), value,
                      f"the program opened a connection to {destination}{opener} and replay blocked it: the capture "
                      f"saw connections there that no adapter recorded (seq {seq}), so nothing can serve them; "
                      "capture it again with --proxy", "nondeterministic",
                      {"seq": seq, "type": "nondeterministic", "data": data}, observed, site=site)


def first_difference(expected: Any, observed: Any) -> tuple[str | None, Any, Any]:
    """(JSONPath, expected value, observed value) of the first place two JSON values differ; (None, …) if equal."""
    for parts, left, right in differences(expected, observed):
        return json_path(parts), left, right
    return None, expected, observed


def differences(left: Any, right: Any, parts: tuple = ()) -> Iterator[tuple[tuple, Any, Any]]:
    """(path parts, left value, right value) of every place two JSON values differ, depth first in key and index
    order: a value that changed (or changed type), a key or list item only one side has (the other side None)."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(left.keys() | right.keys(), key=str):
            if key not in right or key not in left:
                yield (*parts, key), left.get(key), right.get(key)
            else:
                yield from differences(left[key], right[key], (*parts, key))
    elif isinstance(left, list) and isinstance(right, list):
        for index in range(max(len(left), len(right))):
            if index >= len(left) or index >= len(right):
                yield (*parts, index), left[index] if index < len(left) else None, \
                    right[index] if index < len(right) else None
            else:
                yield from differences(left[index], right[index], (*parts, index))
    elif left != right or type(left) is not type(right):  # 1, 1.0 and True are equal in Python, not in JSON
        yield parts, left, right


def json_path(parts: Sequence[Any]) -> str:
    """`$.messages[1].content` from the path parts ['messages', 1, 'content']."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif isinstance(part, str) and part.isidentifier():
            out.append(f".{part}")
        else:
            out.append(f"[{part!r}]")
    return "".join(out)


def refusal_nature(response: Any) -> str:
    """'refusal' when a provider response declines to answer (OpenAI refusal, content_filter, Anthropic refusal), else 'valid'."""
    if not isinstance(response, dict):
        return "valid"
    if response.get("stop_reason") == "refusal" or response.get("stopReason") == "refusal":
        return "refusal"
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        message = choice.get("message")
        if isinstance(message, dict) and message.get("refusal") or choice.get("finish_reason") == "content_filter":
            return "refusal"
    output = response.get("output")
    if isinstance(output, list):
        for item in output:
            for part in item.get("content", []) if isinstance(item, dict) else []:
                if isinstance(part, dict) and part.get("type") == "refusal":
                    return "refusal"
    return "valid"


def reader_of(origin: dict[str, Any]) -> dict[str, Any]:
    """Who made a call or read a value, as a divergence shows it: its thread, asyncio task and pool task."""
    return {key: origin[key] for key in ("thread", "task", "poolTask") if origin.get(key) is not None}


def describe_reader(reader: dict[str, Any]) -> str:
    """reader_of's, in words: `thread MainThread/worker#2, asyncio task main#1/fetch#3`."""
    parts = [f"pool task {reader['poolTask']}" if "poolTask" in reader else f"thread {reader.get('thread')}"]
    if "task" in reader:
        parts.append(f"asyncio task {reader['task']}")
    return ", ".join(parts)


_SHOWN_FIELDS = {"tool_call": ("name", "args"), "llm_request": ("provider", "model", "request"),
                 "nondeterministic": ("source", "key", "value"), "state_mutation": ("kind", "channel", "key", "value")}


def event_summary(event_type: str, data: dict[str, Any]) -> Any:
    """The part of an event a divergence shows: the call itself, not its bookkeeping (ids, hashes, times)."""
    fields = _SHOWN_FIELDS.get(event_type)
    return {key: data[key] for key in fields if key in data} if fields else data


