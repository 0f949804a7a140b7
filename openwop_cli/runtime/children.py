"""Child processes wop cannot see: recorded where that is possible, named where it is not.

`subprocess.Popen` (and what is built on it: `subprocess.run`, asyncio's and anyio's subprocesses) is
watched in a recorded or replayed program. A child started while a recorded boundary is open belongs to
that unit (an MCP stdio server, whose session is recorded: in a replay it is not started at all).
Otherwise:

- a Python child whose environment lost wop's bootstrap (an `env=` built from scratch, such as MCP's
  `get_default_environment()`) gets it back — the `WOP_*` variables and the bootstrap on PYTHONPATH — so
  it is recorded (and replayed) like any Python the program starts;
- a Python told to ignore the bootstrap (`-I`, `-E`, `-S`) and any other executable (node, a shell, a
  binary) cannot be seen. (One the standard library starts for itself — platform's `uname`, ctypes'
  `ldconfig` — probes the machine, and is left alone.) In a capture the first such child per executable and call site is an event
  (`nondeterministic`, source `process`, `unrecorded: true`, key the executable; its argv, the reason and
  the first frame outside the standard library that started it), and the `wop capture` parent is told, so
  its last line names it and `--strict-transports` fails on it.
"""

import atexit
import os
import sys
import threading
from typing import Any

from openwop_cli.runtime import outputmarks
from openwop_cli.runtime.connections import report_counts, tell_parent
from openwop_cli.runtime.session import UNRESOLVED, _inside_boundary, _state
from openwop_cli.wire.environ import ENV_MODE, runs_bootstrap, script_interpreter

SOURCE = "process"
UNRECORDED_PROCESS = "unrecordedProcess"  # the message to the parent
NOT_PYTHON = "not a Python process"
IGNORES_BOOTSTRAP = "Python told to ignore wop's bootstrap (-I, -E or -S)"
_PYTHON_NAME = r"(python|pypy)[\d.]*[mtw]?(\.exe)?"
_ARGV_KEPT = 8
_MACHINERY = ("/subprocess.py", "/os.py", "/asyncio/base_events.py", "/asyncio/base_subprocess.py",
              "/asyncio/unix_events.py", "/asyncio/subprocess.py", "/asyncio/events.py")
_seen: dict[tuple, list[Any]] = {}
_lock = threading.Lock()
_installed: list[bool] = []


def watch() -> None:
    """Watch the children this process starts (once): restore the bootstrap of Python ones, name the rest."""
    if _installed:
        return
    _installed.append(True)
    from openwop_cli.runtime.imports import when_imported

    when_imported("subprocess", _patch)
    atexit.register(report_counts, _seen, UNRECORDED_PROCESS)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_seen.clear)


def _patch(subprocess: Any) -> None:
    popen = subprocess.Popen
    if getattr(popen.__init__, "__wop_children__", False):
        return
    real_init = popen.__init__

    def init(self: Any, args: Any, *more: Any, **options: Any) -> None:
        started: list[int] = []
        if _state["session"] is not None and not more:
            if not _inside_boundary.get():
                options = _seen_child(args, options)
            else:  # part of a recorded call: what it prints is the call's (runtime.outputmarks)
                options, started = outputmarks.forward_child_output(options)
        try:
            real_init(self, args, *more, **options)
        finally:
            for descriptor in started:
                os.close(descriptor)

    init.__wop_children__ = True  # type: ignore[attr-defined]
    popen.__init__ = init


def _seen_child(args: Any, options: dict[str, Any]) -> dict[str, Any]:
    """options for Popen, with the bootstrap put back into a Python child's environment; a child wop cannot see is
    reported."""
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    argv = [os.fsdecode(word) if isinstance(word, (bytes, os.PathLike)) else str(word) for word in argv]
    if not argv:
        return options
    if options.get("shell"):
        argv = ["/bin/sh", "-c", *argv]
    env = options.get("env")
    executable = options.get("executable") or argv[0]
    if not is_python(os.fsdecode(executable), env):
        _report(argv, NOT_PYTHON)
    elif not runs_bootstrap(argv[1:]):
        _report(argv, IGNORES_BOOTSTRAP)
    elif env is not None and not has_bootstrap(env):
        options = {**options, "env": with_bootstrap(env)}
    return options


def is_python(command: str, env: Any = None) -> bool:
    """True when command runs a Python: an interpreter by name, or a script whose `#!` line names one (a console
    script a package installed)."""
    import re
    import shutil

    path = command
    if os.sep not in command:
        search = env.get("PATH") if isinstance(env, dict) and env.get("PATH") else os.environ.get("PATH")
        path = shutil.which(command, path=search) or command
    if re.fullmatch(_PYTHON_NAME, os.path.basename(path)) or re.fullmatch(_PYTHON_NAME, os.path.basename(os.path.realpath(path))):
        return True
    words = script_interpreter(path)[0]
    return bool(words) and re.fullmatch(_PYTHON_NAME, os.path.basename(words[0])) is not None


def has_bootstrap(env: dict[str, Any]) -> bool:
    """True when env carries this process's recording to a Python child (its mode and bootstrap)."""
    return env.get(ENV_MODE) == os.environ.get(ENV_MODE) and _bootstrap_entry() in str(env.get("PYTHONPATH", ""))


def with_bootstrap(env: dict[str, Any]) -> dict[str, Any]:
    """env with the WOP_* variables of this process and the bootstrap first on PYTHONPATH."""
    restored = {**env, **{name: value for name, value in os.environ.items() if name.startswith("WOP_")}}
    entry = _bootstrap_entry()
    existing = str(env.get("PYTHONPATH", ""))
    if entry and entry not in existing.split(os.pathsep):
        restored["PYTHONPATH"] = entry + (os.pathsep + existing if existing else "")
    return restored


def _bootstrap_entry() -> str:
    """The PYTHONPATH entry wop put first for this process (its bootstrap's directory)."""
    first = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    return first if first.endswith("_bootstrap") else os.path.join(os.path.dirname(__file__), "_bootstrap")


def _report(argv: list[str], reason: str) -> None:
    """A child wop cannot see, in a capture: count it; record the first from each call site."""
    session = _state["session"]
    if session is None or session is UNRESOLVED or session.replayer is not None:
        return
    site = _starter(sys._getframe(3))
    if site is None:
        return
    name = os.path.basename(argv[0])
    where = (name, None if site is None else (site.get("file"), site.get("line")))
    with _lock:
        entry = _seen.get(where)
        if entry is not None and entry[2] is session:
            entry[0] += 1
            return
        details = {"executable": name, "argv": argv[:_ARGV_KEPT], "reason": reason, "site": site}
        _seen[where] = [1, details, session]
    session.record("nondeterministic", {"source": SOURCE, "key": name, "unrecorded": True, "value": details})
    tell_parent(session, UNRECORDED_PROCESS, details, 1)


def _starter(frame: Any) -> dict[str, Any] | None:
    """The site of the code that started a child: the first frame above the machinery that starts processes
    (subprocess, os.popen, asyncio, anyio and the other plumbing packages). None when that is the standard library
    itself (platform's `uname`, ctypes' `ldconfig`: probes of the machine, not the program's children) or wop."""
    from openwop_cli.runtime.callsite import PACKAGE, PLUMBING, PROGRAM, place, site_of

    while frame is not None:
        filename = frame.f_code.co_filename
        kind, file = place(filename)
        if kind in (PROGRAM, PACKAGE):
            return site_of(frame, file)
        if kind != PLUMBING and not filename.endswith(_MACHINERY):
            return None
        frame = frame.f_back
    return None
