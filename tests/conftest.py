"""Shared test helpers: real captures written by the real sink, and the real `wop` entry point."""

import importlib.util
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from tests.phoenix_server import phoenix  # noqa: F401 (the fixture, for tests/export and tests/importers)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
RUN_DIFF_SCHEMA = Path(__file__).resolve().parent / "conformance" / "run-diff-response.schema.json"

# Packages installed for tests register pytest plugins no test uses and that cost every pytest process seconds to
# import (arize-phoenix-client's imports the whole Phoenix server, langsmith's half of LangChain): the pytest runs
# the tests start (and xdist's workers, which read PYTEST_ADDOPTS) leave them out, as pyproject.toml's addopts do.
UNUSED_PLUGINS = ("phoenix", "langsmith_plugin", "anyio", "benchmark")
_left_out = " ".join(f"-p no:{name}" for name in UNUSED_PLUGINS)
if _left_out not in os.environ.get("PYTEST_ADDOPTS", ""):
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {_left_out}".strip()
# ... and for a pytest run a test starts on files of its own, which never use hypothesis (1 s to import)
NESTED_PYTEST_ADDOPTS = f"{os.environ['PYTEST_ADDOPTS']} -p no:hypothesispytest"


def nested_pytest_env(**more: str) -> dict[str, str]:
    """The environment of a pytest run a test starts (see NESTED_PYTEST_ADDOPTS), with more variables."""
    return {**os.environ, "PYTEST_ADDOPTS": NESTED_PYTEST_ADDOPTS, **more}


def requires(*modules: str) -> None:
    """Skip the test (or, called at a module's top, the module) unless every module is installed, without importing
    them: the programs the tests run import the SDKs, and pytest.importorskip's import in the worker costs each worker
    1-6 s of CPU per SDK (litellm, anthropic, openai agents) at collection or in the test. For a module the test
    itself uses, pytest.importorskip."""
    __tracebackhide__ = True  # the skip names the test's line, not this one
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            pytest.skip(f"{module} is not installed (pip install -e '.[test]')", allow_module_level=True)


def write_capture(path: Path, events: list[tuple[str, dict]], *, redactor: Redactor | None = None,
                  finalize: bool = True, **seed) -> Path:
    """A capture made through CaptureSink with the given (type, data) events."""
    sink = CaptureSink(path, redactor=redactor or Redactor("default", ()))
    sink.start(seed)
    for event_type, data in events:
        sink.append(event_type, data)
    if finalize:
        sink.finalize("ok")
    else:
        sink.flush()
    return path


def sample_events(count: int = 6) -> list[tuple[str, dict]]:
    """A small, plausible run: start, a tool call and result, an llm pair, end."""
    events = [("run_start", {"argv": ["python", "agent.py"]})]
    for index in range(count):
        events.append(("tool_call", {"name": "lookup", "args": {"id": index}, "callId": f"c{index}"}))
        events.append(("tool_result", {"callId": f"c{index}", "ok": True, "result": {"id": index, "v": "x" * index}}))
    events.append(("run_end", {"exitCode": 0, "status": "ok"}))
    return events


ISOLATED_VARIABLES = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")


def _real_store() -> Path:
    """The store a user of this machine has (what `wop` uses with no WOP_HOME), as the suite started."""
    from platformdirs import user_data_dir

    home = os.environ.get("WOP_HOME")
    return Path(home).expanduser() if home else Path(user_data_dir("wop", appauthor=False))


def _listing(store: Path) -> list[tuple[str, int]]:
    """Every file and directory in store with its modification time. What the user's own `wop` removes while it is
    listed (`wop rm`, `wop gc`, a capture's temporary file) is left out, not an error: os.walk passes over a
    directory that is gone, and so does this over a file."""
    listed = []
    for directory, subdirectories, files in os.walk(store):
        for name in (*subdirectories, *files):
            path = os.path.join(directory, name)
            try:
                status = os.lstat(path)
            except FileNotFoundError:
                continue
            if not stat.S_ISLNK(status.st_mode):
                listed.append((os.path.relpath(path, store), status.st_mtime_ns))
    return sorted(listed)


REAL_STORE = _real_store()
REAL_STORE_AT_START = _listing(REAL_STORE)
# A variable only this run's processes have (xdist's workers inherit it, and every program the tests start): a
# capture's run_start lists the names of its environment, so one this run recorded carries it, while one recorded by
# the user's own `wop` meanwhile does not, not even from a pytest run of theirs (PYTEST_CURRENT_TEST).
SUITE_MARK = next((name for name in os.environ if name.startswith("WOP_TEST_SUITE_")), None) \
    or f"WOP_TEST_SUITE_{uuid.uuid4().hex[:12].upper()}"
os.environ[SUITE_MARK] = "1"
# Each test's TMPDIR is made in here: short, as the unix sockets wop makes there (TMPDIR/wop-XXXXXXXX/sink) must fit
# in 107 bytes, and in one place, so the run can check that none was left behind. Made when pytest starts (this
# module is imported twice: as pytest's conftest and as tests.conftest).
SUITE_TEMP: list[Path] = []


def pytest_configure(config):
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # a shell's background job: children would ignore Ctrl-C
        signal.signal(signal.SIGINT, signal.default_int_handler)
    SUITE_TEMP.append(Path(tempfile.mkdtemp(prefix="wopt-", dir="/tmp" if os.path.isdir("/tmp") else None)))
    if not hasattr(config, "workerinput"):
        _write_bytecode()
        warm = _warmed_cache()
        if warm is not None:
            os.environ[WARM_CACHE] = str(warm)


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput") and os.environ.get(WARM_CACHE):
        shutil.rmtree(Path(os.environ.pop(WARM_CACHE)).parents[1], ignore_errors=True)


# wop's cache directory as a first run leaves it (the compiled redaction patterns, Hyperscan databases), copied into
# each test's empty XDG_CACHE_HOME: compiled anew in every test, they cost each test's first capture 0.4 s of CPU.
WARM_CACHE = "WOP_TEST_WARM_CACHE"


def _warmed_cache() -> Path | None:
    """A cache directory filled by a capture, a replay and a verify of a small program, run isolated as a test is
    (None if one failed: the tests then start cold, and the failure is theirs to show)."""
    base = Path(tempfile.mkdtemp(prefix="wopc-"))
    env = {**os.environ, "WOP_HOME": str(base / "home"), "TMPDIR": str(base)}
    for name in ISOLATED_VARIABLES:
        (base / name.lower()).mkdir()
        env[name] = str(base / name.lower())
    program = "import random, time, uuid; print(uuid.uuid4(), random.random(), time.time())"
    for args in (["capture", "--out", str(base / "c"), "--", sys.executable, "-c", program],
                 ["replay", str(base / "c"), "--out", str(base / "r")], ["verify", str(base / "c")]):
        try:
            subprocess.run([sys.executable, "-m", "openwop_cli", *args], env=env, cwd=base, capture_output=True,
                           timeout=120, check=True)
        except (subprocess.SubprocessError, OSError):
            shutil.rmtree(base, ignore_errors=True)
            return None
    return base / "xdg_cache_home" / "wop"


def _write_bytecode() -> None:
    """Write the package's bytecode once, before any test runs, as an install would: where PYTHONDONTWRITEBYTECODE
    is set (CI sandboxes), every wop process the tests start would otherwise compile every module it imports anew
    (a third of a small capture's CPU)."""
    import compileall

    compileall.compile_dir(ROOT / "openwop_cli", quiet=2)


def written_by_tests(store: Path, before: list[tuple[str, int]], after: list[tuple[str, int]],
                     mark: str | None = None) -> list[str]:
    """The captures in store that changed between the two listings and that this run's tests wrote: a capture a test
    (or a program it ran) recorded names the run's SUITE_MARK (or mark) among the environment variables of its
    run_start; one the user made meanwhile with `wop` in another shell does not."""
    changed = sorted(set(after) - set(before))
    captures = sorted({Path(*Path(path).parts[:2]) for path, _ in changed if Path(path).parts[:1] == ("captures",)
                       and len(Path(path).parts) >= 2})
    return [str(capture) for capture in captures if _recorded_with(store / capture, mark or SUITE_MARK)]


def _recorded_with(capture: Path, variable: str) -> bool:
    """Whether the capture's run_start names variable among its environment's (False for one still unreadable)."""
    try:
        with open(capture / "events.jsonl", "rb") as events:
            first = orjson.loads(events.readline() or b"{}")
    except (OSError, orjson.JSONDecodeError):
        return False
    data = first.get("data") if isinstance(first, dict) else None
    return isinstance(data, dict) and isinstance(data.get("env"), list) and variable in data["env"]


def pytest_sessionfinish(session, exitstatus):
    """Fail the run when a test wrote into the user's real store (see written_by_tests), or left temporary files."""
    after = _listing(REAL_STORE)
    escaped = written_by_tests(REAL_STORE, REAL_STORE_AT_START, after) if after != REAL_STORE_AT_START else []
    if escaped:
        session.exitstatus = 1
        print(f"\nFAILED: a test escaped its WOP_HOME and recorded into the user's real wop store {REAL_STORE}: "
              f"{', '.join(escaped[:5])}")
    left = sorted(str(path) for path in SUITE_TEMP[0].rglob("*"))
    shutil.rmtree(SUITE_TEMP[0], ignore_errors=True)
    if left:
        session.exitstatus = 1
        print(f"\nFAILED: temporary files outlived their test (a process still running after it?): {left[:10]}")


@contextmanager
def isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty store (WOP_HOME), HOME and XDG directories, and TMPDIR of their own while the block runs, passed on to
    subprocesses; the TMPDIR is removed after it (a `wop capture` a test kills leaves its channel's directory)."""
    base = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("WOP_HOME", str(base / "wop-home"))
        for name in ISOLATED_VARIABLES:
            directory = base / name.lower()
            directory.mkdir()
            monkeypatch.setenv(name, str(directory))
        if os.environ.get(WARM_CACHE):
            shutil.copytree(os.environ[WARM_CACHE], base / "xdg_cache_home" / "wop")
        temporary = tempfile.mkdtemp(dir=SUITE_TEMP[0])
        monkeypatch.setenv("TMPDIR", temporary)
        monkeypatch.setattr(tempfile, "tempdir", temporary)
        try:
            yield base / "wop-home"
        finally:
            shutil.rmtree(temporary, ignore_errors=True)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory) -> Iterator[Path]:
    """Every test runs isolated: its own empty store, HOME, XDG directories and TMPDIR."""
    with isolated(tmp_path_factory) as home:
        yield home


@pytest.fixture(scope="session")
def isolation(tmp_path_factory):
    """For a fixture a module's tests share (scope="module"), which is set up before isolated_home: `with
    isolation():` runs its block isolated as a test is (a fixture, as pytest loads this file apart from the
    tests.conftest the tests import, whose SUITE_TEMP stays empty)."""
    return lambda: isolated(tmp_path_factory)


def keep_signing_key(to: Path) -> Path:
    """A copy, at to, of the current user's signing key: in a fixture's `with isolation():` block, that of the
    captures the block recorded, for the tests that share them (adopt_signing_key)."""
    from openwop_cli.format.signature import key_path

    return Path(shutil.copy2(key_path(), to))


def adopt_signing_key(key: Path) -> None:
    """Make key the signing key of this test's user (whose isolated home has none yet). A capture a module's tests
    share was recorded once, in a home of its own: with its recorder's key, it reads as this user's own, as the one
    each test used to record itself did (wop replays only the captures its user trusts)."""
    from openwop_cli.format.signature import key_path

    target = key_path()
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copy2(key, target)


@pytest.fixture
def wop_home(isolated_home) -> Path:
    """This test's empty store (WOP_HOME), also passed to subprocesses."""
    return isolated_home


def run_wop(*args: str, input: str | None = None, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real `wop` command line in a subprocess (python -m openwop_cli), no colour.

    env adds to (a value of None: removes from) this process's environment. Every `wop diff --json` (without
    --detail) it runs is checked against the RFC 0054 JSON Schema."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    full_env = {name: value for name, value in full_env.items() if value is not None}
    done = subprocess.run(
        [sys.executable, "-m", "openwop_cli", *args],
        capture_output=True, text=True, input=input, env=full_env, cwd=cwd or ROOT, timeout=120,
    )
    if args and args[0] == "diff" and "--json" in args and "--detail" not in args and done.returncode in (0, 1):
        assert_run_diff_schema(orjson.loads(done.stdout))
    return done


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A ThreadingHTTPServer of handler on 127.0.0.1, serving from a thread while the block runs: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def start_capture(program: Path, out: Path, *args: str) -> subprocess.Popen:
    """`wop capture --out OUT -- python PROGRAM ARGS…` running in the background, in a session and process group of
    its own (end it with os.killpg), its stdout a text pipe the test reads the program's lines from."""
    return subprocess.Popen([sys.executable, "-m", "openwop_cli", "capture", "--out", str(out), "--",
                             sys.executable, str(program), *args], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)


def wait_for_events(out: Path, count: int, seconds: float = 30) -> None:
    """Wait until the capture at out has count lines in events.jsonl, or seconds have passed."""
    deadline = time.monotonic() + seconds
    path = out / "events.jsonl"
    while (len(path.read_bytes().splitlines()) if path.exists() else 0) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def assert_run_diff_schema(result: dict) -> dict:
    """result validated against run-diff-response.schema.json as RFC 0054 §B publishes it (additionalProperties: false)."""
    import jsonschema

    jsonschema.Draft202012Validator(orjson.loads(RUN_DIFF_SCHEMA.read_bytes())).validate(result)
    return result


def under_a_limit(program: Path) -> list[str]:
    """The command running program, as this user or, for root (whom RLIMIT_NPROC does not bind), under nobody's real
    uid without the capabilities that lift that limit (its files still root's to read)."""
    if os.geteuid() != 0:
        return [sys.executable, str(program)]
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: RLIMIT_NPROC cannot be made to bind")
    caps = "-sys_resource,-sys_admin"
    return ["setpriv", "--ruid", "65534", f"--bounding-set={caps}", f"--inh-caps={caps}", sys.executable, str(program)]
