"""Integrity check of a whole capture: envelopes, seq contiguity, hashes, blobs, completeness."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openwop_cli.format.reader import CaptureReader, Problem


@dataclass(slots=True)
class VerifyReport:
    """What `wop verify` found: ok when problems is empty."""

    path: Path
    manifest: dict[str, Any]
    events: int
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
            "problems": [problem.to_json() for problem in self.problems],
        }


def verify_capture(capture_dir: Path) -> VerifyReport:
    """Read every line of a capture and report all that is wrong with it, with line and seq."""
    reader = CaptureReader(capture_dir)
    events = sum(1 for _ in reader.scan_all())
    return VerifyReport(Path(capture_dir), reader.manifest, events, list(reader.problems))
