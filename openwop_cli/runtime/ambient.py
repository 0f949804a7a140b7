"""Ambient values: the clock, uuids, random numbers and OS entropy a program reads, recorded with no code changes.

While a session records or replays, these are replaced by wrappers (runtime.patching.install; `uninstall` puts
every original back, and a module is patched only once the program imports it):

    clock    time.time, time.time_ns; time.localtime/gmtime/ctime/asctime/strftime without a time;
             datetime.datetime.now/utcnow/today, datetime.date.today (in place: see typepatch)
    uuid     uuid.uuid1, uuid.uuid4
    rng      the module-level random functions; the seed of a random.Random() seeded from the OS
    entropy  os.urandom, secrets.*, random.SystemRandom

A read is recorded when its immediate caller is the program or an installed package
(callsite.caller_site: the stdlib's own reads — logging's timestamps, tempfile's names, email ids —
cost one frame lookup and stay live) and no boundary is open in the thread/task (a tool body or an
LLM call is one unit: a replayed tool never runs its body). time.monotonic, perf_counter and
process_time are never touched, so durations and timeouts stay live.

Each read is a `nondeterministic` event with `ambient: true`, whose origin carries the call site.
A replay serves each (call site, thread/task) its recorded values in order (replay.ambient); a
read with none left gets a live value, which the replay report notes but never calls a divergence.

In a multiprocessing pool's worker the events also name the task it runs (pooltasks.py), and a replay
serves a task's values to whichever worker runs it.

A random function's value is the list of primitive draws (random(), getrandbits(), randbytes()) it
made (draws.py), so choice/shuffle/sample replay exactly without recording their population.
"""

import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from openwop_cli.runtime.callsite import caller_site
from openwop_cli.runtime.imports import when_imported
from openwop_cli.runtime.session import UNRESOLVED, inside_boundary
from openwop_cli.runtime.session import _state as _sessions
from openwop_cli.wire.environ import ENV_AMBIENT

CLOCK, UUID, RNG, ENTROPY = "clock", "uuid", "rng", "entropy"
NONDETERMINISTIC = "nondeterministic"

_installs = [0]
_patched: set[str] = set()
_undo: list[Callable[[], None]] = []
_lock = threading.RLock()


def enabled(default: bool = True) -> bool:
    """Whether ambient values are to be recorded in this process (WOP_AMBIENT=0 turns them off)."""
    value = os.environ.get(ENV_AMBIENT)
    return default if value is None else value.lower() not in ("0", "off", "false", "no")


def install_patches(patches: list[tuple[str, Callable[[Any], None]]]) -> None:
    """Patch each (module name, patch) once the program imports that module, for the active session (counted: as
    many `uninstall`s undo it). runtime.patching.install names what to patch: the ambient sources and the pools'."""
    with _lock:
        _installs[0] += 1
    for name, patch in patches:
        if name not in _patched:
            when_imported(name, _once(name, patch))


def value_patches() -> list[tuple[str, Callable[[Any], None]]]:
    """The clock, uuid and entropy sources this module patches (random and secrets: runtime.draws)."""
    return [("time", _patch_time), ("os", _patch_os), ("datetime", _patch_datetime), ("uuid", _patch_uuid)]


def uninstall() -> None:
    """Undo one `install`; the last one puts every original back."""
    with _lock:
        if _installs[0] == 0:
            return
        _installs[0] -= 1
        if _installs[0]:
            return
        while _undo:
            _undo.pop()()
        _patched.clear()


def installed() -> bool:
    """True while the ambient sources are patched."""
    return _installs[0] > 0


def _once(name: str, patch: Callable[[Any], None]) -> Callable[[Any], None]:
    def patch_if_installed(module: Any) -> None:
        with _lock:
            if not _installs[0] or name in _patched:
                return
            _patched.add(name)
            try:
                patch(module)
            except Exception as exc:  # recording less must never break the program
                print(f"wop: cannot record the {name} values this program reads ({type(exc).__name__}: {exc})",
                      file=sys.stderr)

    return patch_if_installed


def replace(target: Any, name: str, value: Any, by_name: bool = False) -> None:
    """target.name = value (a module, class or instance), undone by the last `uninstall`.

    A function put on a module is wrapped in staticmethod (callable, and no descriptor): code that keeps
    a module function as a class attribute (logging.Formatter.converter = time.localtime) must not get
    it back as a method, just as with the built-in it replaces. One pickled by name (by_name: a Process
    target) is put as it is."""
    if isinstance(target, types.ModuleType) and isinstance(value, types.FunctionType) and not by_name:
        value = staticmethod(value)
    own = vars(target)
    if name in own:
        original = own[name]
        _undo.append(lambda: setattr(target, name, original))
    else:
        _undo.append(lambda: delattr(target, name))
    setattr(target, name, value)


# ---- one value --------------------------------------------------------------------------------


def observe(source: str, key: str, site: dict[str, Any], live: Callable[[], Any], encode: Callable[[Any], Any],
            decode: Callable[[Any], Any]) -> Any:
    """The value read at site: live and recorded in a capture, the recorded one in a replay (live when none is left)."""
    session = _sessions["session"]
    if session is None or session is UNRESOLVED or inside_boundary():
        return live()
    replayer = session.replayer
    if replayer is None:
        value = live()
        session.record(NONDETERMINISTIC, {"source": source, "key": key, "value": encode(value), "ambient": True},
                       site=site)
        return value
    recorded = replayer.ambient(source, key, site)
    if recorded is not None:
        try:
            value = decode(recorded)
        except (TypeError, ValueError, OverflowError):
            value = None
        if value is not None:
            return value
    value = live()
    replayer.ambient_live(source, key, site, encode(value), recorded)
    return value


def wrap(source: str, key: str, original: Callable[..., Any], encode: Callable[[Any], Any],
         decode: Callable[[Any], Any]) -> Callable[..., Any]:
    """original, with its result recorded and replayed per call site (see the module docstring)."""

    def ambient(*args: Any, **kwargs: Any) -> Any:
        site = caller_site(1)
        if site is None:
            return original(*args, **kwargs)
        return observe(source, key, site, lambda: original(*args, **kwargs), encode, decode)

    return _named(ambient, original, key)


def wrap_nullary(source: str, key: str, original: Callable[[], Any], encode: Callable[[Any], Any],
                 decode: Callable[[Any], Any]) -> Callable[[], Any]:
    """`wrap` for a function without arguments (time.time, uuid.uuid4): the leanest path for callers not recorded."""

    def ambient() -> Any:
        site = caller_site(1)
        if site is None:
            return original()
        return observe(source, key, site, original, encode, decode)

    return _named(ambient, original, key)


def _named(wrapper: Callable[..., Any], original: Callable[..., Any], key: str) -> Callable[..., Any]:
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(original, "__name__", key)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    return wrapper


# ---- the clock ----------------------------------------------------------------------------------


def _float(value: Any) -> float:
    if type(value) is not float:
        raise TypeError("not a recorded time")
    return value


def _int(value: Any) -> int:
    if type(value) is not int:
        raise TypeError("not a recorded integer")
    return value


def _patch_time(module: Any) -> None:
    real_time = module.time
    replace(module, "time", wrap_nullary(CLOCK, "time.time", real_time, float, _float))
    replace(module, "time_ns", wrap_nullary(CLOCK, "time.time_ns", module.time_ns, int, _int))
    for name in ("localtime", "gmtime", "ctime"):
        replace(module, name, _of_seconds(name, getattr(module, name), real_time))
    replace(module, "asctime", _of_local_time("asctime", module.asctime, module.localtime, real_time))
    replace(module, "strftime", _formatted(module.strftime, module.localtime, real_time))


def _of_seconds(name: str, original: Callable[..., Any], real_time: Callable[[], float]) -> Callable[..., Any]:
    """time.localtime/gmtime/ctime: without seconds they read the clock, which is then recorded."""
    key = f"time.{name}"

    def of_seconds(*args: Any) -> Any:
        if args and args[0] is not None:
            return original(*args)
        site = caller_site(1)
        if site is None:
            return original()
        return original(observe(CLOCK, key, site, real_time, float, _float))

    return of_seconds


def _of_local_time(name: str, original: Callable[..., Any], localtime: Callable[..., Any],
                   real_time: Callable[[], float]) -> Callable[..., Any]:
    """time.asctime(): without a time tuple it formats the local time now, which is then recorded."""
    key = f"time.{name}"

    def of_local_time(*args: Any) -> Any:
        if args:
            return original(*args)
        site = caller_site(1)
        if site is None:
            return original()
        return original(localtime(observe(CLOCK, key, site, real_time, float, _float)))

    return of_local_time


def _formatted(strftime: Callable[..., Any], localtime: Callable[..., Any],
               real_time: Callable[[], float]) -> Callable[..., Any]:
    """time.strftime(format): without a time tuple it formats the local time now, which is then recorded."""

    def formatted(format: str, *args: Any) -> str:
        if args:
            return strftime(format, *args)
        site = caller_site(1)
        if site is None:
            return strftime(format)
        return strftime(format, localtime(observe(CLOCK, "time.strftime", site, real_time, float, _float)))

    return formatted


def _patch_datetime(module: Any) -> None:
    from openwop_cli.runtime.typepatch import set_type_attribute

    moment, day = module.datetime, module.date
    now, utcnow, today = moment.__dict__["now"], moment.__dict__["utcnow"], day.__dict__["today"]

    def ambient_now(cls: Any, tz: Any = None) -> Any:
        site = caller_site(1)
        if site is None:
            return now(cls, tz)
        return observe(CLOCK, "datetime.now", site, lambda: now(cls, tz), _isoformat,
                       lambda value: _moment_in(cls.fromisoformat(value), tz))

    def ambient_utcnow(cls: Any) -> Any:
        site = caller_site(1)
        if site is None:
            return utcnow(cls)
        return observe(CLOCK, "datetime.utcnow", site, lambda: utcnow(cls), _isoformat, cls.fromisoformat)

    def ambient_today(cls: Any) -> Any:
        site = caller_site(1)
        if site is None:
            return today(cls)
        return observe(CLOCK, f"{cls.__name__}.today", site, lambda: today(cls), _isoformat, cls.fromisoformat)

    for cls, name, original, replacement in ((moment, "now", now, ambient_now),
                                             (moment, "utcnow", utcnow, ambient_utcnow),
                                             (day, "today", today, ambient_today)):
        replacement.__doc__ = original.__doc__
        set_type_attribute(cls, name, classmethod(replacement))
        _undo.append(lambda cls=cls, name=name, original=original: set_type_attribute(cls, name, original))


def _isoformat(value: Any) -> str:
    return value.isoformat()


def _moment_in(value: Any, tz: Any) -> Any:
    """A recorded now(tz) in the time zone object the program passed (the recorded offset is fixed)."""
    return value if tz is None else value.astimezone(tz)


# ---- uuids and entropy --------------------------------------------------------------------------


def _patch_uuid(module: Any) -> None:
    replace(module, "uuid1", wrap(UUID, "uuid.uuid1", module.uuid1, str, module.UUID))
    replace(module, "uuid4", wrap_nullary(UUID, "uuid.uuid4", module.uuid4, str, module.UUID))


def _patch_os(module: Any) -> None:
    urandom = module.urandom

    def ambient_urandom(size: int) -> bytes:
        site = caller_site(1)
        if site is None:
            return urandom(size)
        return observe(ENTROPY, "os.urandom", site, lambda: urandom(size), bytes.hex,
                       lambda value: _sized(bytes.fromhex(value), size))

    replace(module, "urandom", _named(ambient_urandom, urandom, "os.urandom"))


def _sized(value: bytes, size: int) -> bytes:
    if len(value) != size:
        raise ValueError("recorded bytes of another size")
    return value

