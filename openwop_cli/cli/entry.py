"""The `wop` entry point: `wop capture`, `wop replay` and `wop diff` in their everyday shapes start without the Typer app.

Building the app and its parameters imports Typer and Pydantic, which cost more than a small capture
takes: a CI suite of many short captures paid it on every run. So a command line made only of words
this parser knows (the commands' usual options, `--`, captures and the program) runs the command
directly; anything else — help, a misspelt option, `--name=VALUE`, a value that does not parse,
WOP_DEBUG — goes to the Typer app (cli.app), so every help text and usage error stays Typer's.
"""

import os
import sys
from pathlib import Path
from typing import Any, Callable

EXIT_INTERNAL = 70
debug = {"on": False}  # --debug / WOP_DEBUG (set by the Typer app's root callback)

# option -> (parameter, kind); kinds: "flag" (True), "text", "path", "count" (digits), "many" (repeatable text),
# or a tuple of the words the option accepts
_CAPTURE_OPTIONS: dict[str, tuple[str, Any]] = {
    "--name": ("name", "text"), "-n": ("name", "text"),
    "--out": ("out", "path"), "-o": ("out", "path"),
    "--redact": ("redact", ("none", "default", "strict")),
    "--workflow": ("workflow", "path"),
    "--proxy": ("proxy", "flag"),
    "--ambient": ("ambient", ("on", "off")),
    "--strict-transports": ("strict_transports", "flag"),
    "--output": ("record_output", "flag"), "--no-output": ("record_output", "unflag"),
    "--json": ("json_output", "flag"),
}
_REPLAY_OPTIONS: dict[str, tuple[str, Any]] = {
    "--strict": ("strict", "flag"), "--lenient": ("lenient", "flag"),
    "--from-seq": ("from_seq", "count"),
    "--allow-tool": ("allow_tool", "many"),
    "--out": ("out", "path"), "-o": ("out", "path"),
    "--name": ("name", "text"), "-n": ("name", "text"),
    "--proxy": ("proxy", "flag"),
    "--junit": ("junit", "path"),
    "--jobs": ("jobs", "count"), "-j": ("jobs", "count"),
    "--shard": ("shard", "text"),
    "--json": ("json_output", "flag"),
    "--verbose": ("verbose", "flag"), "-v": ("verbose", "flag"),
    "--output": ("compare_output", "flag"), "--no-output": ("compare_output", "unflag"),
    "--exact-output": ("exact_output", "flag"),
    "--trust": ("trust", "flag"),
}
_DIFF_OPTIONS: dict[str, tuple[str, Any]] = {
    "--ignore": ("ignore", "many"),
    "--max-diffs": ("max_diffs", "positive"),
    "--align": ("align", ("seq", "content")),
    "--compare-run-metadata": ("run_metadata", "flag"), "--ignore-run-metadata": ("run_metadata", "unflag"),
    "--json": ("json_output", "flag"),
    "--detail": ("detail", "flag"),
}


def main() -> None:
    """Run wop (see the module docstring)."""
    guarded(fast_command(sys.argv[1:]) or _typer_app)


def _typer_app() -> None:
    """The Typer app, loaded where a Ctrl-C ends wop with 130 (not a traceback), orjson first with Ctrl-C held: the
    commands' modules load it, and a Ctrl-C landing in its initialization would crash wop (runtime.heldsignals)."""
    from openwop_cli.runtime.heldsignals import imported_held

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

    if debug["on"] or "--debug" in sys.argv:
        import traceback

        traceback.print_exception(exc)
    print_error(message)


def fast_command(args: list[str]) -> Callable[[], None] | None:
    """The command `args` asks for, when this parser knows every word of it; None: leave it to Typer."""
    parsed = fast_arguments(args)
    if parsed is None:
        return None
    name, arguments = parsed

    def run() -> None:
        try:
            if name == "capture":
                from openwop_cli.cli.capture_action import capture

                code: Any = capture(**arguments)
            elif name == "diff":
                from openwop_cli.cli.diff_action import diff

                code = diff(**arguments)
            else:
                from openwop_cli.cli.replay_action import replay_captures

                replay_captures(**arguments)
                code = 0
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
    """("capture" or "replay", the keyword arguments of cli.capture_action.capture or cli.replay_action.replay_captures)
    for a command line this parser reads exactly as Typer would; None for any other."""
    if not args or "WOP_DEBUG" in os.environ:
        return None
    if args[0] == "capture":
        return _capture_arguments(args[1:])
    if args[0] == "replay":
        return _replay_arguments(args[1:])
    if args[0] == "diff":
        return _diff_arguments(args[1:])
    return None


def _capture_arguments(args: list[str]) -> tuple[str, dict[str, Any]] | None:
    parsed = _parse(args, _CAPTURE_OPTIONS, interspersed=False)
    if parsed is None or not parsed[1]:
        return None
    options, argv = parsed
    ambient = options.get("ambient")
    return "capture", {
        "argv": argv, "name": options.get("name"), "out": options.get("out"), "redact": options.get("redact"),
        "workflow": options.get("workflow"), "proxy": options.get("proxy", False),
        "ambient": None if ambient is None else ambient == "on",
        "strict_transports": options.get("strict_transports", False),
        "json_output": options.get("json_output", False), "record_output": options.get("record_output", True),
    }


def _replay_arguments(args: list[str]) -> tuple[str, dict[str, Any]] | None:
    parsed = _parse(args, _REPLAY_OPTIONS, interspersed=True)
    program_words = len(args) - args.index("--") - 1 if "--" in args else 0
    if parsed is None or len(parsed[1]) <= program_words:  # no CAPTURE before `--`: Typer's usage error
        return None
    options, captures = parsed
    strict, lenient = options.get("strict"), options.get("lenient")
    if strict and lenient:
        return None  # which one wins is Typer's to say
    return "replay", {
        "captures": captures, "strict": True if strict else (False if lenient else None),
        "from_seq": options.get("from_seq"), "allow_tool": options.get("allow_tool"), "out": options.get("out"),
        "name": options.get("name"), "proxy": options.get("proxy", False), "junit": options.get("junit"),
        "repeat": None, "jobs": options.get("jobs"), "shard": options.get("shard"),
        "json_output": options.get("json_output", False), "verbose": options.get("verbose", False),
        "pdb": False, "break_at": None, "compare_output": options.get("compare_output", True),
        "exact_output": options.get("exact_output", False), "trust": options.get("trust", False),
    }


def _diff_arguments(args: list[str]) -> tuple[str, dict[str, Any]] | None:
    parsed = _parse(args, _DIFF_OPTIONS, interspersed=True)
    if parsed is None or len(parsed[1]) != 2 or "--" in args:
        return None
    options, (run_a, run_b) = parsed
    return "diff", {
        "run_a": run_a, "run_b": run_b, "ignore": options.get("ignore"), "max_diffs": options.get("max_diffs"),
        "align": options.get("align", "seq"), "run_metadata": options.get("run_metadata"),
        "json_output": options.get("json_output", False), "detail": options.get("detail", False),
    }


def _parse(args: list[str], known: dict[str, tuple[str, Any]],
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
        parameter, kind = known[word]
        if kind in ("flag", "unflag"):
            options[parameter] = kind == "flag"
            index += 1
            continue
        if index + 1 >= len(args):
            return None
        value = _value(args[index + 1], kind)
        if value is None:
            return None
        if kind == "many":
            options.setdefault(parameter, []).append(value)
        else:
            options[parameter] = value
        index += 2
    return options, positional


def _value(word: str, kind: Any) -> Any:
    """An option's value as Typer would convert it; None when Typer should judge it."""
    if not word or word.startswith("-"):
        return None
    if isinstance(kind, tuple):
        return word if word in kind else None
    if kind in ("count", "positive"):
        number = int(word) if word.isascii() and word.isdigit() else None
        return None if number is None or (kind == "positive" and number < 1) else number
    return Path(word) if kind == "path" else word
