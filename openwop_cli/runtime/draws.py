"""Random numbers as recorded draws: what random, random.SystemRandom and secrets hand a program, replayed exactly.

A call of a public random function the program makes (random.choice, SystemRandom().sample,
secrets.token_hex …) is one ambient value: the list of primitive draws the call made — random()
floats, getrandbits() integers (hex above 63 bits), randbytes() bytes as hex. A replay runs the
same function over the recorded draws, so choice, shuffle and sample come out the same without
their population ever being recorded; a call that needs more draws than were recorded (the
program changed) takes the rest live, which the replay report notes.

The module-level functions are deterministic after random.seed(x) or random.setstate(): from then
on they are not recorded (random.seed() without a value starts again). A random.Random() seeded
from the OS is given a recorded seed instead, so every draw from it replays.
"""

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime import ambient
from openwop_cli.runtime.callsite import caller_site
from openwop_cli.runtime.session import UNRESOLVED, inside_boundary
from openwop_cli.runtime.session import _state as _sessions

_UNRECORDED = frozenset({"seed", "getstate", "setstate"})
_SEED_BYTES = 32
_urandom = getattr(os.urandom, "__wrapped__", os.urandom)
_module_seeded = [False]


class _Open(threading.local):
    draws: "Draws | None" = None


_open = _Open()


class Draws:
    """The draws of one recorded call: served from the capture while they last, then made live."""

    __slots__ = ("served", "position", "made", "live")

    def __init__(self, served: Any, replaying: bool) -> None:
        self.served = served if type(served) is list else None
        self.position = 0
        self.made: list[Any] = []
        self.live = replaying and self.served is None


def _recorded_call(source: str, key: str, site: dict[str, Any], function: Callable[..., Any], args: tuple,
                   kwargs: dict[str, Any]) -> Any:
    session = _sessions["session"]
    if session is None or session is UNRESOLVED or inside_boundary():
        return function(*args, **kwargs)
    replayer = session.replayer
    draws = Draws(replayer.ambient(source, key, site) if replayer is not None else None, replayer is not None)
    _open.draws = draws
    try:
        return function(*args, **kwargs)
    finally:
        _open.draws = None
        if replayer is None:
            session.record(ambient.NONDETERMINISTIC,
                           {"source": source, "key": key, "value": draws.made, "ambient": True}, site=site)
        elif draws.live:
            replayer.ambient_live(source, key, site, draws.made)


def recorded(source: str, key: str, function: Callable[..., Any],
             seeded: list[bool] | None = None) -> Callable[..., Any]:
    """function as one recorded value per call from the program: the draws it made (see the module docstring)."""

    def random_call(*args: Any, **kwargs: Any) -> Any:
        if _open.draws is not None or (seeded is not None and seeded[0]):
            return function(*args, **kwargs)
        site = caller_site(1)
        if site is None:
            return function(*args, **kwargs)
        return _recorded_call(source, key, site, function, args, kwargs)

    random_call.__wrapped__ = function  # type: ignore[attr-defined]
    random_call.__name__ = getattr(function, "__name__", key)
    random_call.__doc__ = getattr(function, "__doc__", None)
    return random_call


def primitive(source: str, key: str, function: Callable[..., Any], encode: Callable[[Any], Any],
              decode: Callable[..., Any]) -> Callable[..., Any]:
    """A primitive draw: part of the recorded call that is open in this thread, or a recorded call of its own."""

    def draw(*args: Any, **kwargs: Any) -> Any:
        draws = _open.draws
        if draws is None:
            site = caller_site(1)
            if site is None:
                return function(*args, **kwargs)
            return _recorded_call(source, key, site, draw, args, kwargs)
        if draws.served is not None:
            if draws.position < len(draws.served):
                value = decode(draws.served[draws.position], *args, *kwargs.values())
                draws.position += 1
                if value is not None:
                    return value
            draws.served = None
            draws.live = True
        value = function(*args, **kwargs)
        draws.made.append(encode(value))
        return value

    draw.__wrapped__ = function  # type: ignore[attr-defined]
    draw.__name__ = getattr(function, "__name__", key)
    return draw


# ---- encoding the draws ---------------------------------------------------------------------------


def _same(value: Any) -> Any:
    return value


def _bits(value: int) -> Any:
    return value if value < 1 << 63 else format(value, "x")


def _float_draw(value: Any, *args: Any) -> float | None:
    return value if type(value) is float and 0.0 <= value < 1.0 else None


def _bits_draw(value: Any, *args: Any) -> int | None:
    if type(value) is str:
        try:
            value = int(value, 16)
        except ValueError:
            return None
    return value if type(value) is int and value >= 0 and value >> args[-1] == 0 else None


def _bytes_draw(value: Any, *args: Any) -> bytes | None:
    try:
        data = bytes.fromhex(value)
    except (TypeError, ValueError):
        return None
    return data if len(data) == args[-1] else None


_PRIMITIVES = {"random": (_same, _float_draw), "getrandbits": (_bits, _bits_draw), "randbytes": (bytes.hex, _bytes_draw)}


# ---- patching ---------------------------------------------------------------------------------------


def patch_random(module: Any) -> None:
    """The module functions (over the hidden instance's draws), Random() seeds, and SystemRandom."""
    names = [name for name in module.__all__ if name not in _UNRECORDED and callable(getattr(module, name, None))
             and not isinstance(getattr(module, name), type)]
    instance = module._inst
    for name in ("random", "getrandbits"):
        encode, decode = _PRIMITIVES[name]
        ambient.replace(instance, name, primitive(ambient.RNG, f"random.{name}", getattr(instance, name), encode, decode))
    _module_seeded[0] = False
    for name in names:
        ambient.replace(module, name, recorded(ambient.RNG, f"random.{name}", getattr(instance, name), _module_seeded))
    ambient.replace(module, "seed", _seeding(module.seed, lambda args, kwargs: _seed_value(args, kwargs) is not None))
    ambient.replace(module, "setstate", _seeding(module.setstate, lambda args, kwargs: True))
    ambient.replace(module.Random, "seed", _os_seeded(module.Random.seed, module.Random.__init__.__code__))
    system = module.SystemRandom
    for name in names:
        if name in _PRIMITIVES:
            encode, decode = _PRIMITIVES[name]
            ambient.replace(system, name, primitive(ambient.ENTROPY, f"SystemRandom.{name}", system.__dict__[name],
                                                    encode, decode))
        elif name not in vars(system):
            ambient.replace(system, name, recorded(ambient.ENTROPY, f"SystemRandom.{name}", getattr(module.Random, name)))


def patch_secrets(module: Any) -> None:
    """secrets' functions, each one recorded call over its SystemRandom's draws."""
    system = module._sysrand
    functions = {"randbits": system.getrandbits, "choice": system.choice}
    for name in ("randbits", "choice", "randbelow", "token_bytes", "token_hex", "token_urlsafe"):
        function = functions.get(name) or getattr(module, name)
        ambient.replace(module, name, recorded(ambient.ENTROPY, f"secrets.{name}", function))


def _seed_value(args: tuple, kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("a")


def _seeding(function: Callable[..., Any], deterministic: Callable[[tuple, dict], bool]) -> Callable[..., Any]:
    """random.seed / random.setstate: whether the module functions are deterministic from now on."""

    def seeding(*args: Any, **kwargs: Any) -> Any:
        _module_seeded[0] = deterministic(args, kwargs)
        return function(*args, **kwargs)

    seeding.__wrapped__ = function  # type: ignore[attr-defined]
    seeding.__name__ = function.__name__
    seeding.__doc__ = function.__doc__
    return seeding


def _os_seeded(seed: Callable[..., Any], init_code: Any) -> Callable[..., Any]:
    """Random.seed: an instance seeded from the OS (Random(), r.seed()) gets a recorded seed instead."""

    def recorded_seed(self: Any, a: Any = None, version: int = 2) -> None:
        if a is None:
            site = caller_site(2 if sys._getframe(1).f_code is init_code else 1)
            if site is not None:
                a = ambient.observe(ambient.RNG, "random.Random", site, _new_seed, _hex, _from_hex)
        return seed(self, a, version)

    recorded_seed.__wrapped__ = seed  # type: ignore[attr-defined]
    recorded_seed.__doc__ = seed.__doc__
    return recorded_seed


def _new_seed() -> int:
    return int.from_bytes(_urandom(_SEED_BYTES), "big")


def _hex(value: int) -> str:
    return format(value, "x")


def _from_hex(value: Any) -> int:
    return int(value, 16)
