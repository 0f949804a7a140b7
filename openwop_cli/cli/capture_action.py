"""What `wop capture` does once its options are parsed: run the command under capture, print the closing line.

Kept free of Typer so the entry point's fast path (cli.entry) can run a capture without building the app.
"""

import sys
from pathlib import Path
from typing import Any


def capture(*, argv: list[str] | None, name: str | None, out: Path | None, redact: str | None, workflow: Path | None,
            proxy: bool, ambient: str | None, strict_transports: bool, json_output: bool,
            record_output: bool = True) -> int:
    """Run argv under capture (redact and ambient, "on" or "off", None: the [tool.wop] settings) and return wop's
    exit code."""
    from openwop_cli.host.launcher import launched_early, run_captured

    command = list(argv or [])
    launch = launched_early(command, out=out, workflow=workflow, proxy=proxy, record_output=record_output)
    try:  # the program's interpreter starts meanwhile; it runs nothing of the program's before its go
        from openwop_cli.config import load_settings, redaction_off_warning
        from openwop_cli.home import captures_root
        from openwop_cli.report.plain import print_warning

        settings = load_settings()
        warning = redaction_off_warning(settings) if redact is None else None
        if warning is not None:
            print_warning(warning)
        outcome = run_captured(
            command,
            out=out,
            name=name,
            redact=redact if redact is not None else settings.redact,
            workflow=workflow,
            warn=lambda message: print_warning(message.removeprefix("wop: ")),
            store_root=captures_root(),
            proxy=proxy,
            ambient=ambient == "on" if ambient is not None else settings.ambient,
            launch=launch,
            record_output=record_output,
        )
    except BaseException:
        if launch is not None:
            launch.cancel()  # where run_captured got that far it ended the launch already: no harm done
        raise
    if not _kept(outcome):
        return _report_deleted(outcome, json_output)
    _print_summary(outcome, json_output)
    if strict_transports and outcome.unrecorded and outcome.exit_code == 0:
        if not json_output:
            from openwop_cli.report.console import print_error

            print_error("--strict-transports: the capture misses connections or child processes wop did not record")
        return 1
    return outcome.exit_code


def _kept(outcome: Any) -> bool:
    """True when the capture's final manifest is on disk and is this run's (not deleted under it by `wop rm`)."""
    from openwop_cli.format.manifest import manifest_hint

    hint = manifest_hint(outcome.path)
    return hint is not None and hint.get("captureId") == outcome.capture_id


def _report_deleted(outcome: Any, json_output: bool) -> int:
    """The capture was deleted while it was written: say so (never "ok"), and exit 3, whatever the program did."""
    from openwop_cli.errors import EXIT_BAD_CAPTURE
    from openwop_cli.format.sink import DELETED

    message = f"{outcome.path}: {DELETED} (by `wop rm` or `wop gc`, or by hand?)"
    if json_output:
        from openwop_cli.cli.output import json_line

        summary = {"captureId": outcome.capture_id, "path": str(outcome.path), "status": "error", "error": message,
                   "exitCode": outcome.exit_code}
        sys.stderr.buffer.write(json_line(summary) + b"\n")
        sys.stderr.flush()
    else:
        from openwop_cli.report.console import print_error

        print_error(message)
    return EXIT_BAD_CAPTURE


def _print_summary(outcome: Any, json_output: bool) -> None:
    manifest = outcome.manifest
    summary = {
        "captureId": outcome.capture_id,
        "path": str(outcome.path),
        "events": manifest.get("eventCount"),
        "status": manifest.get("status"),
        "exitCode": outcome.exit_code,
    }
    if manifest.get("error"):
        summary["error"] = manifest["error"]
    connections = [entry for entry in outcome.unrecorded if "executable" not in entry]
    children = [entry for entry in outcome.unrecorded if "executable" in entry]
    if connections:
        summary["unrecordedConnections"] = connections
    if children:
        summary["unrecordedProcesses"] = children
    if json_output:
        from openwop_cli.cli.output import json_line

        sys.stderr.buffer.write(json_line(summary) + b"\n")
        sys.stderr.flush()
        return
    from openwop_cli.report.escape import clean
    from openwop_cli.report.plain import print_plain

    status = str(summary["status"])
    line = [("captured ", "muted"), (outcome.capture_id, "bold"), ("  ", ""), (clean(outcome.path), "path"),
            (f"  {summary['events']} events  ", ""), (status, "status")]
    if summary.get("error"):
        line.append((f"  ({clean(summary['error'])})", "muted"))
    if outcome.unrecorded:
        from openwop_cli.runtime.connections import describe

        line.append((f"  {clean(describe(outcome.unrecorded))}", "warning"))
    if print_plain(sys.stderr, [line]):
        return
    from rich.text import Text

    from openwop_cli.report.console import make_console, status_style

    styles = {"status": status_style(status)}
    make_console(stderr=True).print(Text.assemble(*((text, styles.get(style, style)) for text, style in line)),
                                    soft_wrap=True)
