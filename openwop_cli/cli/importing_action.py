"""What `wop import vcr` and `wop import otel` do once their options are parsed: recordings other tools made, as
captures `wop replay` serves.

Kept free of Typer so the entry point's fast path (cli.entry) can run them without building the app.
"""

from pathlib import Path
from typing import Any


def import_vcr(*, cassette: Path, argv: list[str] | None, name: str | None, out: Path | None, redact: str | None,
               json_output: bool) -> int:
    """Import the cassette as a capture (redact: a profile, None: [tool.wop]'s), print it; returns wop's exit code."""
    from openwop_cli.home import captures_root
    from openwop_cli.importers.vcr import import_cassette

    imported = import_cassette(cassette, out=out, store_root=captures_root(), name=name, argv=list(argv or []),
                               redact=_profile(redact))
    summary = {"captureId": imported.manifest["captureId"], "name": imported.manifest.get("name"),
               "path": str(imported.path), "events": imported.manifest.get("eventCount"),
               "llmCalls": imported.llm_calls, "httpCalls": imported.http_calls}
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(summary)
        return 0
    from rich.text import Text

    from openwop_cli.report.console import make_console
    from openwop_cli.report.summary import plural

    calls = f"{plural(imported.llm_calls, 'LLM call')} and {plural(imported.http_calls, 'other request')}"
    make_console().print(Text.assemble(("imported ", "muted"), f"{calls} as capture ", (summary["captureId"], "bold"),
                                       "  ", (summary["path"], "path"), f"  {summary['events']} events"), soft_wrap=True)
    return 0


def import_otel(*, source: Path | None, argv: list[str] | None, phoenix: str | None, project: str | None,
                trace_ids: list[str] | None, name: str | None, out: Path | None, redact: str | None,
                json_output: bool) -> int:
    """Import the traces of source (a file or directory) or of a Phoenix project as captures, print them; returns
    wop's exit code."""
    from openwop_cli.errors import UsageError
    from openwop_cli.home import captures_root
    from openwop_cli.importers.otel import import_traces
    from openwop_cli.importers.otlp import PhoenixSource, TraceSource

    if phoenix is not None and source is not None:  # with --phoenix there is no SOURCE: the words are the command
        argv, source = [str(source), *(argv or [])], None
    if (source is None) == (phoenix is None):
        raise UsageError("give a trace file or directory, or --phoenix URL --project NAME (one of them)")
    if phoenix is not None and not project:
        raise UsageError("--phoenix needs --project NAME: the Phoenix project the traces are in")
    if project and phoenix is None:
        raise UsageError("--project goes with --phoenix URL")
    if source is not None:
        traces: Any = TraceSource(source)
    else:
        assert phoenix is not None and project  # as the checks above made sure
        traces = PhoenixSource(phoenix, project)
    imported = import_traces(traces, trace_ids=list(trace_ids or []), out=out, store_root=captures_root(), name=name,
                             argv=list(argv or []), redact=_profile(redact))
    summaries = (_trace_summary(trace) for trace in imported)
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(list(summaries))
        return 0
    from rich.text import Text

    from openwop_cli.report.console import make_console
    from openwop_cli.report.summary import plural

    console = make_console()
    for trace in summaries:
        calls = f"{plural(trace['llmCalls'], 'LLM call')} and {plural(trace['toolCalls'], 'tool call')}"
        console.print(Text.assemble(("imported trace ", "muted"), trace["traceId"], f" ({calls}) as capture ",
                                    (trace["captureId"], "bold"), "  ", (trace["path"], "path")), soft_wrap=True)
        for span in trace["hidden"]:
            console.print(Text.assemble(("  hidden in the trace: ", "warning"), f"{span['kind']} span {span['spanId']} "
                                        f"{span['name']!r}: {', '.join(span['hidden'])}"), soft_wrap=True)
    return 0


def _profile(redact: str | None) -> str:
    """--redact, else [tool.wop] redact (with its warning when that turns redaction off), else default."""
    if redact is not None:
        return redact
    from openwop_cli.config import load_settings, redaction_off_warning

    settings = load_settings()
    warning = redaction_off_warning(settings)
    if warning is not None:
        from openwop_cli.report.console import print_warning

        print_warning(warning)
    return settings.redact


def _trace_summary(trace: Any) -> dict[str, Any]:
    """What `wop import otel --json` says of one imported trace."""
    return {"captureId": trace.manifest["captureId"], "name": trace.manifest.get("name"), "path": str(trace.path),
            "traceId": trace.trace_id, "spans": trace.spans, "events": trace.manifest.get("eventCount"),
            "llmCalls": trace.llm_calls, "toolCalls": trace.tool_calls, "hidden": trace.hidden,
            "notInTrace": trace.manifest["imported"].get("notInTrace", [])}
