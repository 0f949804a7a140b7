"""manifest.json: what a capture is, written atomically at start (incomplete) and at finalize.

Readers accept every older format version and refuse a newer major one with the way to upgrade.

orjson and the shapes (format/shape.py) are imported by the functions that use them: `wop replay` finds its
capture and starts the program before it loads them (orjson's import, dataclasses and uuid with it, is a tenth of that start-up).
"""

import os
from pathlib import Path
from typing import Any

from openwop_cli.errors import CorruptCapture, IncompatibleCapture, NotACapture
from openwop_cli.format.files import MAX_MANIFEST_BYTES, read_regular

MANIFEST_NAME = "manifest.json"
EVENTS_NAME = "events.jsonl"
LINE_CHECKSUMS_NAME = "events.crc32"
FORMAT_VERSION = 1

STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUS_INCOMPLETE = "incomplete"
STATUSES = (STATUS_OK, STATUS_ERROR, STATUS_INCOMPLETE)

UPGRADE_HINT = "upgrade wop: pip install --upgrade openwop-cli"


def manifest_path(capture_dir: Path) -> Path:
    """Where a capture's manifest lives."""
    return capture_dir / MANIFEST_NAME


def format_major(version: Any) -> int:
    """The major part of a manifest/event format version (an int, or a 'major.minor' string)."""
    if isinstance(version, bool):
        raise ValueError(version)
    if isinstance(version, int):
        return version
    if isinstance(version, str):
        return int(version.split(".", 1)[0])
    raise ValueError(version)


def check_compatible(manifest: dict[str, Any], where: Path) -> None:
    """Refuse a manifest of a newer major format version, naming the version and the upgrade."""
    try:
        major = format_major(manifest.get("version"))
    except ValueError:
        raise CorruptCapture(f"{where}: manifest version {manifest.get('version')!r} is not a format version") from None
    if major > FORMAT_VERSION:
        raise IncompatibleCapture(
            f"{where} was written in capture format {manifest['version']}, "
            f"newer than this wop {_tool_version()} reads (format {FORMAT_VERSION}); {UPGRADE_HINT}"
        )


def read_manifest(capture_dir: Path) -> dict[str, Any]:
    """Load and check a capture's manifest: a regular file of bounded size whose every field wop reads has its
    type (format/shape.py); a missing one is NotACapture, anything else wrong is CorruptCapture (exit 3)."""
    import orjson

    from openwop_cli.format.shape import manifest_problem

    path = manifest_path(capture_dir)
    try:
        raw = read_regular(path, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise NotACapture(f"{capture_dir} is not a capture: it has no {MANIFEST_NAME}") from None
    try:
        manifest = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CorruptCapture(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise CorruptCapture(f"{path} must hold a JSON object")
    check_compatible(manifest, capture_dir)
    problem = manifest_problem(manifest)
    if problem is not None:
        raise CorruptCapture(f"{path}: {problem}")
    return manifest


def manifest_hint(capture_dir: Path) -> dict[str, Any] | None:
    """The manifest as its JSON says, unchecked, or None where it cannot be read: what `wop replay` starts the
    program with, gated, before orjson is loaded. Only a hint: the replay reads the manifest with read_manifest and
    cancels a start that the checked manifest does not confirm (ChildLaunch.made_for)."""
    import json

    try:
        hint = json.loads(read_regular(manifest_path(capture_dir), MAX_MANIFEST_BYTES))
    except (OSError, ValueError, RecursionError, CorruptCapture):
        return None
    return hint if isinstance(hint, dict) else None


def write_manifest_atomic(capture_dir: Path, manifest: dict[str, Any], durable: bool = True) -> None:
    """Replace manifest.json in one step (temp file, rename) so readers never see half of it; durable: fsync the
    file before the rename and the directory after, so not even a machine crash leaves half of it."""
    import orjson

    data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    temp = capture_dir / f".manifest.{os.urandom(6).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temp, manifest_path(capture_dir))
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(capture_dir)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _tool_version() -> str:
    from openwop_cli._version import __version__

    return __version__
