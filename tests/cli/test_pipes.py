"""wop's standard streams failing: a reader that stops early (`wop show last | head`) ends wop quietly with exit 0,
never 1 ("differences"); output that cannot be written otherwise is exit 2; a closed stderr changes nothing else."""

import os
import subprocess
import sys

import orjson
import pytest

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from tests.conftest import ROOT, adopt_signing_key, keep_signing_key, run_wop, sample_events, write_capture


@pytest.fixture(scope="module")
def big_capture(tmp_path_factory):
    """10,000 events, made once for the module's tests, which only read it."""
    path = tmp_path_factory.mktemp("big") / "big"
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    for index in range(5_000):
        sink.append("tool_call", {"name": "lookup", "args": {"order": f"A-{index}"}, "callId": f"t{index}"})
        sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": {"status": "shipped"}})
    sink.finalize("ok")
    return path


@pytest.mark.parametrize("args", [["show"], ["show", "--json"], ["show", "--jsonl"]])
def test_a_closed_pipe_ends_the_command_quietly_with_exit_0(big_capture, args):
    command = [sys.executable, "-m", "openwop_cli", args[0], str(big_capture), *args[1:]]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                               env={**os.environ, "NO_COLOR": "1"})
    assert process.stdout.readline()
    process.stdout.close()  # the reader goes away, like `| head -1`
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 0
    assert stderr == b""


@pytest.fixture(scope="module")
def recorded_runs(tmp_path_factory, isolation):
    """A real capture of a small program (replayable; its stderr fills a pipe), another capture that differs, and the
    signing key of their recorder: made once for the module's 28 tests, as no command they run writes into a capture
    (a replay writes a new one in the test's own store)."""
    program = ("import sys, time; time.time(); "
               "print('program output'); print(('e' * 99 + '\\n') * 2000, file=sys.stderr)")
    runs = tmp_path_factory.mktemp("runs")
    with isolation():
        done = run_wop("capture", "--out", str(runs / "a"), "--", sys.executable, "-c", program)
        assert done.returncode == 0, done.stderr
        key = keep_signing_key(runs / "key")
    write_capture(runs / "b", sample_events(3))
    return runs / "a", runs / "b", key


@pytest.fixture
def two_runs(recorded_runs):
    """The module's two captures, the first recorded by this test's user."""
    a, b, key = recorded_runs
    adopt_signing_key(key)
    return a, b


COMMANDS = [  # the entry point's fast path and the Typer app's (--version, --help)
    ("diff", "{a}", "{b}"), ("diff", "{a}", "{b}", "--json"), ("replay", "{a}"), ("replay", "{a}", "--json"),
    ("replay", "{a}", "{a}"),
    ("show", "{a}"), ("show", "{a}", "--json"), ("show", "{a}", "--seq", "1"), ("ls",), ("ls", "--json"),
    ("verify", "{a}"), ("state", "{a}"), ("--version",), ("--help",),
]


def wop_with(streams: dict, args: tuple, runs: tuple) -> subprocess.CompletedProcess:
    """`wop ARGS` with its stdout and stderr as given: a file object, subprocess.PIPE, or None for a descriptor closed
    when it starts (`>&-`, `2>&-`)."""
    closed = [fd for fd, stream in ((1, streams["stdout"]), (2, streams["stderr"])) if stream is None]
    a, b = runs
    return subprocess.run([sys.executable, "-m", "openwop_cli", *(arg.format(a=a, b=b) for arg in args)],
                          stdout=streams["stdout"] or subprocess.DEVNULL,
                          stderr=streams["stderr"] or subprocess.DEVNULL,
                          preexec_fn=lambda: [os.close(fd) for fd in closed], cwd=ROOT, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_output_that_cannot_be_written_is_one_line_and_exit_2(two_runs, args):
    with open("/dev/full", "w") as full:
        done = wop_with({"stdout": full, "stderr": subprocess.PIPE}, args, two_runs)
    wop_lines = [line for line in done.stderr.decode().splitlines() if line.startswith("wop: ")]
    assert done.returncode == 2, done.stderr
    assert wop_lines == ["wop: error: cannot write the output: No space left on device"], done.stderr
    assert b"Traceback" not in done.stderr or args[0] == "replay"  # the replayed program's own print fails too
    closed = wop_with({"stdout": None, "stderr": subprocess.PIPE}, args, two_runs)
    assert closed.returncode == 2
    assert closed.stderr.decode().splitlines()[-1] == "wop: error: cannot write the output: standard output is closed"


@pytest.mark.parametrize("args", [*COMMANDS, ("report", "{a}", "-o", "{b}.html")], ids=" ".join)
def test_a_closed_stderr_changes_nothing_but_what_is_said(two_runs, args):
    """No crash, the same exit code and output: with nowhere to say anything, wop says nothing."""
    usual = wop_with({"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}, args, two_runs)
    quiet = wop_with({"stdout": subprocess.PIPE, "stderr": None}, args, two_runs)
    assert quiet.returncode == usual.returncode and usual.returncode in (0, 1)
    if args[0] == "replay":  # a replay's report names the replay it wrote
        assert len(quiet.stdout) > 0
    else:
        assert quiet.stdout == usual.stdout


def test_a_capture_with_stderr_closed_is_kept_and_ends_with_the_programs_exit_code(tmp_path):
    for code in (0, 5):
        program = f"import sys, time; time.time(); print('out'); sys.exit({code})"
        done = wop_with({"stdout": subprocess.PIPE, "stderr": None},
                        ("capture", "--out", str(tmp_path / f"c{code}"), "--", sys.executable, "-c", program), ("", ""))
        assert done.returncode == code and done.stdout == b"out\n"
        manifest = orjson.loads((tmp_path / f"c{code}" / "manifest.json").read_bytes())
        assert manifest["status"] == ("ok" if code == 0 else "error") and manifest["eventCount"] == 3
    failed = wop_with({"stdout": subprocess.PIPE, "stderr": None}, ("show", str(tmp_path / "missing")), ("", ""))
    assert failed.returncode == 2
