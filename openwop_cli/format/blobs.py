"""Content-addressed blobs: large or binary payloads stored once under blobs/sha256/ab/<hex>.

A payload over the threshold becomes `{"$blob": "sha256:<hex>", "size": n, "encoding": e}` in the
event. A blob name is validated as 64 lowercase hex digits before any path is built from it, so a
reference like `sha256:../../etc/passwd` never reaches the filesystem; a blob is read only if it is a
regular file (not a link, FIFO or device) of bounded size, and only its owner may read it.
"""

import hashlib
import os
import re
import threading
from pathlib import Path
from typing import Any

import orjson

from openwop_cli.errors import CorruptCapture, UnsafeBlobReference
from openwop_cli.format.files import MAX_BLOB_BYTES, read_regular, remove_if_empty
from openwop_cli.format.schema import MAX_DEPTH

BLOB_KEY = "$blob"
BLOB_MARKER = b'"$blob"'
DEFAULT_THRESHOLD = 64 * 1024
ENCODINGS = ("json", "utf-8", "binary")  # what a blob reference may say its bytes are

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
        path = self.root / digest[:2] / digest
        if not path.exists():
            temp = self._temp_path(digest)
            try:
                write_private(temp, data)
                os.replace(temp, path)
            except BaseException:
                temp.unlink(missing_ok=True)
                raise
        return f"sha256:{digest}"

    def writer(self) -> "BlobWriter":
        """A blob written in pieces, hashed as they come and named once closed (for data too big to hold twice)."""
        return BlobWriter(self)

    def _temp_path(self, digest: str) -> Path:
        """Where a blob whose name will be digest is written before it is renamed into place (its folders made).
        The name is one `wop rm` knows as a blob's temporary file."""
        return self._folder(digest) / f".{digest}.{os.getpid()}.{threading.get_ident()}.tmp"

    def _folder(self, digest: str) -> Path:
        """The folder of the blob named digest, made (with blobs/ and blobs/sha256/) when missing."""
        folder = self.root / digest[:2]
        for directory in (self.root.parent, self.root, folder):
            directory.mkdir(mode=0o700, exist_ok=True)
        return folder

    def get(self, ref: str) -> bytes:
        """The bytes of a blob, checked against their name."""
        path = self.path_for(ref)
        try:
            data = read_regular(path, MAX_BLOB_BYTES, what=f"blob {ref}")
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

    def resolve(self, value: Any, depth: int = 0) -> Any:
        """Replace blob references by the values they stand for, recursively (CorruptCapture when the
        result would nest deeper than wop reads: blobs can hold references to more blobs)."""
        if depth > MAX_DEPTH:
            raise CorruptCapture(f"a value nests deeper than the {MAX_DEPTH} levels wop reads once its blobs are put back")
        if type(value) is dict:
            if is_blob_ref(value):
                return self._load(value, depth)
            return {key: self.resolve(item, depth + 1) for key, item in value.items()}
        if type(value) is list:
            return [self.resolve(item, depth + 1) for item in value]
        return value

    def put_ref(self, data: bytes, encoding: str) -> dict[str, Any]:
        """Store bytes and return the reference an event or manifest holds: {$blob, size, encoding}."""
        return {BLOB_KEY: self.put(data), "size": len(data), "encoding": encoding}

    def _load(self, ref: dict[str, Any], depth: int) -> Any:
        encoding = ref.get("encoding", "json")
        if encoding not in ENCODINGS:
            raise CorruptCapture(f"blob {ref.get(BLOB_KEY)!r} has an encoding wop does not write: {encoding!r}")
        data = self.get(ref[BLOB_KEY])
        try:
            if encoding == "binary":
                return data
            if encoding == "utf-8":
                return data.decode()
            return self.resolve(orjson.loads(data), depth)
        except (UnicodeDecodeError, orjson.JSONDecodeError):
            raise CorruptCapture(f"blob {ref[BLOB_KEY]} does not hold {encoding} data as its reference says") from None


class BlobWriter:
    """One blob written piece by piece into a private temporary file and hashed on the way; `close` names it by
    its digest (or drops it when that blob is already there) and returns its reference."""

    def __init__(self, store: BlobStore) -> None:
        self._store = store
        self._hash = hashlib.sha256()
        self._temp = store._temp_path(os.urandom(32).hex())  # a placeholder digest: unique, and rm's pattern
        self._file = os.fdopen(os.open(self._temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                                       0o600), "wb")

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self._hash.update(data)

    def close(self) -> str:
        """The reference of what was written, stored under its name."""
        self._file.close()
        digest = self._hash.hexdigest()
        path = self._store.root / digest[:2] / digest
        try:
            if path.exists():
                self._temp.unlink()
            else:
                os.replace(self._temp, self._store._folder(digest) / digest)
        except BaseException:
            self.discard()
            raise
        remove_if_empty(self._temp.parent)
        return f"sha256:{digest}"

    def discard(self) -> None:
        """Drop what was written (the capture ends without it)."""
        self._file.close()
        self._temp.unlink(missing_ok=True)
        remove_if_empty(self._temp.parent)


def write_private(path: Path, data: bytes) -> None:
    """Create path readable and writable by its owner only (0600) and write data to it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


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
