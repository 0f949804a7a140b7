"""Every colour decision in one place: a theme of semantic names and the consoles that use it, and the one
function that makes text from a capture safe to print.

Rich already honours NO_COLOR and drops styling when output is not a terminal; nothing else in wop
writes an escape code. A capture is data from a stranger: its strings reach the terminal only through
`clean` (control characters shown as escapes, never sent), and the consoles read no markup or emoji
codes in what they print, so `[/]` or `:smile:` in a recorded value is shown as it is.
"""

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text
from rich.theme import Theme

from openwop_cli.report.escape import clean

THEME = Theme(
    {
        "seq": "cyan",
        "path": "magenta",
        "expected": "green",
        "observed": "red",
        "warning": "yellow",
        "error": "bold red",
        "ok": "green",
        "muted": "dim",
        "status.ok": "green",
        "status.error": "red",
        "status.incomplete": "yellow",
        "type.llm": "bright_blue",
        "type.tool": "bright_magenta",
        "type.state": "bright_green",
        "type.nondeterministic": "yellow",
        "type.run": "bold",
        "type.replay": "bold red",
    }
)


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr) with wop's theme; plain when piped or NO_COLOR is set."""
    return Console(theme=THEME, stderr=stderr, highlight=False, markup=False, emoji=False)


def type_style(event_type: str) -> str:
    """The theme style for an event type."""
    if event_type.startswith("llm"):
        return "type.llm"
    if event_type.startswith("tool"):
        return "type.tool"
    if event_type == "state_mutation":
        return "type.state"
    if event_type == "nondeterministic":
        return "type.nondeterministic"
    if event_type.startswith("replay"):
        return "type.replay"
    return "type.run"


def status_style(status: str) -> str:
    """The theme style for a capture status (ok, error, incomplete)."""
    return f"status.{status}" if status in ("ok", "error", "incomplete") else "warning"


def print_error(message: str) -> None:
    """One red line on stderr: how every wop error reaches the user."""
    make_console(stderr=True).print(Text.assemble(("wop: error: ", "error"), clean(message)), soft_wrap=True)


def print_warning(message: str) -> None:
    """One yellow line on stderr."""
    make_console(stderr=True).print(Text.assemble(("wop: warning: ", "warning"), clean(message)), soft_wrap=True)


@contextmanager
def paged_console(enabled: bool = True) -> Iterator[Console]:
    """A console on stdout, or, on a terminal, one streaming into $PAGER (less -RFX): long output pages
    from its first line, and quitting the pager early just stops the output."""
    command = os.environ.get("PAGER", "less -RFX")
    if not enabled or not sys.stdout.isatty() or not command.strip() or command.strip() == "cat":
        yield make_console()
        return
    import shlex
    import subprocess

    try:
        pager = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, text=True, encoding="utf-8")
    except OSError:
        yield make_console()
        return
    console = Console(theme=THEME, file=pager.stdin, force_terminal=True, width=shutil.get_terminal_size().columns,
                      highlight=False, markup=False, emoji=False)
    try:
        yield console
    except BrokenPipeError:
        pass
    finally:
        try:
            pager.stdin.close()
        except BrokenPipeError:
            pass
        pager.wait()
