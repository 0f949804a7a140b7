"""`wop export otel CAPTURE…`: captures as OpenTelemetry traces, sent over OTLP/HTTP (Phoenix, Jaeger, collectors)."""

from pathlib import Path
from typing import Optional

import typer


def otel(
    captures: list[str] = typer.Argument(..., metavar="CAPTURE...", help="Captures to export (paths, ids, names, `last`)."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", metavar="URL", help="OTLP/HTTP endpoint; a base URL gets "
                                           "/v1/traces (default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
                                           "OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)."),
    project: Optional[str] = typer.Option(None, "--project", metavar="NAME",
                                          help="The Phoenix project the traces go to (openinference.project.name)."),
    file: Optional[Path] = typer.Option(None, "--file", metavar="PATH", help="Write the traces to PATH as OTLP JSON "
                                        "lines (the Collector's file exporter format) instead of sending them."),
    json_output: bool = typer.Option(False, "--json", help="Print what was exported as JSON."),
) -> None:
    """Send each capture as one trace: a root span for the run, a span per LLM call, tool call and HTTP request.

    Spans keep their recorded times and nesting and carry the OpenTelemetry GenAI attributes
    (gen_ai.provider.name, gen_ai.request.model, gen_ai.usage.input_tokens, ...) and the
    OpenInference ones Arize Phoenix reads (LLM/TOOL/CHAIN span kinds, llm.token_count.*, messages,
    input.value/output.value); state writes, recorded values and replay divergences are span events.
    Values go out as the capture holds them, redactions included. Needs the otel extra:
    pip install 'openwop-cli[otel]'. OTEL_EXPORTER_OTLP_HEADERS adds headers (an API key). When the
    endpoint cannot be reached nothing is sent and wop exits 2. Credentials in the endpoint URL (a
    password, query values such as ?api_key=) are sent, but never printed: errors and --json mask them.
    Every event also travels whole (wop.request_event, wop.result_event, wop.event, wop.manifest), so
    `wop import otel` gives the capture back exactly.

    \b
    Examples:
      wop export otel last --endpoint http://127.0.0.1:6006
      wop export otel tests/runs/* --project agent-ci
      OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 wop export otel support --json
      wop export otel last --file run.jsonl && wop import otel run.jsonl
    """
    from openwop_cli.cli.export_action import export_otel

    raise typer.Exit(export_otel(captures=captures, endpoint=endpoint, project=project, file=file,
                                 json_output=json_output))
