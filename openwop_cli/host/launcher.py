"""`wop capture -- CMD` (and the runs of `wop replay`/`wop fork`): run a command as a child and record it.

The parent owns the capture: it writes run_start, collects events from every Python process of
the command over the channel, and writes run_end and the final manifest whatever way the child
ends (exit code, exception, signal). Only a kill of this process itself leaves `incomplete`.
Replay and fork plug in through RunHooks: extra environment, answers to their processes'
questions, a look at each event, and last events before the manifest is written.
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

import openwop_cli
from openwop_cli.errors import UsageError
from openwop_cli.format.events import LLM_REQUEST, new_id
from openwop_cli.heldsignals import imported_held
from openwop_cli.host.collector import Collector, Listener
from openwop_cli.wire.channel import ENV_ADDRESS, ENV_GATE
from openwop_cli.wire.environ import (
    ENV_AMBIENT,
    ENV_CAPTURE_DIR,
    ENV_MODE,
    ENV_PARENT_PID,
    runs_bootstrap,
    script_interpreter,
)

if TYPE_CHECKING:
    from openwop_cli.format.redact import Redactor
    from openwop_cli.format.sink import CaptureSink
    from openwop_cli.runtime.session import Session

BOOTSTRAP_DIR = Path(openwop_cli.__file__).resolve().parent / "runtime" / "_bootstrap"
PACKAGE_ROOT = Path(openwop_cli.__file__).resolve().parent.parent
LATE_PROCESS_GRACE_SECONDS = 2.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h
FORWARDED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
TERMINAL_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGHUP") if hasattr(signal, name))


class RunHooks:
    """What a replay or fork adds to a recorded run; the defaults are a plain capture."""

    mode = "capture"
    keep_stderr_tail = False  # pass the child's stderr through and keep its last lines (a replay names the cause)

    def environment(self) -> dict[str, str]:
        """Extra environment for the child."""
        return {}

    def settled_environment(self) -> dict[str, str]:
        """Extra environment for the child that the run's settings decide: a child started before they were read gets
        it with its go (ChildLaunch.settle)."""
        return {}

    def started(self, sink: "CaptureSink") -> None:
        """The new capture exists (its ids are in sink.manifest)."""

    def manifest_seed(self) -> dict[str, Any]:
        """Extra manifest fields written at start."""
        return {}

    def wrap_append(self, append: Callable[..., int]) -> Callable[..., int]:
        """The append the collector uses (a replay watches events go by)."""
        return append

    def wrap_append_raw(self, append_raw: Callable[..., int], append: Callable[..., int]) -> Callable[..., int]:
        """The collector's append for events still in channel bytes (append: wrap_append's, for any it must parse)."""
        return append_raw

    def answer(self, pid: int | None, message: dict[str, Any]) -> dict[str, Any] | None:
        """The reply to a question a process asks (None: not a question)."""
        return None

    def program_started(self, child: "subprocess.Popen[Any]") -> None:
        """The program's process runs (a strict replay ends one that stays on after it stopped it)."""

    def before_finish(self, sink: "CaptureSink", exit_code: int, output: dict[str, Any] | None) -> dict[str, Any]:
        """Last events before run_end (output: the manifest's record of what the program wrote, format.output, or
        None when it was not kept); returns extra final manifest fields."""
        return {}

    def prepare_proxy(self, session: "Session") -> None:
        """Set up the --proxy session (a replay attaches its replayer here)."""


def _adding_request_keys(append: Callable[..., int]) -> Callable[..., int]:
    """append, with an llm_request's cacheKey and toolSchemaHash computed here when the recorded program left
    them to wop (runtime.providers.with_request_keys): the hash is not paid on the program's calling thread.
    runtime.providers loads with the first llm_request, not before the program's go."""

    def append_keyed(event_type: str, data: dict[str, Any], **envelope: Any) -> int:
        if event_type == LLM_REQUEST:
            from openwop_cli.runtime.providers import with_request_keys

            data = with_request_keys(data)
        return append(event_type, data, **envelope)

    return append_keyed


def _parsing_llm_requests(append_raw: Callable[..., int], append: Callable[..., int]) -> Callable[..., int]:
    """append_raw, with an llm_request's keys (when the recorded process left them to wop) added to its data bytes;
    an llm_request whose bytes cannot take them so goes through append."""

    def append_raw_keyed(event_type: str, data_json: bytes, *, ts: int, origin_json: bytes | None = None,
                         source_seq: int | None = None) -> int:
        if event_type == LLM_REQUEST:
            import orjson

            from openwop_cli.runtime.providers import missing_request_keys

            data = orjson.loads(data_json)
            keys = missing_request_keys(data, parsed=True) if type(data) is dict else {}
            if keys and data and data_json.endswith(b"}"):  # orjson's bytes for {**data, **keys}, without writing data
                data_json = data_json[:-1] + b"," + orjson.dumps(keys)[1:]
            elif keys:
                origin = orjson.loads(origin_json) if origin_json else None
                return append(event_type, data, ts=ts, origin=origin, source_seq=source_seq)
        return append_raw(event_type, data_json, ts=ts, origin_json=origin_json, source_seq=source_seq)

    return append_raw_keyed


class CaptureOutcome(NamedTuple):
    """What `wop capture` reports: where the capture is, what it holds, and the child's exit code."""

    capture_id: str
    path: Path
    manifest: dict[str, Any]
    exit_code: int
    stderr_tail: list[str] = []
    unrecorded: list[dict[str, Any]] = []  # connections ({host, port, …}) and child processes ({executable, …})


def run_captured(
    argv: list[str],
    *,
    out: Path | None,
    name: str | None,
    redact: str,
    workflow: Path | None,
    warn: Callable[[str], None],
    store_root: Path,
    hooks: RunHooks | None = None,
    output_to_stderr: bool = False,
    proxy: bool = False,
    ambient: bool = True,
    quiet: bool = False,
    launch: "ChildLaunch | None" = None,
    record_output: bool = True,
) -> CaptureOutcome:
    """Run argv under capture and return the finalized outcome (see the module docstring).

    A program run by wop's own Python starts before the capture is set up, its interpreter's start-up overlapping
    the parent's, and waits for the parent's go before anything of its own runs (ENV_GATE); any other command starts
    once the capture is ready, as its first instruction could do anything (another Python too: the runtime may not
    load in it, and it could not hold the program back).
    ambient: record the clock, uuid and random reads of the program's code (runtime.ambient);
    quiet: the child's stdin and stdout are /dev/null and its stderr is only kept (its last lines),
    for runs made side by side; launch: the command already started gated by the caller (launched_early, or a
    replay's before it reads its source capture); one made for other options than these is cancelled and the command
    started anew; record_output: keep the program's stdout and stderr for the manifest (host.output)."""
    hooks = hooks or RunHooks()
    options = _launch_options(hooks, out, output_to_stderr, quiet, record_output)
    early = workflow is None and not proxy and starts_own_python(argv)
    if launch is not None and not (early and launch.made_for(argv, options)):
        launch.cancel()  # started for another run than this one turned out to be (a capture recorded via --proxy)
        launch = None
    if launch is None:
        launch = ChildLaunch(argv, **options)
    path = launch.settle(store_root, ambient, hooks.settled_environment())
    if early and launch.child is None:
        launch.start(gated=True)
    imported_held("orjson")  # before the capture loads it, with Ctrl-C held: one in its initialization crashes wop
    try:
        capture = _OpenCapture(argv, launch.capture_id, path, name, redact, workflow, warn, hooks, ambient, proxy,
                               launch.listener, launch.settled)
    except BaseException:
        launch.cancel()
        raise
    if launch.output is not None:
        launch.output.keep_into(capture.sink.blobs, capture.sink.redactor)
    started = time.monotonic()
    if launch.child is None and launch.failed_start is None:
        launch.start(gated=False, more_env=capture.environment())
    if launch.failed_start is not None:
        capture.stop_collecting(0)
        failure = launch.failed_start
        return capture.finish(started, 127, f"cannot run {argv[0]}: {failure.strerror or failure}")
    hooks.program_started(launch.child)
    returncode = launch.wait()
    capture.stop_collecting(LATE_PROCESS_GRACE_SECONDS)
    exit_code, reason = _exit_status(returncode)
    outcome = capture.finish(started, exit_code, reason, launch.output)
    if launch.output is not None and launch.keep_stderr_tail:
        outcome = outcome._replace(stderr_tail=[capture.sink.redactor.scrub_text(line)
                                                for line in launch.output.tail_lines()])
    return outcome


def launched_early(argv: list[str], *, out: Path | None, workflow: Path | None, proxy: bool,
                   record_output: bool) -> "ChildLaunch | None":
    """`wop capture`'s command started gated as soon as its command line is read, before the capture's settings are
    ([tool.wop], the store's place: ChildLaunch.settle); None for a command that starts once the capture is ready
    (see run_captured)."""
    if workflow is not None or proxy or not starts_own_python(argv):
        return None
    launch = ChildLaunch(argv, **_launch_options(RunHooks(), out, False, False, record_output))
    launch.start(gated=True)
    return launch


def _launch_options(hooks: RunHooks, out: Path | None, output_to_stderr: bool, quiet: bool,
                    record_output: bool) -> dict[str, Any]:
    """What ChildLaunch is made with for a run with these hooks and options."""
    return {"out": out, "mode": hooks.mode, "extra_env": hooks.environment(), "keep_stderr_tail": hooks.keep_stderr_tail,
            "output_to_stderr": output_to_stderr, "quiet": quiet, "record_output": record_output}


class ChildLaunch:
    """The command's process and what it is given: the channel's listener, the capture directory, its environment.

    Started gated (a command wop's own Python runs: its bootstrap waits for the parent's go before anything of the
    program's runs), it can start before the capture is set up, and a launch whose capture cannot be made is
    cancelled before the program ran. What the capture settles meanwhile (settle: where it goes, whether ambient
    values are recorded) reaches a gated process with its go. From its start to its end, the signals meant for it
    are passed on (_SignalsPassedOn)."""

    def __init__(self, argv: list[str], *, out: Path | None, mode: str, extra_env: dict[str, str],
                 keep_stderr_tail: bool, output_to_stderr: bool, quiet: bool, record_output: bool = True) -> None:
        from openwop_cli.host.output import ProgramOutput, default_targets

        _check_runnable(argv)
        self.argv = argv
        self._options = {"out": out, "mode": mode, "extra_env": extra_env, "keep_stderr_tail": keep_stderr_tail,
                         "output_to_stderr": output_to_stderr, "quiet": quiet, "record_output": record_output}
        self.capture_id = new_id()
        self._out = out
        self.settled: dict[str, str] = {}
        self.listener = Listener()
        self.env = {**child_environment(self.listener.address, mode), **extra_env}
        self.keep_stderr_tail = keep_stderr_tail
        passed_through = not (record_output or keep_stderr_tail or quiet or output_to_stderr)
        self.output = None if passed_through else ProgramOutput(*default_targets(quiet, output_to_stderr),
                                                                 keep=record_output)
        self._stdin = subprocess.DEVNULL if quiet else None
        self.child: Any = None
        self.failed_start: OSError | None = None
        self._passed_on: _SignalsPassedOn | None = None

    def made_for(self, argv: list[str], options: dict[str, Any]) -> bool:
        """True when this launch is the one ChildLaunch(argv, **options) would make."""
        return self.argv == argv and self._options == options

    def settle(self, store_root: Path, ambient: bool, environment: dict[str, str] | None = None) -> Path:
        """Where the capture goes (out, else a new directory of store_root: returned), whether the program's ambient
        values are recorded, and what else the settings decide (RunHooks.settled_environment): in the environment of
        a command not yet started, else in its go (_Processes.on_message)."""
        path = self._out if self._out is not None else store_root / self.capture_id
        self.settled = {ENV_CAPTURE_DIR: str(path), ENV_AMBIENT: "1" if ambient else "0", **(environment or {})}
        return path

    def start(self, *, gated: bool, more_env: dict[str, str] | None = None) -> None:
        """Start the command (an OSError is kept in failed_start: the capture then says it could not run). Interrupted
        while starting it (a Ctrl-C before the signals are passed on), the listener's directory goes: a child already
        forked ends with this process (_ends_with_this_process)."""
        env = {**self.env, **self.settled, **(more_env or {}), **({ENV_GATE: "1"} if gated else {})}
        try:
            self.child = _start_child(self.argv, env, self.output, self._stdin)
        except OSError as exc:
            self.failed_start = exc
            return
        except BaseException:
            self.listener.remove()
            raise
        try:
            self._passed_on = _SignalsPassedOn(self.child)
        except BaseException:  # a Ctrl-C just before the child's signals are passed on: it ends (still gated or
            self.child.kill()  # just started), and so does the listener's directory
            self.child.wait()
            self.listener.remove()
            raise

    def wait(self) -> int:
        """Wait until the command ends; its return code (negative: signal)."""
        try:
            return self.child.wait()
        finally:
            if self.output is not None:
                self.output.join(LATE_PROCESS_GRACE_SECONDS)
            self._passed_on.restore()

    def cancel(self) -> None:
        """End a command that must not run (it is still waiting for its go) and remove the listener."""
        if self.child is not None:
            self.child.kill()
            self.child.wait()
            self._passed_on.restore()
        self.listener.remove()


class _OpenCapture:
    """A capture being written: its sink, the processes' collector and, with --proxy, the LLM proxy."""

    def __init__(self, argv: list[str], capture_id: str, path: Path, name: str | None, redact: str,
                 workflow: Path | None, warn: Callable[[str], None], hooks: RunHooks, ambient: bool, proxy: bool,
                 listener: Listener, settled: dict[str, str]) -> None:
        from openwop_cli.config import read_json_file
        from openwop_cli.format.redact import Redactor
        from openwop_cli.format.sink import CaptureSink
        from openwop_cli.runtime.program import pin_files, run_start_data, script_of

        workflow_file = read_json_file(workflow, "--workflow") if workflow is not None else None
        redactor = Redactor.from_environment(redact)
        self.warn, self.hooks, self.capture_id, self.path = warn, hooks, capture_id, path
        self.sink = sink = CaptureSink(path, redactor=redactor, on_warning=warn)
        self.cwd = cwd = os.getcwd()
        script = script_of(argv)
        self.program: dict[str, Any] = {"argv": argv, "cwd": cwd}
        sink.start({"captureId": capture_id, "name": name or _default_name(argv, script), "program": self.program,
                    "mode": hooks.mode, "ambient": ambient, **hooks.manifest_seed()})
        hooks.started(sink)
        self.program["script"] = pin_files([script], cwd, sink.blobs, redactor.scrub_text) if script else []
        if workflow_file is not None:
            try:
                self.program["workflow"] = _pin_workflow(workflow, *workflow_file, sink, redactor)
            except OSError as exc:
                warn(f"wop: could not store --workflow {workflow} in the capture: {exc.strerror or exc}")
        self.processes = processes = _Processes(sink, run_start_data(argv, cwd, None), hooks, settled)
        if workflow_file is not None:
            processes.workflow_text = workflow_file[0].decode("utf-8")
        append = _adding_request_keys(hooks.wrap_append(sink.append))
        self.collector = Collector(append, processes.on_message, on_idle=sink.flush, listener=listener,
                                   append_raw=_parsing_llm_requests(hooks.wrap_append_raw(sink.append_raw, append),
                                                                    append), yield_cores=hooks.mode == "capture")
        self.collector.start()
        self.llm_proxy = _start_proxy(processes.after_run_start(append), sink, hooks) if proxy else None

    def environment(self) -> dict[str, str]:
        """What the child's environment needs from the open capture: the pinned workflow, the proxy's address."""
        from openwop_cli.runtime.program import ENV_WORKFLOW

        env = {}
        if "workflow" in self.program:
            env[ENV_WORKFLOW] = self.program["workflow"]["sha256"]
        if self.llm_proxy is not None:
            env.update(self.llm_proxy.child_environment())
        return env

    def stop_collecting(self, grace_seconds: float) -> None:
        """Stop taking events (waiting grace_seconds for processes still connected) and stop the proxy."""
        self.collector.stop(grace_seconds)
        if self.llm_proxy is not None:
            self.llm_proxy.stop()
        _warn_about_collector(self.collector, self.warn)

    def finish(self, started: float, exit_code: int, reason: str | None, output: Any = None) -> CaptureOutcome:
        """run_end and the final manifest (with the program's output, when it was kept: host.output)."""
        from openwop_cli.runtime.program import pin_files, run_end_data

        sink, processes, program = self.sink, self.processes, self.program
        processes.write_run_start(None)
        recorded = _output_records(output, sink, self.warn)
        extra_fields = self.hooks.before_finish(sink, exit_code, recorded)
        if recorded is not None:
            extra_fields = {"output": recorded, **extra_fields}
        end = run_end_data(exit_code, None, time.monotonic() - started)
        if reason and processes.uncaught and exit_code == 1:
            reason = f"{processes.uncaught.get('type')}: {processes.uncaught.get('message')} (exit code 1)"
        if reason:
            end["error"] = reason
            end["status"] = "error"
        sink.append("run_end", end)
        program.update(processes.summary())
        program["modules"] = pin_files(processes.module_paths(), self.cwd, sink.blobs, sink.redactor.scrub_text)
        manifest = sink.finalize(end["status"], end.get("error"), program=program, **extra_fields)
        return CaptureOutcome(self.capture_id, self.path, manifest, exit_code,
                              unrecorded=processes.unrecorded_connections() + processes.unrecorded_processes())


def _output_records(output: Any, sink: "CaptureSink", warn: Callable[[str], None]) -> dict[str, Any] | None:
    """The manifest's output (format.output) of what the program wrote, or None when it was not kept."""
    if output is None:
        return None
    records = output.records(sink.blobs, sink.redactor)
    if output.keep_failure is not None:
        warn(f"wop: the program's output is not in the capture (storing it failed: {output.keep_failure})")
    return records


def _start_proxy(append: Callable[..., int], sink: "CaptureSink", hooks: RunHooks) -> Any:
    from openwop_cli.host.proxy import LLMProxy, ProxySession
    from openwop_cli.runtime.session import AppendRecorder

    session = ProxySession(AppendRecorder(append, sink.flush))
    hooks.prepare_proxy(session)
    llm_proxy = LLMProxy(session)
    llm_proxy.start()
    return llm_proxy


def _start_child(argv: list[str], env: dict[str, str], output: Any, stdin: Any) -> Any:
    """Start the child (it ends when this process dies), its stdout and stderr passed through `output`
    (host.output.ProgramOutput) or, without one, left as ours.

    Without a controlling terminal, a child started from the main thread (which passes signals on:
    _SignalsPassedOn) gets a process group of its own, so a signal sent to ours reaches it once, passed on by us,
    and not a second time directly; with one, it stays in ours for the terminal's job control (Ctrl-Z, fg)."""
    own_group = (hasattr(os, "killpg") and threading.current_thread() is threading.main_thread()
                 and _terminal_foreground() is None)
    stdout, stderr = output.child_streams() if output is not None else (None, None)
    if output is not None:
        env = {**env, **output.marks_environment()}
    try:
        child = subprocess.Popen(argv, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                                 preexec_fn=_ends_with_this_process(), process_group=0 if own_group else None)
    except BaseException:
        if output is not None:
            output.abandon()
        raise
    if output is not None:
        output.start()
    return child


class _SignalsPassedOn:
    """While a child runs, the signals meant for it (FORWARDED_SIGNALS) passed on from the main thread, the only one
    that may set handlers. A child with a process group of its own (see _start_child) gets them as the group it
    leads, as if they had been sent to ours; one in ours gets them from us, but for the terminal's (Ctrl-C, a
    hang-up), which it got with us when we are in the terminal's foreground."""

    def __init__(self, child: Any) -> None:
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        leads_a_group = _leads_a_group(child.pid)

        def forward(signum: int, _frame: Any) -> None:
            try:
                if leads_a_group:
                    os.killpg(child.pid, signum)
                elif signum in TERMINAL_SIGNALS and _terminal_foreground():
                    return
                else:
                    child.send_signal(signum)
            except OSError:  # it has ended
                pass

        self._previous = {signum: signal.signal(signum, forward) for signum in FORWARDED_SIGNALS}

    def restore(self) -> None:
        """Put the handlers back (once the child has ended)."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}


def _ends_with_this_process() -> Callable[[], None] | None:
    """On Linux, what the child runs before exec so the kernel sends it SIGTERM when `wop capture` dies, even of
    SIGKILL: a recorded program never runs on as an orphan whose events nobody receives."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def terminate_with_parent() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # wop was gone before the request was made
            os.kill(os.getpid(), signal.SIGTERM)

    return terminate_with_parent


def _leads_a_group(pid: int) -> bool:
    """True when process pid leads a process group (see _start_child)."""
    try:
        return os.getpgid(pid) == pid
    except (OSError, AttributeError):  # it has ended; no process groups here
        return False


def _terminal_foreground() -> bool | None:
    """Whether this process is in its controlling terminal's foreground process group (the one the terminal sends
    Ctrl-C and a hang-up to); None when it has no controlling terminal."""
    try:
        terminal = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return None
    try:
        return os.tcgetpgrp(terminal) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(terminal)


def _exit_status(returncode: int) -> tuple[int, str | None]:
    """The exit code wop passes on (128+N for signal N, as shells do) and the reason for an error status."""
    if returncode >= 0:
        return returncode, (f"exited with code {returncode}" if returncode else None)
    signum = -returncode
    try:
        signame = signal.Signals(signum).name
    except ValueError:
        signame = f"signal {signum}"
    reason = f"interrupted ({signame})" if signame == "SIGINT" else f"killed by {signame}"
    return 128 + signum, reason


def child_environment(address: str, mode: str = "capture") -> dict[str, str]:
    """The environment a recorded child starts with: mode, channel address and the bootstrap on PYTHONPATH (the
    capture directory and ambient values on or off: ChildLaunch.settle)."""
    env = dict(os.environ)
    env.update({
        ENV_MODE: mode,
        ENV_ADDRESS: address,
        ENV_PARENT_PID: str(os.getpid()),
        "WOP_PACKAGE_ROOT": str(PACKAGE_ROOT),
    })
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOTSTRAP_DIR) + (os.pathsep + existing if existing else "")
    return env


def _check_runnable(argv: list[str]) -> None:
    if not argv:
        raise UsageError("give the command to capture after --, e.g. `wop capture -- python agent.py`")
    command = argv[0]
    if os.sep in command or (os.altsep and os.altsep in command):
        if not os.path.isfile(command):
            raise UsageError(f"cannot run {command}: no such file")
    elif shutil.which(command) is None:
        raise UsageError(f"cannot run {command}: command not found on PATH")


def starts_own_python(argv: list[str]) -> bool:
    """True when argv's first process is the Python wop itself runs in — the same interpreter in the same environment,
    where the runtime is known to load — and runs the child bootstrap before anything else: named directly, or by a
    script's `#!` line (`#!/usr/bin/env python3` as found on PATH), without an option that skips the bootstrap.
    Another Python (another version or virtual environment, one without wop's dependencies) is like any command."""
    command = _command_path(argv)
    if command is None:
        return False
    if _is_own_python(command):
        return runs_bootstrap(argv[1:])
    words, through_env = script_interpreter(command)
    interpreter = (shutil.which(words[0]) if through_env else words[0]) if words else None
    return interpreter is not None and _is_own_python(interpreter) and runs_bootstrap(words[1:])


def starts_plainly(argv: list[str]) -> bool:
    """True when argv names the Python wop runs in, itself, with no option before its program (`-c CODE`, `-m MODULE`
    or a script): an interpreter started gated from argv runs only wop's bootstrap until its go."""
    command = _command_path(argv)
    return (command is not None and _is_own_python(command) and len(argv) > 1
            and (argv[1] in ("-c", "-m") or not argv[1].startswith("-")))


def _command_path(argv: list[str]) -> str | None:
    """The file argv's first word runs: a path as given, else found on PATH (None: no command, or none found)."""
    if not argv:
        return None
    return argv[0] if os.sep in argv[0] else shutil.which(argv[0])


def _is_own_python(path: str) -> bool:
    """True when path runs this process's interpreter in this process's environment: the same binary, found in the
    same directory (where Python looks for the pyvenv.cfg that makes a virtual environment)."""
    own = sys.executable
    realpath, dirname = os.path.realpath, os.path.dirname
    return bool(own) and realpath(path) == realpath(own) and realpath(dirname(path)) == realpath(dirname(own))


def _pin_workflow(workflow: Path, raw: bytes, content: Any, sink: "CaptureSink",
                  redactor: "Redactor") -> dict[str, Any]:
    """The manifest's pin of the --workflow file: its bytes as read (a replay serves them as they were), or, when
    they hold something the profile redacts, the redacted document marked `redacted` (a replay cannot serve it),
    whose sha256 is then of the text kept (program.pinned_text): never a hash of what was redacted."""
    import hashlib

    import orjson

    from openwop_cli.runtime.program import pinned_sha256, pinned_text

    redacted = redactor.redact(content)
    exact = redacted == content
    pin = {"path": str(workflow),
           "sha256": hashlib.sha256(raw).hexdigest() if exact else pinned_sha256(pinned_text(raw, redactor.scrub_text)),
           "blob": sink.blobs.put_ref(raw if exact else orjson.dumps(redacted), "json")}
    if not exact:
        pin["redacted"] = True
    return pin


def _default_name(argv: list[str], script: Path | None) -> str:
    if script is not None:
        return script.stem
    if len(argv) > 2 and argv[1] == "-m":
        return argv[2]
    return Path(argv[0]).name


def _warn_about_collector(collector: Collector, warn: Callable[[str], None]) -> None:
    if collector.left_running:
        pids = ", ".join(str(pid) for pid in collector.left_running)
        warn(f"wop: processes still running after the command ended ({pids}); their later events are not recorded")
    if collector.torn_messages or collector.bad_messages:
        warn(f"wop: {collector.torn_messages + collector.bad_messages} messages from recorded processes were "
             "cut off or malformed (a process killed mid-send) and were left out")


class _Processes:
    """What the recorded processes told the parent: who they are and which local modules they imported."""

    def __init__(self, sink: "CaptureSink", run_start: dict[str, Any], hooks: RunHooks,
                 settled: dict[str, str]) -> None:
        self.sink = sink
        self.hooks = hooks
        self.settled = settled  # what a process started before the capture was ready is told with its go
        self.run_start: dict[str, Any] | None = run_start
        self._run_start_lock = threading.Lock()
        self.started_ms = int(time.time() * 1000)
        self.hellos: list[dict[str, Any]] = []
        self.identities: dict[Any, list[int]] = {}  # pid → the multiprocessing.Process it ran (runtime.processname)
        self.ended: set[Any] = set()  # the pids that said they ended on their own (exit, os._exit: not killed)
        self.started: dict[int, tuple[Any, list[int]]] = {}  # a Process's pid → (its parent's pid, its identity)
        self.modules: dict[str, None] = {}
        self.uncaught: dict[str, Any] | None = None
        self.workflow_text: str | None = None  # the pinned workflow's bytes, served to `wop.workflow()`
        self.unrecorded: dict[tuple, dict[str, Any]] = {}
        self.unrecorded_children: dict[tuple, dict[str, Any]] = {}  # runtime.children's latest reports, by _child_key

    def write_run_start(self, python: Any) -> None:
        """run_start goes in at seq 0 once the first process says which Python it is (or at the end)."""
        with self._run_start_lock:
            if self.run_start is not None:
                self.sink.append("run_start", {**self.run_start, "python": python}, ts=self.started_ms)
                self.run_start = None

    def after_run_start(self, append: Callable[..., int]) -> Callable[..., int]:
        """append, making sure run_start is written first (for events that do not come from a process)."""

        def append_after_run_start(*args: Any, **kwargs: Any) -> int:
            self.write_run_start(None)
            return append(*args, **kwargs)

        return append_after_run_start

    def on_message(self, _pid: int | None, message: dict[str, Any]) -> dict[str, Any] | None:
        reply = self.hooks.answer(_pid, message)
        if reply is not None:
            return reply
        if message.get("workflow") is True:
            return {"workflow": self.workflow_text}
        if message.get("ready") is True:  # a child started early asks for its go: the capture is ready by now
            return {"environ": self.settled}
        hello = message.get("hello")
        if isinstance(hello, dict):
            self.write_run_start(hello.get("python"))
            self.hellos.append(hello)
        identity = message.get("mpIdentity")
        if _is_identity(identity):
            self.identities[_pid] = identity
        if message.get("ended") is True:
            self.ended.add(_pid)
        started = message.get("startedProcess")
        if isinstance(started, dict) and type(started.get("pid")) is int and _is_identity(started.get("mpIdentity")):
            self.started[started["pid"]] = (_pid, started["mpIdentity"])
        uncaught = message.get("uncaught")
        if isinstance(uncaught, dict) and (self.uncaught is None or _pid == self.root_pid()):
            self.uncaught = uncaught
        connection = message.get("unrecordedConnection")
        if isinstance(connection, dict):
            self.unrecorded[(_pid, connection.get("host"), connection.get("port"))] = connection
        child = message.get("unrecordedProcess")  # runtime.children.UNRECORDED_PROCESS
        if isinstance(child, dict):
            self.unrecorded_children[_child_key(_pid, child)] = child
        modules = message.get("modules")
        if isinstance(modules, list):
            for entry in modules:
                if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], str):
                    self.modules.setdefault(entry[1])
        return None

    def _process(self, hello: dict[str, Any]) -> dict[str, Any]:
        """A process's manifest entry. `stopped`: it never said it ended (killed by a signal, as a pool's workers
        are when the pool is terminated, or still running when wop stopped): what it would have done after its
        last event is not in the capture."""
        pid = hello.get("pid")
        process = {key: hello.get(key) for key in ("pid", "ppid", "python", "executable", "argv")}
        if pid in self.identities:
            process["mpIdentity"] = self.identities[pid]
        if pid not in self.ended:
            process["stopped"] = True
        return process

    def _silent_processes(self) -> list[dict[str, Any]]:
        """The Processes a parent said it started that never spoke to wop: killed as they started (a pool terminated
        at once), each `stopped`, so a replay pairs today's with them."""
        spoke = {hello.get("pid") for hello in self.hellos}
        return [{"pid": pid, "ppid": parent, "mpIdentity": told, "stopped": True}
                for pid, (parent, told) in self.started.items() if pid not in spoke]

    def root_pid(self) -> Any:
        return next((hello.get("pid") for hello in self.hellos if hello.get("ppid") == os.getpid()), None)

    def unrecorded_connections(self) -> list[dict[str, Any]]:
        """Connections no adapter recorded, by destination over all processes: host, port, count, first site."""
        return _summed(((host, port), {"host": host, "port": port, "count": 0, "site": reported.get("site")},
                        reported.get("count")) for (_pid, host, port), reported in self.unrecorded.items())

    def unrecorded_processes(self) -> list[dict[str, Any]]:
        """The children no process could see, by executable and call site over all processes: executable, argv,
        reason, site and count, the most frequent first."""
        return _summed((key[1:], {**{name: entry.get(name) for name in ("executable", "argv", "reason", "site")},
                                  "count": 0}, entry.get("count")) for key, entry in self.unrecorded_children.items())

    def module_paths(self) -> list[str]:
        return list(self.modules)

    def summary(self) -> dict[str, Any]:
        root_pid = self.root_pid()
        root = next((hello for hello in self.hellos if hello.get("pid") == root_pid), None)
        root = root or (self.hellos[0] if self.hellos else None)
        summary: dict[str, Any] = {"processes": [self._process(hello) for hello in self.hellos]
                                   + self._silent_processes()}
        if root is not None:
            summary["python"] = root.get("python")
        return summary


def _is_identity(value: Any) -> TypeGuard[list[int]]:
    """A multiprocessing identity as runtime.processname sends it."""
    return isinstance(value, list) and all(type(number) is int for number in value)


def _summed(reports: Iterable[tuple[tuple, dict[str, Any], Any]]) -> list[dict[str, Any]]:
    """Reports of what no adapter recorded, summed over all processes: each (what it is about, the entry a first
    report of that starts with count 0, its count: a positive integer, else one), the most frequent first."""
    found: dict[tuple, dict[str, Any]] = {}
    for key, first, count in reports:
        entry = found.setdefault(key, first)
        entry["count"] += count if isinstance(count, int) and count > 0 else 1
    return sorted(found.values(), key=lambda entry: -entry["count"])


def _child_key(pid: Any, reported: dict[str, Any]) -> tuple:
    """Which reports of a process are about the same children (the latest of them has their count)."""
    site = reported.get("site")
    file, line = (site.get("file"), site.get("line")) if isinstance(site, dict) else (None, None)
    return pid, reported.get("executable"), file, line
