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
    from openwop_cli.config import load_settings
    from openwop_cli.importers.vcr import import_cassette
    from openwop_cli.home import captures_root

    imported = import_cassette(cassette, out=out, store_root=captures_root(), name=name, argv=list(argv or []),
                               redact=redact.value if redact is not None else load_settings().redact)
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
