"""Whether `wop replay` and `wop fork` may run the command a capture recorded.

A capture is data, and a capture someone sent may record any command (`sh -c …`). Its recorded command
runs only when the capture is trusted here:

- it is signed with this user's key (format.signature): wop made it on this account;
- or its command runs only code already in this working tree: a Python interpreter (by name on PATH, or a
  path to one outside any capture) running a script, or `-m` a module, whose file lies in the current
  directory's tree, links and `..` resolved, and not inside a capture directory — the committed capture of
  `python agent.py` replayed in CI in its project;
- or the user said so: `--trust`, or WOP_TRUST=1 (CI).

A command given after `--` is the user's own and needs none of this. Checked twice: on the manifest as its
JSON says before the program is started early (host.replay_launch), and on the checked manifest before it runs.
"""

import os
import re
import shutil
from pathlib import Path
from typing import Any, NamedTuple

from openwop_cli.errors import UntrustedCommand

ENV_TRUST = "WOP_TRUST"
_PYTHON = re.compile(r"python(\d+(\.\d+)*t?)?w?(\.exe)?", re.IGNORECASE)
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_FLAGS = frozenset("bBdEiIOPqsSuvx")  # interpreter options without a value (-h, -V run nothing: refused)
_WITH_VALUE = frozenset("WX")
_LONG_WITH_VALUE = frozenset({"--check-hash-based-pycs"})
_CAPTURE_FILES = ("manifest.json", "events.jsonl")


class Trust(NamedTuple):
    """Whether a capture's recorded command may run here, and why (or why not)."""

    trusted: bool
    reason: str


def trust_from_environment() -> bool:
    """WOP_TRUST=1 (or true, yes): trust every capture, as --trust does (for CI jobs that replay captures they made)."""
    return os.environ.get(ENV_TRUST, "").strip().lower() in ("1", "true", "yes")


def recorded_command_trust(source_dir: Path, manifest: dict[str, Any], cwd: Path | None = None) -> Trust:
    """Whether the command manifest records may run in cwd (see the module docstring); the script test first,
    as it needs no key and no hash."""
    argv = _recorded_argv(manifest)
    problem = script_problem(argv, cwd or Path.cwd(), source_dir)
    if problem is None:
        return Trust(True, "it runs a Python script of this working tree")
    from openwop_cli.format.signature import check_signature

    signature = check_signature(manifest)
    if signature.signed_here:
        return Trust(True, "it was signed here")
    return Trust(False, f"{signature.status}: {signature.detail}; and {problem}")


def require_trusted(source_dir: Path, manifest: dict[str, Any], argv: list[str], trust: bool, branch: bool) -> None:
    """Raise UntrustedCommand (exit 2) when the replay (or, with branch, fork) of source_dir would run the command
    its manifest records and the capture is not trusted here; argv, a command given after `--`, runs as given."""
    if argv or trust or trust_from_environment():
        return
    verdict = recorded_command_trust(source_dir, manifest)
    if verdict.trusted:
        return
    recorded = _recorded_argv(manifest)
    verb = "fork" if branch else "replay"
    raise UntrustedCommand(
        f"not running the command recorded in {source_dir}: the capture is not trusted here ({verdict.reason}).\n"
        f"  recorded command: {shown_command(recorded)}\n"
        f"  run your own command after --, e.g. `wop {verb} {source_dir} -- python agent.py`; or, if you trust "
        f"this capture, add --trust (WOP_TRUST=1 in CI)", recorded, verdict.reason)


def shown_command(argv: list[str]) -> str:
    """A recorded command on one line, safe for a terminal: shell words when every character is printable, else
    its JSON (every control, format and non-ASCII character escaped)."""
    import shlex

    text = shlex.join(argv)
    if text.isprintable() and text.isascii():
        return text
    import json

    return json.dumps(argv)


def script_problem(argv: list[str], cwd: Path, source_dir: Path | None = None) -> str | None:
    """None when argv is a Python interpreter running a script or module of cwd's tree (see the module
    docstring); else why not."""
    if not argv:
        return "it records no command"
    problem = _interpreter_problem(argv[0], cwd, source_dir)
    if problem is not None:
        return problem
    words = iter(argv[1:])
    for word in words:
        if word == "--":
            return _file_problem(next(words, None), cwd, source_dir)
        if word.startswith("--"):
            if word not in _LONG_WITH_VALUE:
                return f"{shown_command([argv[0], word])} runs no script of this tree"
            next(words, None)
            continue
        if word == "-":
            return "it runs code read from its standard input (-)"
        if not word.startswith("-"):
            return _file_problem(word, cwd, source_dir)
        for index, letter in enumerate(word[1:], start=1):
            rest = word[index + 1:]
            if letter == "c":
                return "it runs code given on its command line (-c)"
            if letter == "m":
                return _module_problem(rest or next(words, None), cwd, source_dir)
            if letter in _WITH_VALUE:
                if not rest:
                    next(words, None)
                break
            if letter not in _FLAGS:
                return f"{shown_command([argv[0], word])} runs no script of this tree"
    return "it names no script"


def _interpreter_problem(command: str, cwd: Path, source_dir: Path | None) -> str | None:
    """None for a Python interpreter: a name on PATH, or a path to one (after links) outside any capture."""
    if not _PYTHON.fullmatch(os.path.basename(command)):
        return f"{shown_command([command])} is not a Python interpreter"
    found = shutil.which(command) if os.sep not in command and not (os.altsep and os.altsep in command) \
        else str(cwd / command)
    if found is None or not os.path.isfile(found):
        return f"{shown_command([command])} is not found here"
    real = os.path.realpath(found)
    if not _PYTHON.fullmatch(os.path.basename(real)):
        return f"{shown_command([command])} leads to {shown_command([real])}, not a Python interpreter"
    if _inside_a_capture(real, source_dir):
        return f"{shown_command([command])} lies inside a capture"
    return None


def _file_problem(script: str | None, cwd: Path, source_dir: Path | None) -> str | None:
    """None for a regular file of cwd's tree (links and `..` resolved) outside any capture directory."""
    if not script:
        return "it names no script"
    real = os.path.realpath(cwd / script)
    root = os.path.realpath(cwd)
    if not os.path.isfile(real):
        return f"its script {shown_command([script])} is not a file here"
    if os.path.commonpath([real, root]) != root:
        return f"its script {shown_command([script])} lies outside this directory ({shown_command([root])})"
    if _inside_a_capture(real, source_dir):
        return f"its script {shown_command([script])} lies inside a capture"
    return None


def _module_problem(module: str | None, cwd: Path, source_dir: Path | None) -> str | None:
    """None for `-m` a module whose file lies in cwd's tree, each package above it there too (a module found
    anywhere else is no script of this tree)."""
    if not module or not _MODULE.fullmatch(module):
        return f"its -m {shown_command([module or ''])} is not a module name"
    parts = module.split(".")
    for depth in range(1, len(parts)):
        if _file_problem(os.path.join(*parts[:depth], "__init__.py"), cwd, source_dir) is not None:
            return f"its module {module} is not a package of this tree"
    package = os.path.join(*parts)
    if os.path.isfile(cwd / package / "__init__.py"):
        target = os.path.join(package, "__main__.py")
    else:
        target = package + ".py"
    problem = _file_problem(target, cwd, source_dir)
    return None if problem is None else f"its module {module} is not a file of this tree ({problem})"


def _inside_a_capture(real: str, source_dir: Path | None) -> bool:
    """True when the resolved path real lies inside the capture being replayed, the store, or any directory that
    holds a capture's manifest and events (a capture's files are data, never a program)."""
    from openwop_cli.home import captures_root

    for container in (source_dir, captures_root()):
        if container is not None:
            root = os.path.realpath(container)
            if os.path.commonpath([real, root]) == root:
                return True
    directory = os.path.dirname(real)
    while True:
        if all(os.path.lexists(os.path.join(directory, name)) for name in _CAPTURE_FILES):
            return True
        parent = os.path.dirname(directory)
        if parent == directory:
            return False
        directory = parent


def _recorded_argv(manifest: dict[str, Any]) -> list[str]:
    program = manifest.get("program")
    argv = program.get("argv") if isinstance(program, dict) else None
    return argv if isinstance(argv, list) and all(type(word) is str for word in argv) else []
