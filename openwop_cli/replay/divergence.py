"""Divergences: where today's run parts ways with the capture, in the shape of capture-replay-design.md.

`jsonPath` comes from deepdiff, computed only for events that differ (deepdiff is imported then).
"""

from dataclasses import dataclass
from typing import Any

EVENT_TYPE_MISMATCH = "event_type_mismatch"
EVENT_PAYLOAD_MISMATCH = "event_payload_mismatch"
EVENT_MISSING = "event_missing"
EVENT_UNEXPECTED = "event_unexpected"
NONDETERMINISTIC_UNDERFLOW = "nondeterministic_underflow"
REFUSAL_DIVERGENCE = "replay_diverged_at_refusal"
NETWORK_BLOCKED = "replay_network_blocked"
CODES = (EVENT_TYPE_MISMATCH, EVENT_PAYLOAD_MISMATCH, EVENT_MISSING, EVENT_UNEXPECTED, NONDETERMINISTIC_UNDERFLOW,
         REFUSAL_DIVERGENCE, NETWORK_BLOCKED)


@dataclass(slots=True)
class Divergence:
    """One divergence: code, the recorded seq it concerns, the JSON path, expected vs observed, a one-line detail."""

    code: str
    event_seq: int | None
    json_path: str | None
    expected: Any
    observed: Any
    detail: str
    event_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape (replay_diverged event data and `--json` reports)."""
        return {"code": self.code, "eventSeq": self.event_seq, "eventType": self.event_type,
                "jsonPath": self.json_path, "expected": self.expected, "observed": self.observed,
                "detail": self.detail}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Divergence":
        """The inverse of to_json."""
        return cls(data.get("code", ""), data.get("eventSeq"), data.get("jsonPath"), data.get("expected"),
                   data.get("observed"), data.get("detail", ""), data.get("eventType"))


def network_blocked(destination: str, site: dict[str, Any] | None,
                    recorded: tuple[int, dict[str, Any]] | None) -> Divergence:
    """replay_network_blocked: the network guard refused a connection to destination (host:port), opened at
    site (observed). recorded is the capture's event for connections there that no adapter recorded, if it
    has one: then `expected` is that connection and `eventSeq` its seq; else both are null."""
    host, _, port = destination.rpartition(":")
    opener = f" (opened by {site['file']}:{site['line']})" if site else ""
    observed = {"host": host, "port": int(port) if port.isdigit() else port, "site": site}
    if recorded is None:
        return Divergence(NETWORK_BLOCKED, None, None, None, observed,
                          f"the program opened a connection to {destination}{opener} and replay blocked it: the "
                          "capture has no call there to serve", None)
    seq, data = recorded
    return Divergence(NETWORK_BLOCKED, seq, None, data.get("value"), observed,
                      f"the program opened a connection to {destination}{opener} and replay blocked it: the capture "
                      f"saw connections there that no adapter recorded (seq {seq}), so nothing can serve them; "
                      "capture it again with --proxy", "nondeterministic")


def first_difference(expected: Any, observed: Any) -> tuple[str | None, Any, Any]:
    """(JSONPath, expected value, observed value) of the first place two JSON values differ; (None, …) if equal."""
    if expected == observed:
        return None, expected, observed
    from deepdiff import DeepDiff

    tree = DeepDiff(expected, observed, verbose_level=2, view="tree")
    changes = sorted((item for items in tree.values() for item in items), key=lambda item: _path_sort_key(item))
    if not changes:
        return "$", expected, observed
    first = changes[0]
    return json_path(first.path(output_format="list")), _present(first.t1), _present(first.t2)


def json_path(parts: list[Any]) -> str:
    """`$.messages[1].content` from deepdiff's list path ['messages', 1, 'content']."""
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
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        if message.get("refusal") or choice.get("finish_reason") == "content_filter":
            return "refusal"
    output = response.get("output")
    if isinstance(output, list):
        for item in output:
            for part in item.get("content", []) if isinstance(item, dict) else []:
                if isinstance(part, dict) and part.get("type") == "refusal":
                    return "refusal"
    return "valid"


_SHOWN_FIELDS = {"tool_call": ("name", "args"), "llm_request": ("provider", "model", "request"),
                 "nondeterministic": ("source", "key", "value"), "state_mutation": ("kind", "channel", "key", "value")}


def event_summary(event_type: str, data: dict[str, Any]) -> Any:
    """The part of an event a divergence shows: the call itself, not its bookkeeping (ids, hashes, times)."""
    fields = _SHOWN_FIELDS.get(event_type)
    return {key: data[key] for key in fields if key in data} if fields else data


def _path_sort_key(item: Any) -> list[Any]:
    return [(0, part) if isinstance(part, int) else (1, str(part)) for part in item.path(output_format="list")]


def _present(value: Any) -> Any:
    """deepdiff marks a side that does not exist with a NotPresent object; JSON says null."""
    return None if type(value).__name__ == "NotPresent" else value
