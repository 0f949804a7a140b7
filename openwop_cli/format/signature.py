"""A capture's signature: an HMAC-SHA256, under this user's key, of its manifest, so `wop replay` knows a capture
it made itself from one it received.

The signed bytes are a fixed prefix and the manifest without its `signature` field as canonical JSON (the
standard library's, keys sorted, ASCII, no spaces): the command, the working directory, and the events' sha256
(`integrity.eventsHash`), so neither the command nor the events can change under a valid signature. The key is
32 random bytes, hex, in `signing.key` of the user's config directory (platformdirs.user_config_dir("wop")),
created on first use, readable by its owner only; one that others may read is not used. A signature names its
key by a short hash of it, so a capture signed by someone else reads as unsigned here, and one signed here and
changed since as a bad signature.
"""

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from openwop_cli.errors import SigningKeyError

SIGNATURE_FIELD = "signature"
ALGORITHM = "hmac-sha256"
KEY_NAME = "signing.key"
KEY_BYTES = 32
MAX_KEY_FILE_BYTES = 1024
SIGNED_HERE = "signed here"
UNSIGNED = "unsigned"
BAD_SIGNATURE = "bad signature"
_DOMAIN = b"wop manifest signature 1\n"
_cache: dict[str, tuple[Path, bytes]] = {}


class SignatureCheck(NamedTuple):
    """What a capture's signature says here: SIGNED_HERE, UNSIGNED or BAD_SIGNATURE, and why."""

    status: str
    detail: str

    @property
    def signed_here(self) -> bool:
        return self.status == SIGNED_HERE


def key_path() -> Path:
    """Where this user's signing key lives."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("wop", appauthor=False)) / KEY_NAME


def user_key(create: bool = True) -> bytes | None:
    """This user's signing key, created (atomically, 0600 in a 0700 directory) when there is none and create is
    set; None when there is none and create is not. A key file wop cannot use raises SigningKeyError."""
    path = key_path()
    cached = _cache.get("key")
    if cached is not None and cached[0] == path:
        return cached[1]
    try:
        key = _read_key(path)
    except FileNotFoundError:
        if not create:
            return None
        key = _create_key(path)
    _cache["key"] = (path, key)
    return key


def key_id(key: bytes) -> str:
    """A short public name of a key (what a signature says it was made with)."""
    import hashlib

    return hashlib.sha256(b"wop key id\n" + key).hexdigest()[:16]


def signature_for(manifest: dict[str, Any], warn: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """The `signature` field for manifest under this user's key (created on first use); None, with a warning,
    when the key cannot be used (the capture is then unsigned)."""
    try:
        key = user_key(create=True)
    except SigningKeyError as exc:
        if warn is not None:
            warn(f"wop: the capture is not signed: {exc.message}")
        return None
    assert key is not None
    try:
        return {"algorithm": ALGORITHM, "keyId": key_id(key), "value": _mac(key, manifest)}
    except (ValueError, TypeError, RecursionError) as exc:
        if warn is not None:
            warn(f"wop: the capture is not signed: its manifest holds a value JSON cannot write ({exc})")
        return None


def check_signature(manifest: dict[str, Any]) -> SignatureCheck:
    """Whether manifest was signed with this user's key and is unchanged since (never creates the key)."""
    import hmac

    signature = manifest.get(SIGNATURE_FIELD)
    if signature is None:
        return SignatureCheck(UNSIGNED, "the capture carries no signature")
    if (type(signature) is not dict or signature.get("algorithm") != ALGORITHM
            or not all(type(signature.get(name)) is str for name in ("keyId", "value"))):
        return SignatureCheck(BAD_SIGNATURE, f"its signature is not an {ALGORITHM} signature wop writes")
    try:
        key = user_key(create=False)
    except SigningKeyError as exc:
        return SignatureCheck(UNSIGNED, f"this user's signing key cannot be used: {exc.message}")
    if key is None or not hmac.compare_digest(signature["keyId"], key_id(key)):
        return SignatureCheck(UNSIGNED, "it was signed with another key than this user's")
    try:
        expected = _mac(key, manifest)
    except (ValueError, TypeError, RecursionError):
        return SignatureCheck(BAD_SIGNATURE, "its manifest cannot be put in the form that is signed")
    if hmac.compare_digest(signature["value"], expected):
        return SignatureCheck(SIGNED_HERE, "signed with this user's key")
    return SignatureCheck(BAD_SIGNATURE, "it was signed with this user's key and changed since")


def _mac(key: bytes, manifest: dict[str, Any]) -> str:
    import hashlib
    import hmac
    import json

    content = {name: value for name, value in manifest.items() if name != SIGNATURE_FIELD}
    signed = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hmac.new(key, _DOMAIN + signed.encode("ascii"), hashlib.sha256).hexdigest()


def _read_key(path: Path) -> bytes:
    """The key in path (FileNotFoundError when there is none); SigningKeyError when it is not a usable key."""
    from openwop_cli.format.files import read_regular

    text = read_regular(path, MAX_KEY_FILE_BYTES, SigningKeyError, f"the signing key {path}", follow=True)
    mode = os.stat(path).st_mode
    if stat.S_IMODE(mode) & 0o077:
        raise SigningKeyError(f"the signing key {path} may be read by other users: `chmod 600 {path}`")
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) < KEY_BYTES:
        raise SigningKeyError(f"the signing key {path} is not {KEY_BYTES} bytes of hex: delete it, and wop makes "
                              "a new one (captures signed with it then read as unsigned)")
    return key


def _create_key(path: Path) -> bytes:
    """A new key in path, made whole in a temporary file and linked into place, so a wop running at the same
    moment reads either no key or the whole of one; where another got there first, its key is used."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.parent / f".{KEY_NAME}.{os.urandom(6).hex()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(KEY_BYTES).hex().encode("ascii") + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links: the key is written in place, made exclusively
                _write_new(path, temporary.read_bytes())
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as exc:
        raise SigningKeyError(f"cannot create the signing key {path}: {exc.strerror or exc}") from None
    return _read_key(path)


def _write_new(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
