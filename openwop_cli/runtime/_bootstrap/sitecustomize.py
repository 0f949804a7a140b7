"""Put first on PYTHONPATH by `wop capture`: installs the wop runtime in every Python the command starts.

It loads openwop_cli from the wop that launched the command (WOP_PACKAGE_ROOT), without putting that wop's other
packages ahead of the program's own. A process started before its capture was ready (WOP_GATE) then waits for the
parent's go, before anything the program contributes runs: the sitecustomize the environment already had (Python
imports only the first one it finds; it runs now), usercustomize, the program. Only the .pth files of the
interpreter's site directories run earlier, as Python processes them before any sitecustomize; wop starts early only
its own interpreter in its own environment, whose .pth files ran in wop's own start-up too.

In a Python the runtime cannot run in (older than 3.11, or without orjson), the process wop started ends before its
program's first line, with one line and exit code 3, and a Python that process started in turn runs unrecorded, with
one warning (ending it would change what the program does); a replayed process always ends (it would reach the
network). So this file is written in the Python that 2.7 parses too.
"""

import os
import sys

MINIMUM_PYTHON = (3, 11)
EXIT_CANNOT_RUN = 3


def _run_existing_sitecustomize():
    if sys.version_info[0] < 3:  # Python 2 has no importlib.machinery (nor did it run it before wop said why)
        return
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    search = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", search)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # what site.py does for a failing sitecustomize: report and go on
        _say("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s" % (type(exc).__name__, exc))


def _start():
    mode = os.environ.get("WOP_MODE", "off")
    if mode in ("", "off"):
        _run_existing_sitecustomize()
        return
    gated = os.environ.pop("WOP_GATE", None) is not None  # popped: the processes this one starts do not wait
    install = None
    if sys.version_info < MINIMUM_PYTHON:
        problem = "wop's runtime needs Python %d.%d or later" % MINIMUM_PYTHON
    else:
        try:
            install, problem = _runtime(mode)
        except Exception as exc:
            problem = "wop's runtime did not load (%s: %s)" % (type(exc).__name__, exc)
    if problem is not None:
        _cannot_record(mode, problem, gated)
    elif gated:
        _wait_for_go()
    _run_existing_sitecustomize()
    if install is None:
        return
    try:
        install()
    except Exception as exc:
        _cannot_record(mode, "wop's runtime did not install (%s: %s)" % (type(exc).__name__, exc), gated)


def _runtime(mode):
    """The mode's install function, the runtime loaded (before the go: it is wop's, and loads meanwhile), and why it
    cannot run here (None: it can)."""
    package_root = os.environ.get("WOP_PACKAGE_ROOT", "")
    _load_openwop_cli(package_root)
    if not _orjson_found(package_root):
        return None, "it cannot import orjson, which wop's runtime needs (install it there, or run wop's own Python)"
    if mode in ("replay", "fork"):
        from openwop_cli.runtime.replay_child import install  # this script sits above every layer
    else:
        from openwop_cli.runtime.bootstrap import install
    return install, None


def _wait_for_go():
    """Wait for `wop`'s go, and take the environment it settled meanwhile; without one (it failed or was killed) the
    program must not run: this process ends."""
    from openwop_cli.runtime.sender import wait_for_go

    try:
        os.environ.update(wait_for_go(os.environ.get("WOP_SINK", "")))
    except (OSError, ValueError) as exc:
        _say("wop: `wop` went away before the program started (%s); stopping" % exc)
        os._exit(EXIT_CANNOT_RUN)


def _cannot_record(mode, problem, gated):
    """Say why wop cannot record (or replay) in this Python; end the process unless it is one the program started
    (not in a replay: running live would reach the network)."""
    where = "%s (Python %s)" % (sys.executable, sys.version.split()[0])
    if mode in ("replay", "fork"):
        _say("wop: cannot %s in %s: %s; stopping" % (mode, where, problem))
    elif gated or os.environ.get("WOP_PARENT_PID") == str(os.getppid()):
        _say("wop: cannot record in %s: %s; the program did not run" % (where, problem))
    else:
        _say("wop: process %d, %s, is not recorded: %s" % (os.getpid(), where, problem))
        return
    os._exit(EXIT_CANNOT_RUN)


def _say(line):
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:  # no usable stderr: the exit code still says it
        pass


def _end_interrupted():
    """End as a process Ctrl-C interrupted does (of SIGINT), not with the fatal error Python reports for an exception
    in site: the program never started."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(128 + signal.SIGINT)


def _load_openwop_cli(package_root):
    import importlib.machinery
    import importlib.util

    if "openwop_cli" in sys.modules or not package_root:
        return
    spec = importlib.machinery.PathFinder.find_spec("openwop_cli", [package_root])
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["openwop_cli"] = module
    spec.loader.exec_module(module)


def _orjson_found(package_root):
    """Whether this Python finds orjson, in the program's environment or else in wop's (put last on sys.path then)."""
    import importlib.machinery
    import importlib.util

    if importlib.util.find_spec("orjson") is not None:
        return True
    if not package_root or importlib.machinery.PathFinder.find_spec("orjson", [package_root]) is None:
        return False
    sys.path.append(package_root)  # the program's environment lacks wop's dependencies; wop's has them
    return True


try:
    _start()
except KeyboardInterrupt:  # Ctrl-C before the program's first line (often while it waits for its go)
    _end_interrupted()
