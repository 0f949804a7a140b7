"""The capture event envelope: one JSON object per line of events.jsonl.

`{"version":1,"captureId":…,"runId":…,"seq":0,"ts":<epoch ms>,"type":"run_start","data":{…}}`
Events are plain dicts straight from orjson; this module names their parts (format/schema.py checks them).
"""

import os
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
PROXY_ORIGIN = {"pid": 0, "thread": "wop-proxy"}  # the origin of the calls `--proxy` records
# How origins and sites are named (manifest.originScheme): 2, threads and asyncio tasks by lineage and sites by the
# line's text (runtime.lineage, runtime.callsite); a capture without it named them by Python's counters and line
# numbers, which a replay cannot match thread by thread.
ORIGIN_SCHEME = 2
# An integer a capture cannot hold as a JSON number (orjson's range: SMALLEST_INT..LARGEST_INT) is recorded exactly as
# {BIG_INT_TAG: its digits} (wire.jsonable.tag_big_int; hex past Python's decimal-digit limit)
BIG_INT_TAG = "$bigint"
SMALLEST_INT, LARGEST_INT = -(2**63), 2**64 - 1

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


def new_id() -> str:
    """A random 16-hex-digit id (a captureId, a runId): short to type, unique enough to address by prefix."""
    return os.urandom(8).hex()


def big_int_digits(value: Any) -> str | None:
    """The digits a recorded big integer ({BIG_INT_TAG: digits}) holds, or None for any other value."""
    if type(value) is dict and len(value) == 1:
        digits = value.get(BIG_INT_TAG)
        if type(digits) is str:
            return digits
    return None


BYTES_TAG = "$bytes"  # {BYTES_TAG: base64}: bytes as a capture's JSON holds them before the sink stores a blob


def tagged_bytes(value: Any) -> Any:
    """value with bytes as {BYTES_TAG: base64}, as wire.jsonable.json_form writes them: an event redacted before it
    is JSON (the sink redacts a line it could not dump) keys its request as the program's JSON form keys it."""
    kind = type(value)
    if kind is bytes or kind is bytearray:
        import base64  # here: this module loads in every recorded process, which never calls this

        return {BYTES_TAG: base64.b64encode(bytes(value)).decode("ascii")}
    if kind is dict:
        return {key: tagged_bytes(child) for key, child in value.items()}
    if kind is list or kind is tuple:
        return [tagged_bytes(child) for child in value]
    return value


LOCAL_POOL_TASKS = ("threads ", "threadpool ", "queue ")  # origin.poolTask names run by the submitting process's threads


def moves_between_processes(pool_task: str) -> bool:
    """True for a task any of a process pool's workers may run; False for one its own process's threads run."""
    return not pool_task.startswith(LOCAL_POOL_TASKS)


def revived_big_ints(value: Any) -> Any:
    """value with each recorded big integer ({BIG_INT_TAG: digits} of an integer beyond 64 bits) turned back into the
    int; a tagged value inside the 64-bit range is a program's own dict (only those beyond it are ever tagged)."""
    kind = type(value)
    if kind is dict:
        text = big_int_digits(value)
        if text is not None:
            try:
                number = int(text, 0)
            except ValueError:
                return value
            return number if not SMALLEST_INT <= number <= LARGEST_INT else value
        return {key: revived_big_ints(child) for key, child in value.items()}
    if kind is list:
        return [revived_big_ints(child) for child in value]
    return value
