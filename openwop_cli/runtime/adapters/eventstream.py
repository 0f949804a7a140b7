"""The AWS event stream (Bedrock ConverseStream, InvokeModelWithResponseStream): split for the record,
encoded back into valid frames for a replay, and assembled into the message it adds up to.

A frame is: total length and headers length (4 bytes each, big-endian), the CRC32 of those 8 bytes,
the headers, the payload, and the CRC32 of everything before it. A header is its name's length
(1 byte), the name, a value type (1 byte) and the value; strings (type 7) are a 2-byte length and
UTF-8, the only type Bedrock sends. An event is recorded as `{"headers": {name: value}, "data":
payload text}` — a value of another type as `{"type": n, "base64": bytes}`, a payload that is not
UTF-8 as `dataBase64` — so a replay re-encodes frames that botocore's parser accepts byte for byte.
"""

import base64
import struct
import zlib
from typing import Any

import orjson

from openwop_cli.runtime.adapters import sse

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7
_FIXED_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}


def split_frames(body: bytes) -> list[dict[str, Any]]:
    """The events of an event-stream body, in order (a frame cut off at the end is left out)."""
    events = []
    offset = 0
    while offset + 16 <= len(body):
        total, headers_length = struct.unpack_from(">II", body, offset)
        if total < 16 or offset + total > len(body):
            break
        start = offset + 12
        event: dict[str, Any] = {"headers": _headers(body[start:start + headers_length])}
        payload = body[start + headers_length:offset + total - 4]
        try:
            event["data"] = payload.decode("utf-8")
        except UnicodeDecodeError:
            event["dataBase64"] = base64.b64encode(payload).decode("ascii")
        events.append(event)
        offset += total
    return events


def frame_bytes(event: dict[str, Any]) -> bytes:
    """One recorded event as a frame on the wire, CRCs included."""
    headers = b"".join(_header_bytes(name, value) for name, value in (event.get("headers") or {}).items())
    payload = (base64.b64decode(event["dataBase64"]) if "dataBase64" in event
               else str(event.get("data", "")).encode("utf-8"))
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def assemble(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The message a Bedrock stream adds up to: text, toolCalls, stopReason, usage.

    ConverseStream events are read by their `:event-type`; InvokeModelWithResponseStream wraps the
    model's own stream events in `chunk` events (base64 `bytes`), which are assembled as that model's
    stream (Anthropic's shape, the common case).
    """
    text, calls, stop, usage, inner = [], {}, None, None, []
    for event in events:
        kind = (event.get("headers") or {}).get(":event-type")
        payload = _json(event.get("data"))
        if kind == "chunk" and isinstance(payload.get("bytes"), str):
            inner.append({"data": base64.b64decode(payload["bytes"]).decode("utf-8", errors="replace")})
        elif kind == "contentBlockStart":
            tool = (payload.get("start") or {}).get("toolUse") or {}
            calls[payload.get("contentBlockIndex", 0)] = {"id": tool.get("toolUseId"), "name": tool.get("name"),
                                                         "arguments": ""}
        elif kind == "contentBlockDelta":
            delta = payload.get("delta") or {}
            if isinstance(delta.get("text"), str):
                text.append(delta["text"])
            if isinstance(delta.get("toolUse"), dict):
                slot = calls.setdefault(payload.get("contentBlockIndex", 0), {"id": None, "name": None,
                                                                              "arguments": ""})
                slot["arguments"] += delta["toolUse"].get("input") or ""
        elif kind == "messageStop":
            stop = payload.get("stopReason")
        elif kind == "metadata":
            usage = payload.get("usage")
    if inner:
        return sse.assemble("anthropic", inner)
    return {"text": "".join(text), "toolCalls": [calls[index] for index in sorted(calls)], "stopReason": stop,
            "usage": usage}


def _headers(raw: bytes) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    offset = 0
    while offset < len(raw):
        name_length = raw[offset]
        name = raw[offset + 1:offset + 1 + name_length].decode("utf-8", errors="replace")
        kind = raw[offset + 1 + name_length]
        offset += 2 + name_length
        if kind in _FIXED_SIZES:
            size = _FIXED_SIZES[kind]
            value = raw[offset:offset + size]
        else:
            (size,) = struct.unpack_from(">H", raw, offset)
            offset += 2
            value = raw[offset:offset + size]
        offset += size
        headers[name] = (value.decode("utf-8") if kind == _STRING
                         else {"type": kind, "base64": base64.b64encode(value).decode("ascii")})
    return headers


def _header_bytes(name: str, value: Any) -> bytes:
    encoded = name.encode("utf-8")
    if isinstance(value, dict):
        kind, raw = int(value.get("type", 6)), base64.b64decode(value.get("base64", ""))
    else:
        kind, raw = _STRING, str(value).encode("utf-8")
    head = bytes([len(encoded)]) + encoded + bytes([kind])
    return head + (raw if kind in _FIXED_SIZES else struct.pack(">H", len(raw)) + raw)


def _json(text: Any) -> dict[str, Any]:
    try:
        value = orjson.loads(text) if isinstance(text, str) else None
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
