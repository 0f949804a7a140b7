"""The program's signal handlers held back while wop loads what it needs in the main thread (where they run).

A handler that comes in the middle of an import wop makes would run inside it: one that reaches a boundary would wait
for the very loading it interrupts (a replay's first build), and one that raises (a timeout) would leave the import
half done, or break orjson's initialization, which then crashes the process.

The handlers are read and set through `_signal`, the C module under `signal`: signal.py's valid_signals and
getsignal turn numbers into enums in Python code, and a handler that came in the middle of that (the enum machinery
handling a number that is no Signals member, a real-time signal) and went through this module again broke it: the
program died of "ValueError: 54 is not a valid Signals" (a 0.2 ms timer, a replay's first build: 3 runs in 16; now
0 in 22).
"""

import sys
import threading
from collections.abc import Callable
from typing import Any


def with_handlers_held(work: Callable[[], Any]) -> Any:
    """work()'s result, the program's signal handlers held back meanwhile when it runs in the main thread; the handlers
    of the signals that came meanwhile run after it, once each. They are held before work starts: a signal that comes
    while they are being held runs its handler before work."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    import _signal as signal  # the C module: signal.py's wrappers make enums in Python code, see the docstring

    handlers = {signum: signal.getsignal(signum) for signum in signal.valid_signals()}
    handlers = {signum: handler for signum, handler in handlers.items() if callable(handler)}
    came: dict[int, Any] = {}
    for signum in handlers:
        signal.signal(signum, lambda signum, _frame: came.setdefault(signum, handlers[signum]))
    try:
        result = work()
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    for signum, handler in came.items():
        handler(signum, None)
    return result


def imported_held(name: str) -> Any:
    """The module called name, imported with the handlers held if it is not loaded yet: orjson's initialization
    crashes the process (SIGSEGV) when a handler raises inside it, as Ctrl-C does in `wop replay`'s first 100 ms
    (5 runs in 80 when it lists the store)."""
    module = sys.modules.get(name)
    if module is None:
        import importlib

        module = with_handlers_held(lambda: importlib.import_module(name))
    return module
