"""Replace a method of a built-in type in place, so the type stays the very same class.

`datetime.datetime` is a C type: `datetime.datetime.now = f` raises TypeError. Swapping the class
for a subclass (what freezegun does) breaks `type(x) is datetime`, pickling by reference and
libraries that check exact types (orjson, pydantic-core). Writing into the type's own dict and
telling the interpreter the type changed (PyType_Modified, which also drops specialized bytecode
that cached the old method) keeps every one of those working, and is undone the same way.
"""

import ctypes
import gc
from typing import Any


def set_type_attribute(cls: type, name: str, value: Any) -> None:
    """cls.name = value, also for an immutable built-in type (see the module docstring)."""
    namespace = gc.get_referents(cls.__dict__)[0]
    namespace[name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
