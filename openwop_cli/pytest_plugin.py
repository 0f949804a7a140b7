"""pytest plugin: a captured run as a regression test (`@pytest.mark.wop` or the `wop` fixture).

The test body runs under wop in the test process. With a capture on disk it is replayed — every
LLM, HTTP and tool call served from the capture, network blocked, strict unless the marker says
`policy="lenient"` — and a divergence fails the test with the `wop replay` report. Without one
it is recorded. Captures live in `tests/captures/<test module>/<test name>/` ([tool.wop]
capture_dir, or --wop-capture-dir).

Record modes (--wop-record, [tool.wop] record; `none` when the CI variable is set unless the flag
is given): none — replay only, a missing capture fails; once — record when missing, else replay;
new — replay, and record the calls the capture does not have yet; all — record again. A recording
is kept only when the test passes, and replaces the old capture in one rename.
"""

import os
import re
import shutil
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


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "wop(policy='strict', name=None): run the test body under wop — replay its capture, or record it")


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
            from openwop_cli.runtime.sdk import capture

            self._context = capture(name=self.item.nodeid, out=self._work, redact=self.settings.redact,
                                    test=self.item.nodeid, ambient=self.settings.ambient)
        else:
            from openwop_cli.replay.inprocess import InProcessReplay

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
                from openwop_cli.report.replay import replay_text

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
        return root.joinpath(*parts, _safe(name or self.item.name))

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
