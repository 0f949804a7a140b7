"""`wop capture -- CMD ARGS…`: run a command and record it."""

from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class RedactProfile(str, Enum):
    none = "none"
    default = "default"
    strict = "strict"


def command(
    argv: Optional[list[str]] = typer.Argument(None, metavar="-- CMD [ARGS]...", help="The command to run and record."),
    name: Optional[str] = typer.Option(None, "--name", "-n", help="A name to find the capture by (default: the script's name)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the capture to DIR instead of the store."),
    redact: Optional[RedactProfile] = typer.Option(None, "--redact", help="Redaction profile: none, default or strict "
                                                   "(default: [tool.wop] redact, else default)."),
    workflow: Optional[Path] = typer.Option(None, "--workflow", help="Pin this workflow JSON in the manifest."),
    proxy: bool = typer.Option(False, "--proxy", help="Also record LLM calls of non-Python programs: OPENAI_BASE_URL, "
                               "ANTHROPIC_BASE_URL and OLLAMA_HOST point at a recording proxy on 127.0.0.1."),
    json_output: bool = typer.Option(False, "--json", help="Print the closing summary as JSON (on stderr)."),
) -> None:
    """Run CMD and record every LLM call, tool call, clock/random read and state write it makes.

    Python programs are recorded without code changes (the runtime is installed at start-up in every
    Python process CMD starts); `import openwop_cli as wop` marks tools and values explicitly. The
    command's output passes through unchanged, and wop exits with its exit code. The last line on
    stderr names the capture.

    \b
    Examples:
      wop capture -- python examples/support_agent.py
      wop capture --name checkout --out tests/captures/checkout -- python agent.py --order A-1001
      wop capture --redact strict -- python -m my_agent
      wop capture --proxy -- node agent.js
    """
    from openwop_cli.config import load_settings
    from openwop_cli.report.console import print_warning
    from openwop_cli.runtime.launcher import run_captured
    from openwop_cli.store import captures_root

    outcome = run_captured(
        list(argv or []),
        out=out,
        name=name,
        redact=redact.value if redact is not None else load_settings().redact,
        workflow=workflow,
        warn=lambda message: print_warning(message.removeprefix("wop: ")),
        store_root=captures_root(),
        proxy=proxy,
    )
    _print_summary(outcome, json_output)
    raise typer.Exit(outcome.exit_code)


def _print_summary(outcome, json_output: bool) -> None:
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
    if json_output:
        import sys

        from openwop_cli.cli.output import json_line

        sys.stderr.buffer.write(json_line(summary) + b"\n")
        sys.stderr.flush()
        return
    from rich.text import Text

    from openwop_cli.report.console import clean, make_console, status_style

    line = Text.assemble(
        ("captured ", "muted"), (outcome.capture_id, "bold"), "  ", (clean(outcome.path), "path"),
        f"  {summary['events']} events  ", (str(summary["status"]), status_style(str(summary["status"]))),
    )
    if summary.get("error"):
        line.append(f"  ({clean(summary['error'])})", "muted")
    make_console(stderr=True).print(line, soft_wrap=True)
