"""Where captures live, and how a CAPTURE argument (path, id, unique id prefix, name, `last`) finds one.

Captures go under `$WOP_HOME/captures/<captureId>/`, or the platform's user data dir
(`platformdirs.user_data_dir("wop")`) when WOP_HOME is unset. `--out DIR` captures can live anywhere
and are addressed by path.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openwop_cli.errors import AmbiguousReference, CaptureError, CaptureNotFound, NotACapture
from openwop_cli.format.manifest import MANIFEST_NAME, read_manifest

LAST = "last"


def wop_home() -> Path:
    """WOP_HOME, or the platform's per-user data directory for wop."""
    home = os.environ.get("WOP_HOME")
    if home:
        return Path(home).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("wop", appauthor=False))


def captures_root() -> Path:
    """The directory that holds one sub-directory per stored capture."""
    return wop_home() / "captures"


@dataclass(frozen=True, slots=True)
class StoredCapture:
    """A directory in the store and its manifest (None with a reason when it cannot be read)."""

    path: Path
    manifest: dict[str, Any] | None
    problem: str | None = None

    @property
    def capture_id(self) -> str:
        return self.manifest["captureId"] if self.manifest else self.path.name

    @property
    def created_at(self) -> int:
        created = (self.manifest or {}).get("createdAt")
        return created if isinstance(created, int) else 0


def list_stored(root: Path | None = None) -> list[StoredCapture]:
    """Every capture directory in the store, oldest first; unreadable ones carry their problem."""
    root = captures_root() if root is None else root
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        if entry.is_symlink() or not entry.is_dir() or entry.name.startswith("."):
            continue
        try:
            found.append(StoredCapture(entry, read_manifest(entry)))
        except (CaptureError, NotACapture) as exc:
            found.append(StoredCapture(entry, None, exc.message))
    return sorted(found, key=lambda stored: (stored.created_at, stored.path.name))


def resolve_capture(reference: str, root: Path | None = None) -> Path:
    """The capture directory a CAPTURE argument names, or a clear CaptureNotFound/Ambiguous error."""
    if not reference:
        raise CaptureNotFound("a CAPTURE argument is empty: give a path, an id or prefix, a name, or `last`")
    root = captures_root() if root is None else root
    if reference == LAST:
        return _newest(list_stored(root), root)
    path = Path(reference).expanduser()
    if path.exists():
        return _capture_dir_at(path)
    if os.sep in reference or reference.startswith("."):
        raise CaptureNotFound(f"no capture at {reference}: no such file or directory")
    stored = [entry for entry in list_stored(root) if entry.manifest is not None]
    exact = [entry for entry in stored if entry.capture_id == reference]
    if exact:
        return exact[0].path
    by_prefix = [entry for entry in stored if entry.capture_id.startswith(reference)]
    if len(by_prefix) == 1:
        return by_prefix[0].path
    if len(by_prefix) > 1:
        ids = ", ".join(entry.capture_id for entry in by_prefix[:6])
        raise AmbiguousReference(f"'{reference}' matches {len(by_prefix)} captures ({ids}): type more of the id")
    named = [entry for entry in stored if entry.manifest.get("name") == reference]
    if named:
        return named[-1].path
    raise CaptureNotFound(f"no capture matches '{reference}' (not a path, id, prefix or name in {root}); see `wop ls`")


def _capture_dir_at(path: Path) -> Path:
    if path.is_file():
        if path.name == MANIFEST_NAME:
            return path.parent
        raise NotACapture(f"{path} is a file, not a capture directory")
    if not (path / MANIFEST_NAME).is_file():
        raise NotACapture(f"{path} is not a capture: it has no {MANIFEST_NAME}")
    return path


def _newest(stored: list[StoredCapture], root: Path) -> Path:
    readable = [entry for entry in stored if entry.manifest is not None]
    if not readable:
        raise CaptureNotFound(f"`last` needs at least one capture in {root}, and there is none yet")
    return readable[-1].path


def is_inside_store(path: Path, root: Path | None = None) -> bool:
    """True when path (resolved, symlinks followed) lies strictly inside the store root."""
    root = (captures_root() if root is None else root).resolve()
    resolved = path.resolve()
    return resolved != root and resolved.is_relative_to(root)


CAPTURE_FILES = ("manifest.json", "events.jsonl", "events.crc32")


def delete_capture(path: Path) -> bool:
    """Delete a capture's own files (manifest, events, checksums, blobs); True if the directory went too.

    Files that are not part of the capture are left in place, so pointing this at the wrong
    directory can never take a user's other files with it.
    """
    import shutil

    blobs = path / "blobs"
    if blobs.is_dir() and not blobs.is_symlink():
        shutil.rmtree(blobs)
    for name in CAPTURE_FILES:
        (path / name).unlink(missing_ok=True)
    for leftover in path.glob(".manifest.*.tmp"):
        leftover.unlink(missing_ok=True)
    try:
        path.rmdir()
    except OSError:
        return False
    return True
