"""What a run was: command line, interpreter, platform, environment names, and the files it ran.

Pin-at-run-start: the manifest's `program` names the script and every local module the run
imported with its sha256 and a blob holding its (redacted) text, so a later replay can say exactly
which file changed since the capture. Environment variables are recorded by name only.
"""

import os
import sys
from collections.abc import Iterable
from typing import Any

# This module runs at exit in every recorded process (local_modules): heavier imports stay inside
# the functions the capturing parent calls.

ENV_WORKFLOW = "WOP_WORKFLOW"  # set to the pinned workflow's sha256 when `wop capture --workflow` pinned one
_WOP_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep  # the recorder, not the program
_THIRD_PARTY_PARTS = frozenset({"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", "node_modules"})


def run_start_data(argv: list[str], cwd: str, python: str | None) -> dict[str, Any]:
    """The run_start event's data (python: the program's interpreter version, None if not Python).

    The environment is recorded by variable names only, never values.
    """
    return {"argv": argv, "cwd": cwd, "python": python, "platform": platform_name(), "env": sorted(os.environ)}


def platform_name() -> str:
    """OS, release and machine, e.g. Linux-6.8.0-x86_64 (cheap: no probing of the C library)."""
    import platform

    uname = platform.uname()
    return f"{uname.system}-{uname.release}-{uname.machine}"


def local_modules(cwd: str) -> list[list[str]]:
    """[name, path] of every imported module whose file lives under cwd (not a venv or site-packages)."""
    root = os.path.realpath(cwd) + os.sep
    found, real_directories = [], {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.endswith(".py"):
            continue
        real = _real_path(path, real_directories)
        if real.startswith(root) and not real.startswith(_WOP_PACKAGE) and not _THIRD_PARTY_PARTS.intersection(real[len(root):].split(os.sep)):
            found.append([name, real])
    return sorted(found)


def _real_path(path: str, real_directories: dict[str, str]) -> str:
    """os.path.realpath(path), resolving each directory once: a process imports hundreds of modules from a few
    directories, and resolving a path costs a system call per component."""
    if not os.path.isabs(path) or os.sep + ".." in path or os.path.islink(path):
        return os.path.realpath(path)
    directory, name = os.path.split(path)
    real_directory = real_directories.get(directory)
    if real_directory is None:
        real_directory = real_directories[directory] = os.path.realpath(directory)
    return os.path.join(real_directory, name)


def script_of(argv: list[str]) -> Any:
    """The Python script a command line runs (`python x.py`, `./x.py`, `x.py`), or None."""
    for arg in argv[:3]:
        if arg.endswith(".py") and os.path.isfile(arg):
            from pathlib import Path

            return Path(arg)
    return None


def pin_files(paths: Iterable[Any], cwd: str, store: Any, scrub: Any) -> list[dict[str, Any]]:
    """One pin per readable file: path (relative to cwd when inside it), sha256 and blob of its redacted text.

    store is a BlobStore; scrub removes secrets from text before it is stored. The sha256 is of what is kept
    (pinned_text), never of the file's own bytes: with the redacted copy beside it, a hash of the real file would
    let a dictionary find the secret it held.
    """
    from pathlib import Path

    from openwop_cli.errors import UsageError
    from openwop_cli.format.files import MAX_INPUT_BYTES, read_regular

    pins, seen = [], set()
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            kept = pinned_text(read_regular(Path(real), MAX_INPUT_BYTES, UsageError, follow=True), scrub)
            blob = store.put_ref(kept, "utf-8")
        except (OSError, UsageError):  # gone, not a plain file, too big, or no room to store it: not pinned
            continue
        pins.append({"path": _relative(real, cwd), "sha256": pinned_sha256(kept), "blob": blob})
    return pins


def pinned_text(content: bytes, scrub: Any) -> bytes:
    """What a pin keeps of a file's bytes: its text (UTF-8, undecodable bytes replaced) with secrets removed."""
    return scrub(content.decode("utf-8", errors="replace")).encode("utf-8")


def pinned_sha256(kept: bytes) -> str:
    """A pin's sha256: of the text kept (pinned_text). A replay compares today's file by the same."""
    import hashlib

    return hashlib.sha256(kept).hexdigest()


def pinned_workflow(manifest: dict[str, Any], blobs: Any) -> Any:
    """The workflow document a capture pinned (`wop capture --workflow F`), from its stored copy; None without one."""
    pinned = (manifest.get("program") or {}).get("workflow")
    if not isinstance(pinned, dict) or not isinstance(pinned.get("blob"), dict):
        return None
    return blobs.resolve(pinned["blob"])


def pinned_channels(manifest: dict[str, Any], blobs: Any) -> dict[str, Any]:
    """The `channels` declared by the workflow a capture pinned, if any ({} without one)."""
    workflow = pinned_workflow(manifest, blobs)
    channels = workflow.get("channels") if isinstance(workflow, dict) else None
    return channels if isinstance(channels, dict) else {}


def _relative(path: str, cwd: str) -> str:
    try:
        return os.path.relpath(path, cwd) if path.startswith(os.path.realpath(cwd) + os.sep) else path
    except ValueError:
        return path


def run_end_data(exit_code: int | None, error: BaseException | None, duration_seconds: float) -> dict[str, Any]:
    """The run_end event's data: exit code, status (ok only for a clean exit), duration, the error if any."""
    if isinstance(error, SystemExit):
        code = error.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        error = None
    if isinstance(error, KeyboardInterrupt):
        reason: str | None = "interrupted (KeyboardInterrupt)"
    elif error is not None:
        reason = f"{type(error).__name__}: {error}"
    elif exit_code:
        reason = f"exited with code {exit_code}"
    else:
        reason = None
    end: dict[str, Any] = {
        "exitCode": exit_code if exit_code is not None else (1 if error is not None else 0),
        "status": "error" if reason else "ok",
        "durationMs": round(duration_seconds * 1000),
    }
    if reason:
        end["error"] = reason
    return end
