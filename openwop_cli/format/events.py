"""The capture event envelope: one JSON object per line of events.jsonl.

`{"version":1,"captureId":…,"runId":…,"seq":0,"ts":<epoch ms>,"type":"run_start","data":{…}}`
Events are plain dicts straight from orjson; this module names their parts and checks their shape.
"""

from typing import Any

EVENT_VERSION = 1

RUN_START = "run_start"
RUN_END = "run_end"
LLM_REQUEST = "llm_request"
LLM_RESPONSE = "llm_response"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
STATE_MUTATION = "state_mutation"
NONDETERMINISTIC = "nondeterministic"
REPLAY_DIVERGED = "replay_diverged"
REPLAY_NOTE = "replay_note"  # something a replay did that is worth saying but is not a divergence

EVENT_TYPES = frozenset(
    {
        RUN_START,
        RUN_END,
        LLM_REQUEST,
        LLM_RESPONSE,
        TOOL_CALL,
        TOOL_RESULT,
        STATE_MUTATION,
        NONDETERMINISTIC,
        REPLAY_DIVERGED,
        REPLAY_NOTE,
    }
)


def envelope_problem(event: Any) -> str | None:
    """What is wrong with an event's envelope, or None when it has the contract's shape."""
    if type(event) is not dict:
        return "an event must be a JSON object"
    version = event.get("version")
    if type(version) is not int:
        return "version must be an integer"
    if version > EVENT_VERSION:
        return f"event version {version} is newer than this wop reads ({EVENT_VERSION})"
    if type(event.get("seq")) is not int:
        return "seq must be an integer"
    if type(event.get("ts")) is not int:
        return "ts must be integer epoch milliseconds"
    if event.get("type") not in EVENT_TYPES:
        return f"unknown event type {event.get('type')!r}"
    if type(event.get("data")) is not dict:
        return "data must be a JSON object"
    if type(event.get("captureId")) is not str or type(event.get("runId")) is not str:
        return "captureId and runId must be strings"
    return None
