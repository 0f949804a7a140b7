"""Every command's everyday command lines start without Typer and Pydantic (cli.entry's fast path), and end as the same
line read by the Typer app does: the same exit code, the same output, the same one-line errors."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from openwop_cli.cli.fast_options import COMMANDS
from tests.conftest import ROOT, adopt_signing_key, keep_signing_key, run_wop

NOT_LOADED = ("typer", "pydantic", "click")  # the Typer app's, and the Pydantic it converts parameters with
CASSETTE = {"version": 1, "interactions": [{
    "request": {"method": "POST", "uri": "https://api.example.com/v1/chat/completions",
                "body": '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
                "headers": {"Content-Type": ["application/json"]}},
    "response": {"status": {"code": 200, "message": "OK"}, "headers": {"Content-Type": ["application/json"]},
                 "body": '{"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, '
                         '"finish_reason": "stop"}]}'}}]}
REQUEST = {"provider": "openai", "model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}

# command -> its everyday lines ({capture}: a small capture; {new}: a directory that does not exist yet), and whether
# one line gives the same output twice (a line that makes a new capture or trace prints its new id)
EVERYDAY = {
    "capture": ([["capture", "--out", "{new}", "--", sys.executable, "-c", "print(1)"]], False),
    "replay": ([["replay", "{capture}", "--out", "{new}"]], False),
    "fork": ([["fork", "{capture}", "--from-seq", "1", "--out", "{new}"]], False),
    "diff": ([["diff", "{capture}", "{capture}"], ["diff", "{capture}", "{capture}", "--json"]], True),
    "state": ([["state", "{capture}"], ["state", "{capture}", "--at", "1", "--json"]], True),
    "report": ([["report", "{capture}", "-o", "{new}"]], True),
    "ls": ([["ls"], ["ls", "--json"]], True),
    "show": ([["show", "{capture}"], ["show", "{capture}", "--json"], ["show", "{capture}", "--seq", "1"],
              ["show", "{capture}", "--type", "run", "--jsonl"]], True),
    "verify": ([["verify", "{capture}"], ["verify", "{capture}", "--json"]], True),
    "cache-key": ([["cache-key", "{request}"]], True),
    "rm": ([["rm", "{copy}", "--yes"]], True),
    "gc": ([["gc", "--older-than", "30", "--dry-run"], ["gc", "--older-than", "0.5", "--yes", "--json"]], True),
    "export otel": ([["export", "otel", "{capture}", "--file", "{new}"]], False),
    "import vcr": ([["import", "vcr", "{cassette}", "--out", "{new}"]], False),
    "import otel": ([["import", "otel", "{traces}", "--out", "{new}", "--json"]], False),
}
# one line of each command that fails, and must fail as the Typer app fails ({damaged}: a capture with a torn line)
FAILING = [["show", "nowhere"], ["state", "{capture}", "--at", "99"], ["verify", "{damaged}"], ["rm", "nowhere"],
           ["report", "{capture}", "-o", "{directory}"], ["diff", "{capture}", "nowhere"], ["replay", "nowhere"],
           ["fork", "nowhere", "--from-seq", "1"], ["cache-key", "{directory}"], ["export", "otel", "nowhere"],
           ["import", "vcr", "{request}"], ["import", "otel", "--phoenix", "http://127.0.0.1:9"],
           ["show", "{capture}", "--json", "--jsonl"], ["capture", "--out", "{capture}", "--", "true"]]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, isolation):
    """A capture of a small program with its recorder's signing key, a request, a cassette and an OTLP file of the
    capture: made once for the module's tests, none of which writes into them."""
    where = tmp_path_factory.mktemp("inputs")
    with isolation():
        done = run_wop("capture", "--out", str(where / "capture"), "--", sys.executable, "-c", "print(1)")
        assert done.returncode == 0, done.stderr
        key = keep_signing_key(where / "key")
        exported = run_wop("export", "otel", str(where / "capture"), "--file", str(where / "traces.jsonl"))
        assert exported.returncode == 0, exported.stderr
    (where / "request.json").write_bytes(orjson.dumps(REQUEST))
    (where / "cassette.json").write_bytes(orjson.dumps(CASSETTE))
    return where, key


def filled(line: list[str], inputs: Path, work: Path, run: str) -> list[str]:
    """The line with its placeholders filled in; run names the run, each writing its own new files and copy."""
    if "{copy}" in line or "{damaged}" in line:
        shutil.copytree(inputs / "capture", work / f"copy-{run}", symlinks=True)
    if "{damaged}" in line:
        with open(work / f"copy-{run}" / "events.jsonl", "ab") as events:
            events.write(b'{"torn')
    places = {"{capture}": inputs / "capture", "{request}": inputs / "request.json", "{traces}": inputs / "traces.jsonl",
              "{cassette}": inputs / "cassette.json", "{new}": work / f"new-{run}", "{copy}": work / f"copy-{run}",
              "{damaged}": work / f"copy-{run}", "{directory}": work}
    return [str(places.get(word, word)) for word in line]


def run_importing(args: list[str], cwd: Path, through_typer: bool) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`python -X importtime -m openwop_cli ARGS…` as run_wop runs wop (through_typer: with WOP_DEBUG=0, which sends
    the line to the Typer app and shows no traceback): the run, its stderr without the import lines, and the
    top-level packages it imported."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("WOP_DEBUG", None)
    if through_typer:
        env["WOP_DEBUG"] = "0"
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "openwop_cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)
    lines = done.stderr.splitlines(keepends=True)
    packages = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in lines if line.startswith("import time:")}
    done.stderr = "".join(line for line in lines if not line.startswith("import time:"))
    return done, packages


def same_output(text: str, work: Path) -> str:
    """Output with what differs between two runs of one line made the same: the runs' own files, and ages."""
    return re.sub(r"(new|copy)-(fast|typer)", r"\1-RUN", text.replace(str(work), "WORK"))


def test_every_command_is_run_here() -> None:
    assert set(EVERYDAY) == set(COMMANDS)
    failing = {" ".join(line[:2]) if line[0] in ("export", "import") else line[0] for line in FAILING}
    assert failing == set(COMMANDS) - {"ls", "gc"}  # they read nothing a command line names


@pytest.mark.parametrize("name", sorted(EVERYDAY))
def test_an_everyday_command_line_loads_neither_typer_nor_pydantic(name, inputs, tmp_path):
    where, key = inputs
    adopt_signing_key(key)
    lines, repeatable = EVERYDAY[name]
    for line in lines:
        fast, loaded = run_importing(filled(line, where, tmp_path, "fast"), tmp_path, through_typer=False)
        assert fast.returncode == 0, (line, fast.stderr)
        assert not loaded & set(NOT_LOADED), (line, "the Typer app read it")
        typer, loaded = run_importing(filled(line, where, tmp_path, "typer"), tmp_path, through_typer=True)
        assert "typer" in loaded  # what the fast path saves (with typer 0.29, Pydantic too)
        assert typer.returncode == 0, (line, typer.stderr)
        if repeatable:
            assert same_output(fast.stdout, tmp_path) == same_output(typer.stdout, tmp_path), line
            assert same_output(fast.stderr, tmp_path) == same_output(typer.stderr, tmp_path), line


@pytest.mark.parametrize("line", FAILING, ids=" ".join)
def test_a_failing_command_line_fails_as_the_typer_app_fails(line, inputs, tmp_path):
    where, key = inputs
    adopt_signing_key(key)
    fast, loaded = run_importing(filled(line, where, tmp_path, "fast"), tmp_path, through_typer=False)
    assert not loaded & set(NOT_LOADED), (line, "the Typer app read it")
    typer, _ = run_importing(filled(line, where, tmp_path, "typer"), tmp_path, through_typer=True)
    assert fast.returncode in (2, 3) and fast.returncode == typer.returncode, (fast.stderr, typer.stderr)
    assert fast.stderr == "" or fast.stderr.startswith("wop: error: ") and fast.stderr.count("\n") == 1, fast.stderr
    assert same_output(fast.stdout + fast.stderr, tmp_path) == same_output(typer.stdout + typer.stderr, tmp_path)


CLICK_CONFIRM = """
import os, typer

app = typer.Typer(rich_markup_mode=None)  # as cli.app's

@app.command()
def main() -> None:
    if not typer.confirm(os.environ["QUESTION"], default=False):
        typer.echo("nothing deleted")

app()
"""


def answered(command: list[str], answers: bytes, **env: str) -> tuple[int, bytes, str]:
    """command run on a terminal where answers were typed: its exit code, what the terminal shows, its stderr."""
    import pty

    controller, terminal = pty.openpty()
    os.write(controller, answers)
    paths = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    process = subprocess.Popen(command, stdin=terminal, stdout=terminal, stderr=subprocess.PIPE,
                               env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": paths, **env})
    os.close(terminal)
    shown = b""
    while chunk := _read(controller):
        shown += chunk
    os.close(controller)
    code = process.wait(timeout=120)
    return code, shown, process.stderr.read().decode()


def _read(controller: int) -> bytes:
    try:
        return os.read(controller, 65536)
    except OSError:  # the terminal's other end is closed: the process has ended
        return b""


@pytest.mark.parametrize("answers", [b"maybe\nn\n", b"\n", b"\x04", b"no\n"])
def test_rm_asks_on_a_terminal_as_clicks_confirm_asked(answers, inputs, tmp_path):
    """The prompt, an answer that is neither yes nor no, and Ctrl-D (exit 1) as Typer's confirm had them; and a no
    deletes nothing."""
    where, _ = inputs
    line = filled(["rm", "{copy}"], where, tmp_path, "fast")
    wop = answered([sys.executable, "-m", "openwop_cli", *line], answers)
    click = answered([sys.executable, "-c", CLICK_CONFIRM], answers, QUESTION=f"delete 1 capture(s): {line[1]}?")
    assert wop == click
    assert (tmp_path / "copy-fast").is_dir()


def test_rm_deletes_when_told_yes_on_a_terminal(inputs, tmp_path):
    where, _ = inputs
    line = filled(["rm", "{copy}"], where, tmp_path, "fast")
    code, shown, _ = answered([sys.executable, "-m", "openwop_cli", *line], b"y\n")
    assert code == 0 and f"deleted {line[1]}" in shown.decode()
    assert not (tmp_path / "copy-fast").exists()
