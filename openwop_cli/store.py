"""Where captures live, and how a CAPTURE argument (path, id, unique id prefix, name, `last`) finds one.

Captures go under `$WOP_HOME/captures/<captureId>/`, or the platform's user data dir
(`platformdirs.user_data_dir("wop")`) when WOP_HOME is unset. `--out DIR` captures can live anywhere
and are addressed by path.
"""

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from openwop_cli.errors import AmbiguousReference, CaptureError, CaptureNotFound, NotACapture
from openwop_cli.format.files import MAX_LINE_BYTES, open_regular, remove_if_empty
from openwop_cli.format.manifest import EVENTS_NAME, MANIFEST_NAME, read_manifest
from openwop_cli.format.writerlock import LOCK_NAME, being_written
from openwop_cli.heldsignals import imported_held
from openwop_cli.home import captures_root

LAST = "last"


class StoredCapture(NamedTuple):
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
    imported_held("orjson")  # the manifests' reader loads it: a Ctrl-C in its initialization would crash wop
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
    named = [entry for entry in stored if entry.manifest is not None and entry.manifest.get("name") == reference]
    if named:
        return named[-1].path
    raise CaptureNotFound(f"no capture matches '{reference}' (not a path, id, prefix or name in {root}); see `wop ls`")


def find_captures(references: list[str], warn: Callable[[str], None] = lambda message: None) -> list[Path]:
    """Each reference resolved; a directory that is not a capture stands for every capture below it
    (hidden directories and captures the pytest plugin made, which pytest replays, left out)."""
    found: list[Path] = []
    for reference in references:
        if not is_directory_of_captures(reference):
            found.append(resolve_capture(reference))
            continue
        path = Path(reference).expanduser()
        inside = captures_under(path)
        runnable = [capture for capture in inside if not recorded_by_pytest(capture)]
        if len(runnable) < len(inside):
            warn(f"{len(inside) - len(runnable)} captures under {path} were recorded by the pytest plugin "
                 "and are replayed by pytest, not here")
        if not runnable:
            raise CaptureNotFound(f"no captures to replay under {path}")
        found.extend(runnable)
    return found


def is_directory_of_captures(reference: str) -> bool:
    """True when reference is a directory that is not itself a capture (it stands for the captures below it); one
    holding a manifest.json of any kind (a FIFO, a directory, a dangling link) is a capture, which its reader refuses."""
    path = Path(reference).expanduser()
    return path.is_dir() and not os.path.lexists(path / MANIFEST_NAME)


def captures_under(directory: Path) -> list[Path]:
    """Capture directories below directory, sorted, not looking into hidden directories."""
    return sorted(manifest.parent for manifest in directory.rglob(MANIFEST_NAME)
                  if not any(part.startswith(".") for part in manifest.relative_to(directory).parts))


def recorded_by_pytest(capture: Path) -> bool:
    """True for a capture the pytest plugin made (its own test replays it)."""
    try:
        return bool((read_manifest(capture).get("program") or {}).get("pytest"))
    except (CaptureError, NotACapture):
        return False


def _capture_dir_at(path: Path) -> Path:
    if path.is_file():
        if path.name == MANIFEST_NAME:
            return path.parent
        raise NotACapture(f"{path} is a file, not a capture directory")
    if not os.path.lexists(path / MANIFEST_NAME):
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


CAPTURE_FILES = ("manifest.json", "events.jsonl", "events.crc32", ".wop-reserve", LOCK_NAME)
_TEMP_FILE = re.compile(r"\.manifest\..*\.tmp")  # a manifest written by write_manifest_atomic, cut short
_BLOB_DIR = re.compile(r"[0-9a-f]{2}")
_BLOB_FILE = re.compile(r"[0-9a-f]{64}|\.[0-9a-f]{64}\..*\.tmp")


class Deletion(NamedTuple):
    """What deleting a capture did: the directory is gone, or these entries (not wop's) were kept."""

    path: Path
    kept: tuple[str, ...]

    @property
    def removed(self) -> bool:
        return not self.kept


def deletable_problem(path: Path) -> str | None:
    """Why wop must not delete the directory at path, or None for a valid wop capture: a real directory
    (not a link) whose manifest is a valid wop manifest (its `tool` says wop) and whose events carry its
    captureId, and that no running wop is writing. A web app with a manifest.json and a blobs/ folder is not one."""
    if path.is_symlink():
        return "it is a symbolic link"
    if not path.is_dir():
        return "it is not a directory"
    if being_written(path):
        return "a running wop is writing it (a capture, replay or fork in progress); try again once it has ended"
    try:
        manifest = read_manifest(path)
    except (CaptureError, NotACapture) as exc:
        return f"its manifest is not a valid wop manifest ({exc.message})"
    if (manifest.get("tool") or {}).get("name") != "wop":
        return "its manifest was not written by wop"
    try:
        with open_regular(path / EVENTS_NAME) as handle:
            first = handle.readline(MAX_LINE_BYTES)
    except (FileNotFoundError, CaptureError):
        return f"it has no {EVENTS_NAME} that wop wrote"
    if first and _capture_id_of(first) != manifest["captureId"]:
        return f"its {EVENTS_NAME} belongs to another capture than its manifest names"
    return None


def delete_capture(path: Path) -> Deletion:
    """Delete the files wop writes in a capture (manifest, events, checksums, blobs, its temp files), never
    following a link; whatever else is there stays, and is listed. Check deletable_problem first."""
    kept: list[str] = []
    for entry in sorted(os.listdir(path)):
        target = path / entry
        if entry == "blobs" and _is_real_dir(target):
            kept.extend(f"blobs/{name}" for name in _delete_blobs(target))
        elif (entry in CAPTURE_FILES or _TEMP_FILE.fullmatch(entry)) and _is_regular(target):
            target.unlink()
        else:
            kept.append(entry + ("/" if _is_real_dir(target) else ""))
    remove_if_empty(path)
    return Deletion(path, tuple(kept))


def _delete_blobs(blobs: Path) -> list[str]:
    """Delete blobs/sha256/<ab>/<hex> files and the directories left empty; the names of anything else."""
    kept: list[str] = []
    root = blobs / "sha256"
    for entry in sorted(os.listdir(blobs)):
        if entry != "sha256" or not _is_real_dir(root):
            kept.append(entry)
    if _is_real_dir(root):
        for prefix in sorted(os.listdir(root)):
            folder = root / prefix
            if not (_BLOB_DIR.fullmatch(prefix) and _is_real_dir(folder)):
                kept.append(f"sha256/{prefix}")
                continue
            for name in sorted(os.listdir(folder)):
                if _BLOB_FILE.fullmatch(name) and _is_regular(folder / name):
                    (folder / name).unlink()
                else:
                    kept.append(f"sha256/{prefix}/{name}")
            remove_if_empty(folder)
        remove_if_empty(root)
    remove_if_empty(blobs)
    return kept


def _capture_id_of(line: bytes) -> Any:
    import orjson  # here: `wop replay` finds its capture before it loads orjson (see format.manifest)

    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return event.get("captureId") if type(event) is dict else None


def _is_real_dir(path: Path) -> bool:
    return stat.S_ISDIR(path.lstat().st_mode) if os.path.lexists(path) else False


def _is_regular(path: Path) -> bool:
    return stat.S_ISREG(path.lstat().st_mode) if os.path.lexists(path) else False

