"""What `wop export otel` does once its options are parsed: captures as OpenTelemetry traces, sent or written.

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

import os
from pathlib import Path


def export_otel(*, captures: list[str], endpoint: str | None, project: str | None, file: Path | None,
                json_output: bool) -> int:
    """Send each capture as one trace to endpoint (or write them to file), print what went; returns wop's exit
    code."""
    from openwop_cli.errors import UsageError
    from openwop_cli.export.otel import endpoint_url, export_captures, shown_url
    from openwop_cli.store import resolve_capture

    if file is not None and endpoint:
        raise UsageError("--file and --endpoint do not go together: write the traces to a file or send them")
    url = endpoint_url(endpoint, dict(os.environ)) if file is None else str(file)
    shown = shown_url(url) if file is None else url
    traces = export_captures([resolve_capture(capture) for capture in captures], None if file else url, project,
                             file=file)
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json([{"capture": str(trace.capture), "captureId": trace.capture_id, "traceId": trace.trace_id,
                     "spans": trace.spans, "endpoint": shown} for trace in traces])
        return 0
    from rich.text import Text

    from openwop_cli.report.console import make_console
    from openwop_cli.report.summary import plural

    console = make_console()
    for trace in traces:
        console.print(Text.assemble(("exported ", "muted"), (trace.capture_id, "bold"), "  ", (str(trace.capture), "path"),
                                    f"  as trace {trace.trace_id} ({plural(trace.spans, 'span')}) to {shown}"),
                      soft_wrap=True)
    return 0
