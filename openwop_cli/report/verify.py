"""The `wop verify` report."""

from rich.console import Console
from rich.text import Text

from openwop_cli.format.verify import VerifyReport

MAX_LISTED = 20


def render_verify(console: Console, report: VerifyReport) -> None:
    """One line when intact; otherwise one line per problem with its line and seq."""
    capture_id = report.manifest.get("captureId", "?")
    if report.ok:
        console.print(
            Text.assemble(("ok ", "ok"), f"capture {capture_id}: {report.events} events, sha256 and blobs intact, "
                          f"status {report.manifest.get('status')}  ", (str(report.path), "path")),
            soft_wrap=True,
        )
        return
    console.print(
        Text.assemble(("damaged ", "error"), f"capture {capture_id}: {len(report.problems)} problem(s), "
                      f"{report.events} readable events  ", (str(report.path), "path")),
        soft_wrap=True,
    )
    for problem in report.problems[:MAX_LISTED]:
        console.print(Text.assemble("  - ", (problem.kind, "warning"), f": {problem}"), soft_wrap=True)
    if len(report.problems) > MAX_LISTED:
        console.print(f"  … and {len(report.problems) - MAX_LISTED} more (use --json for all)", style="muted")
