"""The `wop verify` report."""

from rich.console import Console
from rich.text import Text

from openwop_cli.format.verify import VerifyReport
from openwop_cli.report.escape import clean

MAX_LISTED = 20


def render_verify(console: Console, report: VerifyReport) -> None:
    """One line when intact; otherwise one line per problem with its line and seq."""
    capture_id = clean(report.manifest.get("captureId", "?"))
    if report.ok:
        console.print(
            Text.assemble(("ok ", "ok"), f"capture {capture_id}: {report.events} events, every field, sha256 and "
                          f"blobs intact, status {clean(report.manifest.get('status'))}, ",
                          (report.signature.status, "ok" if report.signature.signed_here else "warning"), "  ",
                          (clean(report.path), "path")),
            soft_wrap=True,
        )
        if not report.signature.signed_here:
            console.print(Text.assemble(("  unsigned ", "warning"), clean(report.signature.detail),
                                        ": `wop replay` runs its recorded command only if it is a Python script of "
                                        "this directory, or with --trust"), soft_wrap=True)
        lost = report.manifest.get("lost")
        if lost:
            console.print(Text.assemble(("  lost ", "warning"), clean(lost.get("reason") or lost)), soft_wrap=True)
        return
    console.print(
        Text.assemble(("damaged ", "error"), f"capture {capture_id}: {len(report.problems)} problem(s), "
                      f"{report.events} readable events  ", (clean(report.path), "path")),
        soft_wrap=True,
    )
    for problem in report.problems[:MAX_LISTED]:
        console.print(Text.assemble("  - ", (problem.kind, "warning"), f": {clean(problem)}"), soft_wrap=True)
    if len(report.problems) > MAX_LISTED:
        console.print(f"  … and {len(report.problems) - MAX_LISTED} more (use --json for all)", style="muted")
