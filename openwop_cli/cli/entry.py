"""The `wop` entry point: every command in its everyday shapes starts without the Typer app.

Building the app and its parameters imports Typer and Pydantic, which cost more than a small capture
takes, or `wop show` itself: a CI suite of many short captures paid it on every run. So a command line
made only of words this parser knows (the command's options, `--`, captures and the program) runs the
command's action directly; anything else — help, a misspelt option, `--name=VALUE`, a value that does not parse,
WOP_DEBUG — goes to the Typer app (cli.app), so every help text and usage error stays Typer's. The
options it knows are cli.fast_options, generated from the Typer declarations (scripts/make_fast_options.py).
"""

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openwop_cli.cli.fast_options import COMMANDS, DECLINE_IF_SET

EXIT_INTERNAL = 70
# Commands whose actions load orjson (with Ctrl-C held) once their program is starting: the others' fast path loads
# it first, as _typer_app does.
LOAD_ORJSON_THEMSELVES = ("capture", "replay")


def main() -> None:
    """Run wop (see the module docstring)."""
    guarded(fast_command(sys.argv[1:]) or _typer_app)


def _typer_app() -> None:
    """The Typer app, loaded where a Ctrl-C ends wop with 130 (not a traceback), orjson first with Ctrl-C held: the
    commands' modules load it, and a Ctrl-C landing in its initialization would crash wop (heldsignals)."""
    from openwop_cli.heldsignals import imported_held

    imported_held("orjson")
    from openwop_cli.cli.app import app

    app()


def guarded(run: Callable[[], Any]) -> None:
    """Run a command; a WopError becomes one red line and its exit code, never a traceback (unless --debug); a
    failure to write the output ends as cli.pipes says."""
    from openwop_cli.cli.pipes import OutputFailed, PipeClosed, guard_streams, silence_stdout
    from openwop_cli.errors import EXIT_USAGE, WopError

    guard_streams()
    try:
        run()
    except WopError as exc:
        _report(exc.message, exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except PipeClosed:
        silence_stdout()
        sys.exit(0)
    except OutputFailed as exc:
        silence_stdout()
        _report(f"cannot write the output: {exc.reason}", exc)
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # a bug in wop: say so in one line, keep the traceback for --debug
        _report(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", exc)
        sys.exit(EXIT_INTERNAL)


def _report(message: str, exc: BaseException) -> None:
    from openwop_cli.report.console import print_error

    if debugging():
        import traceback

        traceback.print_exception(exc)
    print_error(message)


def debugging() -> bool:
    """--debug on the command line or WOP_DEBUG set true (as the Typer app's --debug reads it): show tracebacks."""
    return "--debug" in sys.argv or os.environ.get("WOP_DEBUG", "").strip().lower() in ("1", "true", "t", "yes", "y", "on")


def fast_command(args: list[str]) -> Callable[[], None] | None:
    """The command `args` asks for, when this parser knows every word of it; None: leave it to Typer."""
    parsed = fast_arguments(args)
    if parsed is None:
        return None
    name, arguments = parsed

    def run() -> None:
        import importlib

        if name not in LOAD_ORJSON_THEMSELVES:
            from openwop_cli.heldsignals import imported_held

            imported_held("orjson")  # as _typer_app does
        module, _, function = COMMANDS[name]["action"].partition(":")
        try:
            code = getattr(importlib.import_module(module), function)(**arguments)
        except SystemExit as exc:
            code = exc.code
        leave(code)

    return run


def leave(code: Any) -> None:
    """Exit with code once the output is flushed, without tearing the interpreter down: after a capture or a
    replay every file is closed and every thread done, and unloading the modules they imported took longer than
    a small capture itself. Where a thread still runs, the usual exit waits for it."""
    import threading

    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()  # stdout's failures raise here (PipeClosed, OutputFailed): `guarded` says what they mean
    if any(not thread.daemon for thread in threading.enumerate() if thread is not threading.current_thread()):
        sys.exit(code)
    os._exit(code or 0)


def fast_arguments(args: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(the command, "group command" for a sub-app's, and the keyword arguments its action takes: the parameters
    Typer would pass, enums as their values) for a command line this parser reads exactly as Typer would; None for
    any other."""
    if not args or any(name in os.environ for name in DECLINE_IF_SET):
        return None
    name, rest = args[0], args[1:]
    if name not in COMMANDS and rest:
        name, rest = f"{name} {rest[0]}", rest[1:]
    shape = COMMANDS.get(name)
    if shape is None:
        return None
    parsed = _parse(rest, shape["options"], shape["interspersed"])
    if parsed is None:
        return None
    options, words = parsed
    positional = _positional(words, shape["arguments"])
    if positional is None or any(parameter not in options for parameter in shape["required"]):
        return None
    return name, {**shape["defaults"], **options, **positional}


def _parse(args: list[str], known: dict[str, tuple[str, str, bool, Any]],
           interspersed: bool) -> tuple[dict[str, Any], list[str]] | None:
    """Options and positional words, as click would parse them; None at the first word this parser is unsure of."""
    options: dict[str, Any] = {}
    positional: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            return options, positional + args[index + 1:]
        if not word.startswith("-") or word == "-":
            if not interspersed:
                return options, args[index:]
            positional.append(word)
            index += 1
            continue
        if word not in known:
            return None
        parameter, kind, repeatable, detail = known[word]
        if kind == "flag":
            options[parameter] = detail
            index += 1
            continue
        value = _value(args[index + 1], kind, detail) if index + 1 < len(args) else None
        if value is None:
            return None
        if repeatable:
            options.setdefault(parameter, []).append(value)
        else:
            options[parameter] = value
        index += 2
    return options, positional


def _value(word: str, kind: str, detail: Any) -> Any:
    """An option's value as Typer would convert it; None when Typer should judge it (and for kind "decline")."""
    if not word or word.startswith("-"):
        return None
    if kind == "choice":
        return word if word in detail else None
    if kind in ("int", "float"):
        low, high = detail
        number = _number(word, kind)
        if number is None or (low is not None and number < low) or (high is not None and number > high):
            return None
        return number
    if kind == "path":
        return Path(word)
    return word if kind == "text" else None


def _number(word: str, kind: str) -> int | float | None:
    """Plain decimal digits (with one inner `.` for a float) as a number; None for any other spelling (a sign, an
    exponent, `_`, `inf`) and for more digits than int() reads, which Typer judges."""
    whole, point, fraction = word.partition(".") if kind == "float" else (word, "", "")
    if not (whole.isascii() and whole.isdigit()) or point and not (fraction.isascii() and fraction.isdigit()):
        return None
    try:
        return float(word) if kind == "float" else int(word)
    except ValueError:  # past sys.get_int_max_str_digits()
        return None


def _positional(words: list[str], arguments: tuple[tuple[str, int, bool, str], ...]) -> dict[str, Any] | None:
    """The positional words as Typer assigns them to its arguments (one word each, the last may take the rest; a
    path as a Path); None for too few or too many words."""
    values: dict[str, Any] = {}
    for name, nargs, required, kind in arguments:
        taken, words = (words, []) if nargs == -1 else (words[:1], words[1:])
        if not taken:
            if required:
                return None
            continue
        converted = [Path(word) for word in taken] if kind == "path" else list(taken)
        values[name] = converted if nargs == -1 else converted[0]
    return None if words else values
