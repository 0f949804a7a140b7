"""`wop.capture`: recording a block, a function or a whole program without `wop capture`; this process writes the
capture itself (also WOP_MODE=capture with WOP_CAPTURE_DIR and no `wop` parent: session.session_from_environment)."""

import atexit
import functools
import inspect
import os
import sys
import time as _time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from openwop_cli.runtime.session import (
    AppendRecorder,
    Session,
    activate,
    deactivate,
    on_uncaught_exception,
    register_standalone,
)
from openwop_cli.runtime.state_api import state

F = TypeVar("F", bound=Callable[..., Any])


class capture:
    """Record a block, a function or a whole program without `wop capture`.

        with wop.capture(name="checkout", out="tests/captures/checkout") as run:
            agent.main()
        print(run.path)

    Also a decorator (`@wop.capture(name=...)`). Without `out`, the capture goes to the store
    (WOP_HOME). The manifest is finalized on exit: status error with the exception when one escaped.
    """

    def __init__(self, name: str | None = None, *, out: str | os.PathLike[str] | None = None, redact: str = "default",
                 test: str | None = None, ambient: bool | None = None):
        """test: the pytest node id when the pytest plugin records (replays of it belong to pytest);
        ambient: record the clock, uuid and random reads of unmodified code (default: on, WOP_AMBIENT=0 turns it off)."""
        from openwop_cli.runtime import ambient as ambient_values

        self.name = name
        self.out = out
        self.redact = redact
        self.test = test
        self.ambient = ambient_values.enabled() if ambient is None else ambient
        self.path: Path | None = None
        self.capture_id: str | None = None
        self.manifest: dict[str, Any] | None = None
        self._sink: Any = None
        self._session: Session | None = None
        self._owner_pid = 0
        self._started = 0.0
        self._uncaught: BaseException | None = None
        self._exit_code: int | None = None

    def open(self, *, make_active: bool = True) -> Session:
        """Create the capture and record run_start; the session is active unless make_active is False."""
        from openwop_cli.format.events import new_id
        from openwop_cli.format.redact import Redactor
        from openwop_cli.format.sink import CaptureSink
        from openwop_cli.runtime.program import run_start_data

        capture_id = new_id()
        if self.out is not None:
            self.path = Path(self.out)
        else:
            from openwop_cli.home import captures_root

            self.path = captures_root() / capture_id
        self._sink = CaptureSink(self.path, redactor=Redactor.from_environment(self.redact), on_warning=_warn)
        argv, cwd = list(sys.argv), os.getcwd()
        name = self.name or Path(argv[0]).stem or None
        program: dict[str, Any] = {"argv": argv, "cwd": cwd}
        if self.test is not None:
            program["pytest"] = self.test
        self._sink.start({"captureId": capture_id, "name": name, "program": program, "ambient": self.ambient})
        self.capture_id = capture_id
        self._session = Session(AppendRecorder(self._sink.append, self._sink.flush))
        from openwop_cli.runtime import adapters, connections

        adapters.install()
        connections.watch()
        state.reset()
        self._session.record("run_start", run_start_data(argv, cwd, sys.version.split()[0]))
        self._owner_pid = os.getpid()
        self._started = _time.monotonic()
        if make_active:
            activate(self._session)
        from openwop_cli.runtime import patching

        patching.install(values=self.ambient)
        return self._session

    def close(self, error: BaseException | None = None, exit_code: int | None = None) -> dict[str, Any]:
        """Record run_end, pin the local modules, and finalize the manifest."""
        from openwop_cli.runtime.program import local_modules, pin_files, run_end_data

        session = self._session
        assert session is not None and self._sink is not None and self.path is not None, "capture was not opened"
        deactivate(session)
        from openwop_cli.runtime import ambient

        ambient.uninstall()
        end = run_end_data(exit_code, error, _time.monotonic() - self._started)
        session.record("run_end", end)
        cwd = os.getcwd()
        modules = pin_files((path for _, path in local_modules(cwd)), cwd, self._sink.blobs, self._sink.redactor.scrub_text)
        self.manifest = self._sink.finalize(
            end["status"], end.get("error"), program={**self._sink.manifest["program"], "python": sys.version.split()[0],
                                                      "modules": modules}
        )
        return self.manifest

    def close_at_exit(self) -> None:
        """atexit hook for WOP_MODE=capture without a parent: finalize in the process that opened."""
        if os.getpid() == self._owner_pid and self.manifest is None:
            from openwop_cli.runtime.session import finish_open_streams

            finish_open_streams()
            self.close(self._uncaught, self._exit_code)

    def note_exit_code(self) -> None:
        """Wrap sys.exit so close_at_exit knows the code (atexit handlers are not told it)."""
        real_exit = sys.exit

        def exit(code: Any = None) -> None:
            self._exit_code = code if isinstance(code, int) else (0 if code is None else 1)
            real_exit(code)

        sys.exit = exit

    def note_uncaught(self, exc: BaseException) -> None:
        """Remember the exception the program is dying of, for close_at_exit."""
        self._uncaught = exc

    def __enter__(self) -> "capture":
        self.open()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.close(exc)

    def __call__(self, fn: F) -> F:
        settings = {"name": self.name, "out": self.out, "redact": self.redact, "ambient": self.ambient}
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def captured_async(*args: Any, **kwargs: Any) -> Any:
                with capture(**settings):
                    return await fn(*args, **kwargs)

            return captured_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def captured(*args: Any, **kwargs: Any) -> Any:
            with capture(**settings):
                return fn(*args, **kwargs)

        return captured  # type: ignore[return-value]


def standalone_capture(capture_dir: str) -> Session | None:
    """WOP_MODE=capture without a parent: this process writes the capture itself and finalizes at exit."""
    recording = capture(out=capture_dir)
    try:
        session = recording.open(make_active=False)
    except Exception as exc:  # never break the program because recording could not start
        _warn(f"cannot record into {capture_dir}: {getattr(exc, 'message', exc)}")
        return None
    on_uncaught_exception(recording.note_uncaught)
    recording.note_exit_code()
    atexit.register(recording.close_at_exit)
    return session


register_standalone(standalone_capture)


def _warn(message: str) -> None:
    print(message if message.startswith("wop:") else f"wop: {message}", file=sys.stderr)
