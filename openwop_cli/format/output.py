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


STEP_BYTES = 1 << 18  # kept output is redacted and stored in steps of about this size while the program runs
_LONGEST_HELD = 16 << 20  # a line (or an unfinished private key) longer than this is cut: memory stays bounded
_KEY_BEGIN, _KEY_END = b"-----BEGIN", b"-----END"  # a private key spans lines: its lines are redacted together


class KeptStream:
    """One stream's entry in the manifest's output, built while the program writes: raw pieces go in (`add`), whole
    lines are redacted a step at a time, and past the blob threshold they go straight into a blob hashed as it is
    written. Finishing a capture (`record`) then has only the last step left, not megabytes to scan and hash."""

    def __init__(self, blobs: BlobStore, redactor: Any, step_bytes: int = STEP_BYTES) -> None:
        self._blobs, self._redactor, self._step_bytes = blobs, redactor, step_bytes
        self._sizes_only = bool(getattr(redactor, "strict", False))
        self._pending = bytearray()
        self._in_call = False
        self._held: list[bytes] = []  # redacted text below the blob threshold, in memory
        self._held_size = 0
        self._writer: Any = None  # a BlobWriter once the text passed the threshold
        self._position = 0  # characters of redacted text so far
        self._call_start = 0
        self._calls: list[list[int]] = []
        self._lines = 0
        self._ends_in_newline = True

    def add(self, in_call: bool, data: bytes) -> None:
        """The next bytes the program wrote (in_call: printed inside a recorded call's body)."""
        if not data:
            return
        if in_call != self._in_call:
            self._settle(everything=True)
            if in_call:
                self._call_start = self._position
            else:
                self._calls.append([self._call_start, self._position])
            self._in_call = in_call
        self._pending += data
        if len(self._pending) >= self._step_bytes:
            self._settle(everything=False)

    def record(self, written: int, truncated: bool) -> dict[str, Any]:
        """The stream's entry (written: bytes the program wrote; truncated: more than was kept)."""
        self._settle(everything=True)
        if self._in_call:
            self._calls.append([self._call_start, self._position])
            self._in_call = False
        record: dict[str, Any] = {"bytes": written, "lines": self._lines + (not self._ends_in_newline)}
        if truncated:
            record["truncated"] = True
        if self._sizes_only:
            record["redacted"] = True
            return record
        if self._calls:
            record["calls"] = self._calls
        if self._writer is not None:
            record["blob"] = self._writer.close()
        else:
            record["text"] = b"".join(self._held).decode("utf-8", errors="surrogatepass")
        return record

    def discard(self) -> None:
        """Drop what was stored (the capture ends without an output entry)."""
        if self._writer is not None:
            self._writer.discard()

    def _settle(self, everything: bool) -> None:
        pending = self._pending
        cut = len(pending) if everything else _step_end(pending)
        if cut <= 0:
            return
        piece = bytes(pending[:cut])
        del pending[:cut]
        self._lines += piece.count(b"\n")
        self._ends_in_newline = piece.endswith(b"\n")
        if self._sizes_only:
            return
        text = piece.decode("utf-8", errors="replace")
        if self._redactor is not None:
            text = self._redactor.scrub_text(text)
        self._position += len(text)
        self._store(text.encode("utf-8", errors="surrogatepass"))

    def _store(self, encoded: bytes) -> None:
        if self._writer is None and self._held_size + len(encoded) <= DEFAULT_THRESHOLD:
            self._held.append(encoded)
            self._held_size += len(encoded)
            return
        if self._writer is None:
            self._writer = self._blobs.writer()
            for held in self._held:
                self._writer.write(held)
            self._held, self._held_size = [], 0
        self._writer.write(encoded)


def _step_end(pending: bytearray) -> int:
    """Where the step taken from pending ends: after its last whole line, before a private key whose end has not
    come yet; 0 to wait for more. Past _LONGEST_HELD it cuts anyway, between two characters."""
    cut = pending.rfind(b"\n") + 1
    key = pending.rfind(_KEY_BEGIN, 0, cut)
    if key >= 0 and pending.find(_KEY_END, key, cut) < 0:
        cut = key
    if cut > 0 or len(pending) < _LONGEST_HELD:
        return cut
    for cut in range(len(pending), len(pending) - 4, -1):  # before the last UTF-8 sequence's first byte
        if pending[cut - 1] < 0x80:
            return cut
        if pending[cut - 1] >= 0xC0:
            return cut - 1
    return len(pending)  # not UTF-8 there: any cut is as good


def output_record(segments: list[tuple[bool, bytes]], written: int, truncated: bool, blobs: BlobStore,
                  redactor: Any) -> dict[str, Any]:
    """One stream's entry in the manifest's output from what was kept of it, (printed inside a recorded call, bytes)
    pieces in order: its text redacted (put in a blob past the threshold), and where the pieces printed inside calls
    are in it (`calls`: [start, end] character offsets)."""
    kept = KeptStream(blobs, redactor)
    for in_call, data in segments:
        kept.add(in_call, data)
    return kept.record(written, truncated)


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
