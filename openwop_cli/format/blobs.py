"""Content-addressed blobs: large or binary payloads stored once under blobs/sha256/ab/<hex>.

A payload over the threshold becomes `{"$blob": "sha256:<hex>", "size": n, "encoding": e}` in the
event. A blob name is validated as 64 lowercase hex digits before any path is built from it, so a
reference like `sha256:../../etc/passwd` never reaches the filesystem.
"""

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import orjson

from openwop_cli.errors import CorruptCapture, UnsafeBlobReference

BLOB_KEY = "$blob"
BLOB_MARKER = b'"$blob"'
DEFAULT_THRESHOLD = 64 * 1024

_REF = re.compile(r"sha256:([0-9a-f]{64})")


def is_blob_ref(value: Any) -> bool:
    """True for a dict shaped like a blob reference (whether or not its name is valid)."""
    return type(value) is dict and BLOB_KEY in value and set(value) <= {BLOB_KEY, "size", "encoding"}


def blob_digest(ref: Any) -> str:
    """The hex digest named by a blob reference string, or UnsafeBlobReference."""
    match = _REF.fullmatch(ref) if isinstance(ref, str) else None
    if match is None:
        raise UnsafeBlobReference(f"blob reference {ref!r} is not 'sha256:' followed by 64 lowercase hex digits")
    return match.group(1)


class BlobStore:
    """The blobs/ directory of one capture: put bytes in, get bytes out, check they are intact."""

    def __init__(self, capture_dir: Path) -> None:
        self.root = capture_dir / "blobs" / "sha256"

    def path_for(self, ref: str) -> Path:
        """The file a valid reference names (validated first; never a path outside the capture)."""
        digest = blob_digest(ref)
        return self.root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        """Store bytes once (idempotent) and return their reference string."""
        digest = hashlib.sha256(data).hexdigest()
        ref = f"sha256:{digest}"
        path = self.root / digest[:2] / digest
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{digest}.{os.getpid()}.tmp")
            temp.write_bytes(data)
            os.replace(temp, path)
        return ref

    def get(self, ref: str) -> bytes:
        """The bytes of a blob, checked against their name."""
        path = self.path_for(ref)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise CorruptCapture(f"blob {ref} is referenced but missing from {self.root}") from None
        if hashlib.sha256(data).hexdigest() != path.name:
            raise CorruptCapture(f"blob {ref} does not match its sha256 name: the file was changed")
        return data

    def problem(self, ref: Any) -> str | None:
        """Why a reference is unusable (bad name, missing, altered), or None when it is intact."""
        try:
            self.get(ref)
        except (UnsafeBlobReference, CorruptCapture) as exc:
            return exc.message
        return None

    def externalize(self, value: Any, threshold: int) -> Any:
        """Replace bytes, and every string or subtree larger than threshold, by a blob reference."""
        kind = type(value)
        if kind is bytes or kind is bytearray:
            return self.put_ref(bytes(value), "binary")
        if kind is str:
            if len(value) > threshold // 4 and len(encoded := value.encode()) > threshold:
                return self.put_ref(encoded, "utf-8")
            return value
        if kind is dict:
            mapped: Any = {key: self.externalize(item, threshold) for key, item in value.items()}
        elif kind is list:
            mapped = [self.externalize(item, threshold) for item in value]
        else:
            return value
        encoded = orjson.dumps(mapped)
        return self.put_ref(encoded, "json") if len(encoded) > threshold else mapped

    def resolve(self, value: Any) -> Any:
        """Replace blob references by the values they stand for, recursively."""
        if type(value) is dict:
            if is_blob_ref(value):
                return self._load(value)
            return {key: self.resolve(item) for key, item in value.items()}
        if type(value) is list:
            return [self.resolve(item) for item in value]
        return value

    def put_ref(self, data: bytes, encoding: str) -> dict[str, Any]:
        """Store bytes and return the reference an event or manifest holds: {$blob, size, encoding}."""
        return {BLOB_KEY: self.put(data), "size": len(data), "encoding": encoding}

    def _load(self, ref: dict[str, Any]) -> Any:
        data = self.get(ref[BLOB_KEY])
        encoding = ref.get("encoding", "json")
        if encoding == "binary":
            return data
        if encoding == "utf-8":
            return data.decode()
        return self.resolve(orjson.loads(data))


def find_blob_refs(value: Any) -> list[Any]:
    """Every blob reference string inside a JSON value, valid or not."""
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            if is_blob_ref(item):
                found.append(item[BLOB_KEY])
            else:
                stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return found
