"""Integrity check of a whole capture: every field of the manifest and of every event (format/schema.py),
seq contiguity, the sha256 and per-line checksums, every blob (pinned sources too), completeness, and whose
signature it carries (format/signature.py): signed here, unsigned, or a bad signature (a problem: the manifest
changed since this user's wop signed it)."""

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openwop_cli.format.reader import CaptureReader, Problem
from openwop_cli.format.signature import BAD_SIGNATURE, SignatureCheck, check_signature


@dataclass(slots=True)
class VerifyReport:
    """What `wop verify` found: ok when problems is empty."""

    path: Path
    manifest: dict[str, Any]
    events: int
    signature: SignatureCheck
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """The stable `wop verify --json` shape."""
        return {
            "captureId": self.manifest.get("captureId"),
            "path": str(self.path),
            "status": self.manifest.get("status"),
            "ok": self.ok,
            "events": self.events,
            "signature": self.signature.status,
            "signatureDetail": self.signature.detail,
            "problems": [problem.to_json() for problem in self.problems],
        }


def verify_capture(capture_dir: Path) -> VerifyReport:
    """Read every line of a capture and report all that is wrong with it, with line and seq."""
    reader = CaptureReader(capture_dir)
    deque(reader.scan_all(), maxlen=0)
    signature = check_signature(reader.manifest)
    problems = list(reader.problems)
    if signature.status == BAD_SIGNATURE:
        problems.append(Problem("bad_signature", f"manifest.json: {BAD_SIGNATURE}: {signature.detail}"))
    return VerifyReport(Path(capture_dir), reader.manifest, reader.events_read, signature, problems)
