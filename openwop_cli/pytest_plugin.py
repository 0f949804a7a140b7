"""pytest plugin: a captured run as a regression test (`@pytest.mark.wop` or the `wop` fixture), and
whole-program captures collected as tests.

The test body runs under wop in the test process. With a capture on disk it is replayed — every
LLM, HTTP and tool call served from the capture, network blocked, strict unless the marker says
`policy="lenient"` — and a divergence fails the test with the `wop replay` report. Without one
it is recorded. Captures live in `tests/captures/<test module>/<test name>/` ([tool.wop]
capture_dir, or --wop-capture-dir).

Record modes (--wop-record, [tool.wop] record; `none` when the CI variable is set unless the flag
is given): none — replay only, a missing capture fails; once — record when missing, else replay;
new — replay, and record the calls the capture does not have yet; all — record again. A recording
is kept only when the test passes, and replaces the old capture in one rename.

Captures made by `wop capture` under the directories of `--wop-replay PATH` or `[tool.wop] replay`
are collected as one test each (named after the capture, so `-k` selects them): the test replays the
recorded command strictly, as `wop replay` does, and fails with the divergence report. Each replay
writes its capture into pytest's temporary directory, so pytest-xdist workers share nothing.
"""

import os
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

RECORD_MODES = ("none", "once", "new", "all")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("wop", "wop capture/replay")
    group.addoption("--wop-record", choices=RECORD_MODES, default=None,
                    help="none: replay only; once: record missing captures; new: record calls not yet captured; "
                         "all: record again (default: [tool.wop] record, or none when CI is set)")
    group.addoption("--wop-capture-dir", default=None, help="where test captures live (default: tests/captures)")
    group.addoption("--wop-replay", action="append", default=[], metavar="PATH",
                    help="collect the captures under PATH as tests, one per capture (repeatable; also [tool.wop] replay)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "wop(policy='strict', name=None): run the test body under wop — replay its capture, or record it")
    config.stash[_REPLAY_ROOTS] = _replay_roots(config)


_REPLAY_ROOTS = pytest.StashKey[list[Path]]()


def _replay_roots(config: Any) -> list[Path]:
    """The directories whose captures become tests; they join the run when pytest would not walk them itself
    (--wop-replay always, [tool.wop] replay when no test paths were given on the command line)."""
    from openwop_cli.config import load_settings
    from openwop_cli.errors import UsageError

    try:
        settings = load_settings(Path(str(config.rootpath)))
    except UsageError as exc:
        raise pytest.UsageError(exc.message) from None
    invoked = Path(str(config.invocation_params.dir))
    given = [(invoked / path).resolve() for path in config.getoption("--wop-replay")]
    for path in given:
        if not path.is_dir():
            raise pytest.UsageError(f"--wop-replay {path}: no such directory")
    configured = [path.resolve() for path in settings.replay if path.is_dir()]
    walked = [(invoked / arg.split("::", 1)[0]).resolve() for arg in config.args]
    joining = given + (configured if config.args_source != pytest.Config.ArgsSource.ARGS else [])
    for path in joining:
        if not any(path == arg or arg in path.parents for arg in walked):
            config.args.append(str(path))
            walked.append(path)
    return given + configured


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: Any) -> Any:
    """A capture directory under a replay root is one test (plugin-made captures have their own test)."""
    roots = parent.config.stash.get(_REPLAY_ROOTS, [])
    if not roots or not (path / "manifest.json").is_file():
        return None
    resolved = path.resolve()
    if not any(resolved == root or root in resolved.parents for root in roots):
        return None
    from openwop_cli.store import recorded_by_pytest

    return None if recorded_by_pytest(path) else CaptureDirectory.from_parent(parent, path=path)


class CaptureDirectory(pytest.Directory):
    """A capture directory: it holds one test, the capture's replay."""

    def collect(self) -> Any:
        from openwop_cli.errors import WopError
        from openwop_cli.format.manifest import read_manifest

        try:
            name = read_manifest(self.path).get("name") or self.path.name
        except WopError:
            name = self.path.name
        yield CaptureReplay.from_parent(self, name=_safe(str(name)))


class CaptureDiverged(Exception):
    """A collected capture's replay found divergences (the test's failure)."""

    def __init__(self, outcome: Any) -> None:
        super().__init__(f"{len(outcome.divergences)} divergences")
        self.outcome = outcome


class CaptureReplay(pytest.Item):
    """Replay a `wop capture` capture strictly ([tool.wop] policy): its recorded command, calls served from it."""

    def runtest(self) -> None:
        from openwop_cli.config import load_settings
        from openwop_cli.host.run_replay import run_replay

        # pytest's tmp_path_factory (an item that is not a test function gets no fixtures): one directory per replay
        work = self.config._tmp_path_factory.mktemp("wop-replay")
        outcome = run_replay(self.path, [], policy=load_settings(Path(str(self.config.rootpath))).policy,
                             from_seq=None, branch=False, overrides={}, allow_tools=[], out=work / "replay",
                             name=None, warn=lambda message: print(message, file=sys.stderr), store_root=work)
        if outcome.diverged:
            raise CaptureDiverged(outcome)
        shutil.rmtree(work, ignore_errors=True)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        from openwop_cli.errors import WopError

        if isinstance(excinfo.value, CaptureDiverged):
            from openwop_cli.report.verdict import replay_text

            return f"wop replay of {self.path} diverged:\n{replay_text(excinfo.value.outcome)}"
        if isinstance(excinfo.value, WopError):
            return f"wop replay of {self.path}: {excinfo.value.message}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"wop replay {self.path}"


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        if item.get_closest_marker("wop") is not None and "wop" not in getattr(item, "fixturenames", ["wop"]):
            item.fixturenames.append("wop")


@pytest.fixture
def wop(request: Any) -> "WopRun":
    """The test's wop run: `.action` (replay, record, extend), `.path` of its capture, `.outcome` after a replay."""
    run = WopRun(request.node)
    request.node._wop_run = run
    return run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    run = getattr(item, "_wop_run", None)
    if run is None:
        return (yield)
    run.start()
    try:
        result = yield
    except BaseException as exc:
        run.finish(exc)
        raise
    run.finish(None)
    return result


class WopRun:
    """One test under wop: decides replay or record, runs the body's session, judges the outcome."""

    def __init__(self, item: Any) -> None:
        from openwop_cli.config import load_settings

        self.item = item
        self.settings = load_settings(Path(str(item.config.rootpath)))
        marker = item.get_closest_marker("wop")
        options = dict(marker.kwargs) if marker is not None else {}
        self.policy = options.get("policy", self.settings.policy)
        self.path = self._capture_path(options.get("name"))
        self.action = self._action()
        self.outcome: Any = None
        self._work: Path | None = None
        self._context: Any = None

    def start(self) -> None:
        """Enter the replay or the recording (the test body runs inside it)."""
        if self.action == "missing":
            pytest.fail(f"no wop capture for this test at {self.path}: record it with --wop-record=once "
                        "(or --wop-record=all to record every test again)", pytrace=False)
        self._work = self.path.parent / f".{self.path.name}.wop-{uuid.uuid4().hex[:8]}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.action == "record":
            from openwop_cli.config import redaction_off_warning
            from openwop_cli.runtime.inprocess_capture import capture

            warning = redaction_off_warning(self.settings)
            if warning and not getattr(self.item.config, "_wop_warned_redaction", False):
                self.item.config._wop_warned_redaction = True
                print(f"wop: warning: {warning}", file=sys.stderr)

            self._context = capture(name=self.item.nodeid, out=self._work, redact=self.settings.redact,
                                    test=self.item.nodeid, ambient=self.settings.ambient)
        else:
            from openwop_cli.host.inprocess_replay import InProcessReplay

            self._context = InProcessReplay(self.path, out=self._work, policy=self.policy,
                                            extend=self.action == "extend", name=self.item.nodeid)
        self._context.__enter__()

    def finish(self, error: BaseException | None) -> None:
        """Leave it; keep a recording only if the test passed; fail the test on a replay divergence."""
        context, self._context = self._context, None
        context.__exit__(type(error) if error else None, error, None)
        if self.action == "replay":
            shutil.rmtree(self._work, ignore_errors=True)
            self.outcome = context.outcome
            if self.outcome.diverged:
                from openwop_cli.report.verdict import replay_text

                pytest.fail(f"wop replay of {self.path} diverged:\n{replay_text(self.outcome)}", pytrace=False)
            return
        if error is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            return
        self._keep_recording()

    def _keep_recording(self) -> None:
        old = None
        if self.path.exists():
            old = self.path.with_name(f".{self.path.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(self.path, old)
        os.replace(self._work, self.path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def _capture_path(self, name: str | None) -> Path:
        option = self.item.config.getoption("--wop-capture-dir")
        root = Path(option) if option else self.settings.capture_dir
        module = Path(str(self.item.path)).with_suffix("")
        try:
            module = module.relative_to(Path(str(self.item.config.rootpath)))
        except ValueError:
            module = Path(module.name)
        parts = [part for part in module.parts if part not in ("tests", "test")] or [module.name]
        if name:
            return root.joinpath(*parts, _safe(name))
        path, legacy = root.joinpath(*parts, _distinct(self.item.name)), root.joinpath(*parts, _safe(self.item.name))
        if path != legacy and not (path / "manifest.json").is_file() and _recorded_for(legacy, self.item.nodeid):
            return legacy  # recorded before test names were kept distinct, and this test's own
        return path

    def _action(self) -> str:
        mode = self.item.config.getoption("--wop-record")
        if mode is None:
            mode = "none" if os.environ.get("CI") else self.settings.record
        exists = (self.path / "manifest.json").is_file()
        if mode == "all" or (not exists and mode in ("once", "new")):
            return "record"
        if not exists:
            return "missing"
        return "extend" if mode == "new" else "replay"


def _safe(name: str) -> str:
    """A test name (parametrized ids included) as a directory name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "test"


_PLAIN = re.compile(r"[A-Za-z0-9_.-]+")
_PARAMETRIZED = re.compile(r"(.*?)\[(.*)\]", re.S)


def _distinct(name: str) -> str:
    """A test's name as a directory name of its own: `test_x[1-a]` is `test_x_1-a`, as _safe makes it; a name _safe
    would change more than that (`test_x[a b]`, `test_x[a/b]` and `test_x[a_b]` are all `test_x_a_b` to it) gets a
    hash of the name too, so two tests never share (and overwrite) one capture."""
    parametrized = _PARAMETRIZED.fullmatch(name)
    base, ids = parametrized.groups() if parametrized else (name, None)
    if _PLAIN.fullmatch(base) and (ids is None or _PLAIN.fullmatch(ids)):
        return _safe(name)
    import hashlib

    return f"{_safe(name)}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def _recorded_for(path: Path, nodeid: str) -> bool:
    """True when the capture at path was recorded by the test nodeid."""
    from openwop_cli.errors import WopError
    from openwop_cli.format.manifest import read_manifest

    if not (path / "manifest.json").is_file():
        return False
    try:
        return (read_manifest(path).get("program") or {}).get("pytest") == nodeid
    except WopError:
        return False
