"""Counterfactual edits: `wop fork CAPTURE --edit SEQ PATH=JSON` serves a recorded result with one value changed.

An edit names a recorded event whose data the program is handed (an llm_response, a tool_result, a
nondeterministic value), a JSONPath into that data (`$.response.choices[0].message.content`) and
the JSON value to put there. Edits are checked against the capture before anything runs, so a typo
is a usage error naming the valid seqs or paths, never a silent no-op.
"""

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from openwop_cli.errors import UsageError
from openwop_cli.format.events import LLM_RESPONSE, NONDETERMINISTIC, TOOL_RESULT

EDITABLE_TYPES = (LLM_RESPONSE, TOOL_RESULT, NONDETERMINISTIC)
MAX_LISTED_PATHS = 12


@dataclass(frozen=True, slots=True)
class Edit:
    """Put `value` at `path` (parts) in the data of the recorded event at `seq`."""

    seq: int
    path: str
    parts: tuple[Any, ...]
    value: Any

    def to_json(self) -> list[Any]:
        """How an edit travels to the replayed program (WOP_EDITS)."""
        return [self.seq, self.path, list(self.parts), self.value]

    @classmethod
    def from_json(cls, item: list[Any]) -> "Edit":
        seq, path, parts, value = item
        return cls(int(seq), str(path), tuple(parts), value)


def parse_edit(seq: int, text: str) -> Edit:
    """`$.response.choices[0].message.content="I can't help"` for seq as an Edit (JSON value; bad input: exit 2)."""
    path, value_text = _split_assignment(text)
    try:
        value = orjson.loads(value_text)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--edit {seq} {text!r}: the value after = must be JSON ({exc}); quote text as "
                         f"'{path}=\"…\"'") from None
    return Edit(seq, path, tuple(parse_path(path)), value)


def parse_path(path: str) -> list[Any]:
    """`$.response.choices[0].content` (relative to an event's data) as its keys and indexes."""
    text = path.strip()
    if not text.startswith("$"):
        raise UsageError(f"--edit path {path!r} must start with $ (the event's data), e.g. $.response.text")
    parts: list[Any] = []
    for piece in text[1:].replace("[", ".[").split("."):
        if not piece:
            continue
        if piece.startswith("[") and piece.endswith("]"):
            inner = piece[1:-1]
            parts.append(int(inner) if inner.lstrip("-").isdigit() else inner.strip("'\""))
        else:
            parts.append(piece)
    return parts


def check_edits(edits: list[Edit], event_at: Any, event_count: int) -> None:
    """Refuse an edit of a seq that is not there, of an event a program is not handed, or of a path it lacks."""
    for edit in edits:
        if not 0 <= edit.seq < event_count:
            raise UsageError(f"--edit {edit.seq}: this capture has seq 0..{event_count - 1}")
        event = event_at(edit.seq)
        if event["type"] not in EDITABLE_TYPES:
            raise UsageError(f"--edit {edit.seq}: that is a {event['type']}; an edit changes what a call returned "
                             f"(an llm_response, tool_result or nondeterministic value){_hint(event)}")
        if event["type"] == LLM_RESPONSE and event["data"].get("stream") is not None and edit.parts[:1] == ("response",):
            raise UsageError(f"--edit {edit.seq}: this answer was streamed; the program is handed $.stream (each "
                             "event's data), so edit a $.stream[N].data text instead of $.response")
        try:
            apply_edits(event["data"], [edit])
        except LookupError:
            listed = list(_paths(event["data"]))
            more = f" (and {len(listed) - MAX_LISTED_PATHS} more)" if len(listed) > MAX_LISTED_PATHS else ""
            raise UsageError(f"--edit {edit.seq}: {edit.path} is not in that {event['type']}; its paths: "
                             f"{', '.join(listed[:MAX_LISTED_PATHS])}{more}") from None


def apply_edits(data: dict[str, Any], edits: list[Edit]) -> dict[str, Any]:
    """A copy of data with every edit made; LookupError when a path leads nowhere."""
    data = copy.deepcopy(data)
    for edit in edits:
        if not edit.parts:
            raise LookupError(edit.path)
        target: Any = data
        for part in edit.parts[:-1]:
            target = _child(target, part)
        last = edit.parts[-1]
        _child(target, last)
        target[last] = copy.deepcopy(edit.value)
    return data


def _child(value: Any, part: Any) -> Any:
    if isinstance(value, dict) and isinstance(part, str) and part in value:
        return value[part]
    if isinstance(value, list) and isinstance(part, int) and -len(value) <= part < len(value):
        return value[part]
    raise LookupError(part)


def _split_assignment(text: str) -> tuple[str, str]:
    depth = 0
    for index, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "=" and depth == 0:
            return text[:index].strip(), text[index + 1:].strip()
    raise UsageError(f"--edit {text!r}: expected PATH=JSON, e.g. '$.response.choices[0].message.content=\"no\"'")


def _paths(value: Any, prefix: str = "$") -> Iterator[str]:
    """Every leaf path of a value, in document order."""
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _paths(child, f"{prefix}.{key}" if str(key).isidentifier() else f"{prefix}[{key!r}]")
    elif isinstance(value, list) and value:
        for index, child in enumerate(value):
            yield from _paths(child, f"{prefix}[{index}]")
    else:
        yield prefix


def _hint(event: dict[str, Any]) -> str:
    kind = event["type"]
    if kind in ("llm_request", "tool_call"):
        return f"; the result of this call is the {'llm_response' if kind == 'llm_request' else 'tool_result'} after it"
    return ""
