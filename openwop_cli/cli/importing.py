"""`wop import vcr CASSETTE [-- CMD…]`: a VCR.py / pytest-recording cassette as a capture `wop replay` serves."""

from pathlib import Path
from typing import Optional

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
    from openwop_cli.cli.importing_action import import_vcr

    raise typer.Exit(import_vcr(cassette=cassette, argv=argv, name=name, out=out,
                                redact=redact.value if redact is not None else None, json_output=json_output))


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
    from openwop_cli.cli.importing_action import import_otel

    raise typer.Exit(import_otel(source=source, argv=argv, phoenix=phoenix, project=project, trace_ids=trace_ids,
                                 name=name, out=out, redact=redact.value if redact is not None else None,
                                 json_output=json_output))
