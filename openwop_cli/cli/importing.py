"""`wop import vcr CASSETTE [-- CMD…]`: a VCR.py / pytest-recording cassette as a capture `wop replay` serves."""

from pathlib import Path
from typing import Any, Optional

import typer

from openwop_cli.cli.capture import RedactProfile


def vcr(
    cassette: Path = typer.Argument(..., metavar="CASSETTE", help="A VCR.py or pytest-recording cassette (.yaml or .json)."),
    argv: Optional[list[str]] = typer.Argument(None, metavar="[-- CMD [ARGS]...]",
                                               help="The command the cassette was recorded from (kept as the capture's "
                                                    "command, so `wop replay` can run it)."),
    name: Optional[str] = typer.Option(None, "--name", "-n", metavar="NAME", help="A name to find the capture by "
                                       "(default: the cassette's file name)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Write the capture to DIR instead of the store."),
    redact: Optional[RedactProfile] = typer.Option(None, "--redact", metavar="none|default|strict",
                                                   help="Redaction profile (default: [tool.wop] redact, else default)."),
    json_output: bool = typer.Option(False, "--json", help="Print what was imported as JSON."),
) -> None:
    """Turn a VCR.py cassette into a capture, so `wop replay --strict` can replay the program that made it.

    LLM calls are recognised by provider the way `wop capture` recognises them (OpenAI, Anthropic,
    Gemini, Ollama and OpenAI-compatible APIs; streamed answers split into their events); every other
    request becomes an `http` tool call. Bodies may be text, bytes, base64 or gzip/deflate-compressed.
    Credentials in headers are never copied and redaction applies as in a capture. A cassette wop cannot
    read exits 2 with the interaction and the reason, and nothing is written.

    \b
    Examples:
      wop import vcr tests/cassettes/test_agent.yaml --out tests/runs/agent -- python agent.py
      wop replay --strict tests/runs/agent
      wop import vcr cassette.json --name checkout --json
    """
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
        return
    from rich.text import Text

    from openwop_cli.report.console import make_console
    from openwop_cli.report.summary import plural

    calls = f"{plural(imported.llm_calls, 'LLM call')} and {plural(imported.http_calls, 'other request')}"
    make_console().print(Text.assemble(("imported ", "muted"), f"{calls} as capture ", (summary["captureId"], "bold"),
                                       "  ", (summary["path"], "path"), f"  {summary['events']} events"), soft_wrap=True)


def otel(
    source: Optional[Path] = typer.Argument(None, metavar="SOURCE", help="OTLP JSON (the Collector's file exporter: "
                                            "a file or a directory of them) or OTLP protobuf."),
    argv: Optional[list[str]] = typer.Argument(None, metavar="[-- CMD [ARGS]...]",
                                               help="The command that made the trace (kept as the capture's command, "
                                                    "so `wop replay` can run it)."),
    phoenix: Optional[str] = typer.Option(None, "--phoenix", metavar="URL", help="Read the traces from a Phoenix "
                                          "server instead of a file (with --project; no SOURCE then)."),
    project: Optional[str] = typer.Option(None, "--project", metavar="NAME", help="The Phoenix project to read."),
    trace_ids: Optional[list[str]] = typer.Option(None, "--trace-id", metavar="ID", help="Import only this trace (an "
                                                  "id or a unique prefix; repeat for more). Default: every trace."),
    name: Optional[str] = typer.Option(None, "--name", "-n", metavar="NAME", help="A name to find the capture by "
                                       "(several traces: NAME-<trace id>)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Write the capture to DIR instead of "
                                       "the store (several traces: DIR/<trace id>)."),
    redact: Optional[RedactProfile] = typer.Option(None, "--redact", metavar="none|default|strict",
                                                   help="Redaction profile (default: [tool.wop] redact, else default)."),
    json_output: bool = typer.Option(False, "--json", help="Print what was imported as JSON."),
) -> None:
    """Turn OpenTelemetry traces into captures, so `wop replay IMPORTED -- CMD` runs today's code against them.

    Each trace becomes one capture. LLM spans (OpenInference: llm.input_messages, input.value, ...;
    GenAI conventions: gen_ai.* attributes and events) become LLM calls with the provider, model,
    messages, tools, options, answer and token counts, keyed like a recorded call; a streamed call
    is served to the program as a stream. TOOL spans become tool calls, served when the program
    makes them through a wop boundary. A trace `wop export otel` sent comes back whole.

    A trace holds no clock, random or uuid values, no program output, and no HTTP it did not
    trace: a replay reads those live and lists them as "not in the trace". A span whose content
    the trace hid (OpenInference hide_inputs, GenAI content capture off, a value cut short) is
    named here and in the replay's report; a replay never takes it for an empty message.
    A trace wop cannot read exits 2 with the file and the reason.

    \b
    Examples:
      wop import otel traces.jsonl --out runs/incident -- python agent.py
      wop replay runs/incident
      wop import otel --phoenix http://127.0.0.1:6006 --project agent --trace-id 4bf92f35 --json
    """
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
    traces = TraceSource(source) if source is not None else PhoenixSource(phoenix, project)
    imported = import_traces(traces, trace_ids=list(trace_ids or []), out=out, store_root=captures_root(), name=name,
                             argv=list(argv or []), redact=_profile(redact))
    summaries = (_trace_summary(trace) for trace in imported)
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(list(summaries))
        return
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


def _profile(redact: Optional[RedactProfile]) -> str:
    """--redact, else [tool.wop] redact (with its warning when that turns redaction off), else default."""
    if redact is not None:
        return redact.value
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
