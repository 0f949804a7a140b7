"""The source change at a divergence: when the call that diverged sits in a program file pinned at capture time
that has changed since, the unified diff of that file, the hunks around the call first.

A replay knows where today's call was made (the divergence's `site`) and the capture pins every local
file the run imported (pin-at-run-start), so the report can show the code change next to the data change.
"""

import difflib
import hashlib
import os
from pathlib import Path
from typing import Any

from openwop_cli.errors import CaptureError
from openwop_cli.format.blobs import BlobStore
from openwop_cli.format.redact import Redactor
from openwop_cli.runtime.program import pinned_sha256, pinned_text

CONTEXT_LINES = 3
MAX_HUNKS = 6


def source_change(manifest: dict[str, Any], capture_dir: Path, site: dict[str, Any] | None,
                  cwd: Path) -> dict[str, Any] | None:
    """{file, line, function, pinnedSha256, currentSha256, hunks} for the pinned file holding site, if it changed."""
    if not isinstance(site, dict) or not isinstance(site.get("file"), str):
        return None
    pin = _pin_for(manifest, site["file"], cwd)
    if pin is None:
        return None
    today_path = Path(pin["path"]) if os.path.isabs(pin["path"]) else cwd / pin["path"]
    try:
        today_bytes = today_path.read_bytes()
    except OSError:
        return None
    today_kept = pinned_text(today_bytes, Redactor.of_capture(manifest).scrub_text)  # never a secret of today's file
    today_sha = pinned_sha256(today_kept)
    if pin.get("sha256") in (today_sha, hashlib.sha256(today_bytes).hexdigest()):  # or a pin of the file itself (before 0.2)
        return None
    try:
        pinned = BlobStore(capture_dir).resolve(pin.get("blob"))
    except CaptureError:  # a pin whose copy is missing or damaged: the hashes still say it changed
        pinned = None
    hunks = _hunks(pinned, today_kept.decode("utf-8"), site.get("line"), pin["path"]) if isinstance(pinned, str) else []
    return {"file": pin["path"], "line": site.get("line"), "function": site.get("function"),
            "pinnedSha256": pin.get("sha256"), "currentSha256": today_sha, "hunks": hunks}


def _pin_for(manifest: dict[str, Any], file: str, cwd: Path) -> dict[str, Any] | None:
    program = manifest.get("program") or {}
    wanted = os.path.realpath(file if os.path.isabs(file) else cwd / file)
    for pin in [*(program.get("script") or []), *(program.get("modules") or [])]:
        if not isinstance(pin, dict) or not isinstance(pin.get("path"), str):
            continue
        pinned = pin["path"] if os.path.isabs(pin["path"]) else str(cwd / pin["path"])
        if os.path.realpath(pinned) == wanted:
            return pin
    return None


def _hunks(pinned: str, today: str, line: Any, name: str) -> list[dict[str, Any]]:
    """Unified-diff hunks of pinned → today, the one nearest today's line first."""
    diff = list(difflib.unified_diff(pinned.splitlines(), today.splitlines(), f"{name} (captured)",
                                     f"{name} (today)", n=CONTEXT_LINES, lineterm=""))
    hunks: list[dict[str, Any]] = []
    for text in diff[2:]:
        if text.startswith("@@"):
            start = int(text.split("+")[1].split(",")[0].split(" ")[0])
            hunks.append({"header": text, "start": start, "lines": []})
        elif hunks:
            hunks[-1]["lines"].append(text)
    for hunk in hunks:
        length = sum(1 for text in hunk["lines"] if not text.startswith("-"))
        hunk["distance"] = 0 if isinstance(line, int) and hunk["start"] <= line < hunk["start"] + length else \
            min(abs(hunk["start"] - line), abs(hunk["start"] + length - line)) if isinstance(line, int) else 0
    hunks.sort(key=lambda hunk: hunk["distance"])
    return [{"header": hunk["header"], "lines": hunk["lines"]} for hunk in hunks[:MAX_HUNKS]]
