"""Content keys: how a call today is recognised as a call in the capture, whatever order it comes in.

tool: name + canonical args (a telemetry call: its service and host, replay.telemetry); llm: the recipe cacheKey (canonical request when there is none);
value: source + key; version: change id; state: kind + channel (or variable key) + canonical value
(a TTL entry's value without its `_ts`),
so concurrent writes to one channel find their own recorded writes whatever order threads make
them in (a write whose value changed finds none, and is compared with the channel's next recorded
write instead). Canonical bytes
are computed after the capture's redaction, so a secret in today's arguments still matches the
redacted recording. Keys are Python hashes of those bytes: compared only within one process.
"""

from typing import Any

import orjson

from openwop_cli.channels.reducers import unwrapped
from openwop_cli.replay.telemetry import telemetry_of
from openwop_cli.wire.jsonable import canonical

KIND_TOOL, KIND_LLM, KIND_VALUE, KIND_VERSION, KIND_STATE = 1, 2, 3, 4, 5


def unit_key(kind: int, data: dict[str, Any], redactor: Any = None) -> int:
    """The content key of a recorded or observed event's data (see the module docstring)."""
    if kind == KIND_LLM:
        cache_key = data.get("cacheKey")
        if cache_key:
            return hash((kind, cache_key))
        material: Any = {"provider": data.get("provider"), "model": data.get("model"), "request": data.get("request")}
    elif kind == KIND_TOOL:
        telemetry = telemetry_of(data)
        if telemetry is not None:  # served by service and host, never compared (replay.telemetry)
            return hash((kind, "telemetry", *telemetry))
        material = {"name": data.get("name"), "args": data.get("args")}
    elif kind == KIND_STATE:
        material = {"kind": data.get("kind"), "channel": data.get("channel", data.get("key")),
                    "value": unwrapped(data.get("value"))}
    else:
        return hash((kind, data.get("source"), data.get("key")))
    return hash((kind, canonical_request(material, redactor)))


def canonical_request(material: Any, redactor: Any = None) -> bytes:
    """Canonical bytes of a request, with the capture's redaction applied when it would change anything."""
    encoded = canonical(material)
    if redactor is not None and redactor.suspicious(encoded):
        encoded = canonical(redactor.redact(orjson.loads(encoded)))
    return encoded
