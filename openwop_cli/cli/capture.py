"""`wop capture -- CMD ARGS…`: run a command and record it."""

from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class RedactProfile(str, Enum):
    none = "none"
    default = "default"
    strict = "strict"


class Switch(str, Enum):
    on = "on"
    off = "off"


def command(
    argv: Optional[list[str]] = typer.Argument(None, metavar="-- CMD [ARGS]...", help="The command to run and record."),
    name: Optional[str] = typer.Option(None, "--name", "-n", metavar="NAME", help="A name to find the capture by (default: the script's name)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Write the capture to DIR instead of the store."),
    redact: Optional[RedactProfile] = typer.Option(None, "--redact", metavar="none|default|strict", help="Redaction profile: none, default or strict "
                                                   "(default: [tool.wop] redact, else default)."),
    workflow: Optional[Path] = typer.Option(None, "--workflow", metavar="FILE", help="Pin this workflow JSON in the manifest."),
    proxy: bool = typer.Option(False, "--proxy", help="Also record LLM calls of non-Python programs: OPENAI_BASE_URL, "
                               "ANTHROPIC_BASE_URL and OLLAMA_HOST point at a recording proxy on 127.0.0.1."),
    ambient: Optional[Switch] = typer.Option(None, "--ambient", help="Record the clock, uuid and random values the "
                                             "program's code reads: on or off (default: [tool.wop] ambient, else on)."),
    strict_transports: bool = typer.Option(False, "--strict-transports", help="Exit 1 when the program opened "
                                           "connections no adapter recorded (a replay could not serve them) or "
                                           "started child processes wop cannot see (not Python)."),
    record_output: bool = typer.Option(True, "--output/--no-output", help="Keep the program's stdout and stderr in "
                                       "the capture (redacted; a replay compares them). --no-output leaves them "
                                       "alone: passed through, not kept."),
    json_output: bool = typer.Option(False, "--json", help="Print the closing summary as JSON (on stderr)."),
) -> None:
    """Run CMD and record every LLM call, tool call, clock/random read and state write it makes.

    Python programs are recorded without code changes (the runtime is installed at start-up in every
    Python process CMD starts): their LLM and HTTP calls, and the time, datetime, uuid, random,
    secrets and os.urandom values their own code and its libraries read (not the standard library's
    own reads; --ambient off records none). `import openwop_cli as wop` marks tools and values
    explicitly. The command's output passes through unchanged and is kept in the capture (--no-output
    keeps nothing), and wop exits with its exit code (3,
    the program not run, when its Python cannot run the runtime: older than 3.11, or without orjson).
    The last line on stderr names the capture, and the connections the program opened that no adapter
    recorded (a raw-socket client, an unsupported library): record those with --proxy.

    \b
    Examples:
      wop capture -- python examples/support_agent.py
      wop capture --name checkout --out tests/captures/checkout -- python agent.py --order A-1001
      wop capture --redact strict -- python -m my_agent
      wop capture --ambient off -- python agent.py
      wop capture --proxy -- node agent.js
      wop capture --strict-transports -- python agent.py   # exit 1 if anything went unrecorded
    """
    from openwop_cli.cli.capture_action import capture

    raise typer.Exit(capture(argv=argv, name=name, out=out, redact=redact.value if redact is not None else None,
                             workflow=workflow, proxy=proxy, ambient=ambient.value if ambient is not None else None,
                             strict_transports=strict_transports, record_output=record_output,
                             json_output=json_output))
