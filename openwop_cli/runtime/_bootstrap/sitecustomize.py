"""Put first on PYTHONPATH by `wop capture`: installs the wop runtime in every Python the command starts.

It loads openwop_cli from the wop that launched the command (WOP_PACKAGE_ROOT), without putting that wop's other
packages ahead of the program's own. A process started before its capture was ready (WOP_GATE) then waits for the
parent's go, before anything the program contributes runs: the sitecustomize the environment already had (Python
imports only the first one it finds; it runs now), usercustomize, the program. Only the .pth files of the
interpreter's site directories run earlier, as Python processes them before any sitecustomize; wop starts early only
its own interpreter in its own environment, whose .pth files ran in wop's own start-up too.
"""

import os
import sys


def _run_existing_sitecustomize() -> None:
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
        print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}", file=sys.stderr)


def _start() -> None:
    mode = os.environ.get("WOP_MODE", "off")
    if mode in ("", "off"):
        _run_existing_sitecustomize()
        return
    gated = os.environ.pop("WOP_GATE", None) is not None  # popped: the processes this one starts do not wait
    try:
        install = _runtime(mode)
    except Exception as exc:
        _not_installed(mode, exc, gated)
        install = None
    if gated:
        _wait_for_go()
    _run_existing_sitecustomize()
    if install is None:
        return
    try:
        install()
    except Exception as exc:
        _not_installed(mode, exc, gated)


def _runtime(mode: str):  # type: ignore[no-untyped-def]
    """The mode's install function, the runtime loaded (before the go: it is wop's, and loads meanwhile)."""
    _load_openwop_cli(os.environ.get("WOP_PACKAGE_ROOT", ""))
    if mode in ("replay", "fork"):
        from openwop_cli.replay.child import install  # this script sits above every layer
    else:
        from openwop_cli.runtime.bootstrap import install
    return install


def _wait_for_go() -> None:
    """Wait for `wop`'s go; without one (it failed or was killed) the program must not run: this process ends."""
    from openwop_cli.runtime.channel import wait_for_go

    try:
        wait_for_go(os.environ.get("WOP_SINK", ""))
    except (OSError, ValueError) as exc:
        print(f"wop: `wop` went away before the program started ({exc}); stopping", file=sys.stderr)
        os._exit(3)


def _not_installed(mode: str, exc: Exception, gated: bool) -> None:
    problem = f"wop: could not install the {mode} runtime in {sys.executable} ({type(exc).__name__}: {exc})"
    if mode in ("replay", "fork") or gated:  # running live would reach the network; unrecorded, before its go
        print(f"{problem}; stopping", file=sys.stderr)
        os._exit(3)
    print(f"{problem}; this process is not recorded", file=sys.stderr)


def _end_interrupted() -> None:
    """End as a process Ctrl-C interrupted does (of SIGINT), not with the fatal error Python reports for an exception
    in site: the program never started."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(128 + signal.SIGINT)


def _load_openwop_cli(package_root: str) -> None:
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
    if importlib.util.find_spec("orjson") is None:  # the program's environment lacks wop's dependencies
        sys.path.append(package_root)


try:
    _start()
except KeyboardInterrupt:  # Ctrl-C before the program's first line (often while it waits for its go)
    _end_interrupted()
