"""The Typer app: every command, the global flags and the help (cli.entry runs it, and turns errors into exit codes)."""

import typer

from openwop_cli._version import __version__
from openwop_cli.cli import (
    cache_key,
    capture,
    diff,
    export,
    fork,
    gc,
    importing,
    ls,
    replay,
    report,
    rm,
    show,
    state,
    verify,
)
from openwop_cli.cli.help import WopCommand

app = typer.Typer(
    name="wop",
    help=(
        "Capture, replay and diff LLM agent runs.\n\n"
        "\b\n"
        "Examples:\n"
        "  wop capture -- python agent.py  run a program and record it\n"
        "  wop replay last                 re-run it offline; exit 1 if it diverges\n"
        "  wop fork last --from-seq 6      serve history up to seq 6, run live after\n"
        "  wop ls                          list stored captures\n"
        "  wop show last                   timeline of the newest capture\n"
        "  wop show last --seq 3           one event as a JSON tree\n"
        "  wop state last --at 6           the folded channel state after seq 6\n"
        "  wop diff run-a run-b            where two runs part ways (RFC 0054)\n"
        "  wop report last -o run.html     a self-contained HTML report\n"
        "  wop verify ./captures/run1      check a capture's integrity\n"
        "  wop cache-key request.json      the LLM cache key of a request\n"
        "  wop export otel last            a capture as an OpenTelemetry trace\n"
        "  wop import vcr cassette.yaml    a VCR.py cassette as a capture\n\n"
        "Exit codes: 0 ok, 1 divergence or difference, 2 usage or bad input,\n"
        "3 corrupt, incomplete or incompatible capture, 70 internal error."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"wop {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", envvar="WOP_DEBUG", help="Show tracebacks for errors."),
) -> None:
    """Global options (--debug is read where errors are reported: cli.entry.debugging)."""


COMMANDS = (
    ("capture", capture, "run a command and record it", {"allow_interspersed_args": False}),
    ("replay", replay, "re-run captures offline; exit 1 where today's code diverges", None),
    ("fork", fork, "serve history up to a seq, then run live: what if", None),
    ("diff", diff, "where two runs part ways, event by event and in state (RFC 0054)", None),
    ("state", state, "the channel state folded with the canonical reducers at a seq", None),
    ("report", report, "one self-contained HTML file: timeline, JSON trees, state, diff", None),
    ("ls", ls, "list the captures in the store", None),
    ("show", show, "a run as a timeline, or one event as a JSON tree", None),
    ("verify", verify, "check a capture's integrity", None),
    ("cache-key", cache_key, "the LLM cache key of a request (OpenWOP recipe)", None),
    ("rm", rm, "delete captures (only wop's own files)", None),
    ("gc", gc, "delete old captures from the store", None),
)
for name, module, summary, settings in COMMANDS:
    app.command(name, cls=WopCommand, short_help=summary, context_settings=settings)(module.command)

GROUPS = (
    ("export", "send captures to other tools",
     "Send captures to other tools.\n\nwop export otel: each capture as an OpenTelemetry trace, over OTLP/HTTP.",
     (("otel", export.otel, "captures as OpenTelemetry traces (OTLP/HTTP)"),)),
    ("import", "bring in recordings made by other tools",
     "Bring in recordings made by other tools.\n\nwop import vcr: a VCR.py or pytest-recording cassette as a capture.\n"
     "wop import otel: OpenTelemetry / OpenInference traces as captures.",
     (("vcr", importing.vcr, "a VCR.py cassette as a capture"),
      ("otel", importing.otel, "OpenTelemetry traces as captures (OTLP files, Phoenix)"))),
)
for group_name, group_summary, group_help, commands in GROUPS:
    group = typer.Typer(name=group_name, help=group_help, no_args_is_help=True, rich_markup_mode=None)
    for name, function, summary in commands:
        group.command(name, cls=WopCommand, short_help=summary)(function)
    app.add_typer(group, name=group_name, short_help=group_summary)
