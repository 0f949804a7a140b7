"""The program's stdout and stderr in a capture: the manifest's `output`.

    "output": {"stdout": {"bytes": 5120, "lines": 80, "text": "…"},          # up to the blob threshold: inline
               "stderr": {"bytes": 901120, "lines": 9001, "blob": "sha256:<hex>", "truncated": true}}

`bytes` counts what the program wrote, `lines` what is kept; `truncated` says the program wrote more than was kept
(host.output.MAX_KEPT_BYTES). The text is redacted like every event; under the strict profile only the sizes are
kept (`redacted: true`). A stream with no entry was not recorded (`wop capture --no-output`, or an older capture).
"""

from typing import Any

from openwop_cli.errors import CaptureError, CorruptCapture
from openwop_cli.format.blobs import DEFAULT_THRESHOLD, BlobStore

STREAMS = ("stdout", "stderr")
_FIELDS = {"bytes": int, "lines": int, "text": str, "blob": str, "truncated": bool, "redacted": bool}
_KIND_NAMES = {int: "an integer", str: "a string", bool: "true or false"}


def output_record(segments: list[tuple[bool, bytes]], written: int, truncated: bool, blobs: BlobStore,
                  redactor: Any) -> dict[str, Any]:
    """One stream's entry in the manifest's output from what was kept of it, (printed inside a recorded call, bytes)
    pieces in order: its text redacted (put in a blob past the threshold), and where the pieces printed inside calls
    are in it (`calls`: [start, end] character offsets)."""
    pieces = [(in_call, bytes(data).decode("utf-8", errors="replace")) for in_call, data in segments]
    text = "".join(piece for _, piece in pieces)
    record: dict[str, Any] = {"bytes": written, "lines": text.count("\n") + (not text.endswith("\n") and bool(text))}
    if truncated:
        record["truncated"] = True
    if getattr(redactor, "strict", False):
        record["redacted"] = True
        return record
    calls, position, parts = [], 0, []
    for in_call, piece in pieces:
        piece = redactor.scrub_text(piece) if redactor is not None else piece
        if in_call:
            calls.append([position, position + len(piece)])
        parts.append(piece)
        position += len(piece)
    text = "".join(parts)
    if calls:
        record["calls"] = calls
    encoded = text.encode("utf-8", errors="surrogatepass")
    if len(encoded) > DEFAULT_THRESHOLD:
        record["blob"] = blobs.put(encoded)
    else:
        record["text"] = text
    return record


def recorded_text(manifest: dict[str, Any], blobs: BlobStore, stream: str, outside_calls: bool = False) -> str | None:
    """The text a capture kept of one stream (None: not recorded, or only its size), read and checked as any blob;
    outside_calls: without what was printed inside recorded calls (what a replay compares)."""
    text = _text(manifest, blobs, stream)
    if text is None or not outside_calls:
        return text
    record = manifest["output"][stream]
    kept, position = [], 0
    for start, end in record.get("calls") or ():
        kept.append(text[position:start])
        position = max(position, end)
    kept.append(text[position:])
    return "".join(kept)


def _text(manifest: dict[str, Any], blobs: BlobStore, stream: str) -> str | None:
    output = manifest.get("output")
    record = output.get(stream) if isinstance(output, dict) else None
    if not isinstance(record, dict):
        return None
    problem = output_problem(record, stream)
    if problem is not None:
        raise CorruptCapture(f"the manifest's output is damaged: {problem}")
    if "text" in record:
        return record["text"]
    if "blob" in record:
        try:
            return blobs.get(record["blob"]).decode("utf-8", errors="replace")
        except CaptureError as exc:
            raise CorruptCapture(f"the manifest's output.{stream}: {exc}") from None
    return None


def output_problem(record: Any, stream: str) -> str | None:
    """What is wrong with one stream's entry (which field, what it must be), or None."""
    where = f"output.{stream}"
    if type(record) is not dict:
        return f"field {where} must be an object"
    for field, kind in _FIELDS.items():
        if field in record and type(record[field]) is not kind:
            return f"field {where}.{field} must be {_KIND_NAMES[kind]}"
    if "text" in record and "blob" in record:
        return f"field {where} holds both text and blob"
    calls = record.get("calls", [])
    if type(calls) is not list or not all(type(pair) is list and len(pair) == 2 and all(type(at) is int and at >= 0
                                                                                        for at in pair)
                                          for pair in calls):
        return f"field {where}.calls must be a list of [start, end] offsets"
    return None
