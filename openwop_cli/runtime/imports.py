"""Run code right after a module is first imported: how wop attaches to a library only once it is used.

`when_imported("subprocess", patch)` calls patch(module) now if the module is loaded, else right
after its first import, so a program that never imports a library pays nothing for its adapter.
"""

import sys
import threading
from collections.abc import Callable
from typing import Any

_hooks: dict[str, list[Callable[[Any], None]]] = {}
_lock = threading.Lock()


def when_imported(name: str, hook: Callable[[Any], None]) -> None:
    """Call hook(module) once module `name` is imported (immediately if it already is)."""
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            _hooks.setdefault(name, []).append(hook)
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            return
    hook(module)


class _PostImportFinder:
    """A meta-path finder that finds nothing itself: it wraps the real loader of a hooked module."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _hooks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _HookedLoader(spec.loader, name)
        return spec


class _HookedLoader:
    """The real loader, plus the hooks once the module has executed."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        with _lock:
            hooks = _hooks.pop(self._name, [])
        for hook in hooks:
            try:
                hook(module)
            except Exception as exc:  # an adapter must never break the program's import
                print(f"wop: could not attach to {self._name}: {type(exc).__name__}: {exc}", file=sys.stderr)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._loader, attribute)


_FINDER = _PostImportFinder()
