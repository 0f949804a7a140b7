"""Put first on PYTHONPATH by `wop capture`: installs the wop runtime in every Python the command starts.

It first runs the sitecustomize the environment already had (Python imports only the first one it
finds), then loads openwop_cli from the wop that launched the command (WOP_PACKAGE_ROOT), without
putting that wop's other packages ahead of the program's own.
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


def _install_wop() -> None:
    if os.environ.get("WOP_MODE", "off") in ("", "off"):
        return
    try:
        _load_openwop_cli(os.environ.get("WOP_PACKAGE_ROOT", ""))
        if os.environ["WOP_MODE"] in ("replay", "fork"):
            from openwop_cli.replay.child import install  # this script sits above every layer
        else:
            from openwop_cli.runtime.bootstrap import install
        install()
    except KeyboardInterrupt:  # Ctrl-C before the program's first line (often while it waits for its go)
        _end_interrupted()
    except Exception as exc:
        mode = os.environ.get("WOP_MODE")
        problem = f"wop: could not install the {mode} runtime in {sys.executable} ({type(exc).__name__}: {exc})"
        if mode in ("replay", "fork"):  # running live instead would reach the network: stop
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


_run_existing_sitecustomize()
_install_wop()
