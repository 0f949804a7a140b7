"""A debugger, not only a diff: `wop replay --pdb`/`--break-at` under a real pseudo-terminal, and forks with an
edited answer (`wop fork --edit`)."""

import os
import pty
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import ROOT, adopt_signing_key, keep_signing_key, run_wop

AGENT = """
import os, threading
import openwop_cli as wop

@wop.tool
def lookup(order):
    return {"order": order, "status": "shipped"}

def handle(ticket):
    wanted_order = os.environ.get("ORDER", "A-1")
    return lookup(wanted_order)

print(handle("t-1"))
"""

ASYNC_AGENT = """
import asyncio, os
import openwop_cli as wop

@wop.tool
async def lookup(order):
    return {"order": order}

async def handle():
    async_local = os.environ.get("ORDER", "A-1")
    return await lookup(async_local)

print(asyncio.run(handle()))
"""

THREADED_AGENT = """
import os, threading, time
import openwop_cli as wop

@wop.tool
def lookup(order):
    return {"order": order}

def steady():
    lookup("steady-1")
    time.sleep(0.5)
    print("steady thread done", flush=True)

def drifting():
    time.sleep(0.2)
    thread_local = os.environ.get("ORDER", "A-1")
    lookup(thread_local)

threads = [threading.Thread(target=steady, name="steady"), threading.Thread(target=drifting, name="drifting")]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""


class Terminal:
    """`wop` run on a real pseudo-terminal: read what it prints, type at its prompt."""

    def __init__(self, args: list[str], cwd: Path, env: dict) -> None:
        master, slave = pty.openpty()
        full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120", **env}
        self.process = subprocess.Popen([sys.executable, "-m", "openwop_cli", *args], stdin=slave, stdout=slave,
                                        stderr=slave, cwd=cwd, env=full_env, close_fds=True)
        os.close(slave)
        self.master = master
        self.output = b""

    def wait_for(self, text: str, seconds: float = 60) -> str:
        deadline = time.monotonic() + seconds
        while text.encode() not in self.output:
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {text!r}; the terminal shows:\n{self.output.decode(errors='replace')}")
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.output += os.read(self.master, 65536)
                except OSError:
                    break
        return self.output.decode(errors="replace")

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def finish(self) -> tuple[int, str]:
        code = self.process.wait(timeout=60)
        try:
            while select.select([self.master], [], [], 0.2)[0]:
                chunk = os.read(self.master, 65536)
                if not chunk:
                    break
                self.output += chunk
        except OSError:
            pass
        os.close(self.master)
        return code, self.output.decode(errors="replace")


def capture(tmp_path: Path, script: str) -> Path:
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(script))
    done = run_wop("capture", "--out", str(tmp_path / "source"), "--", sys.executable, str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "source"


@pytest.mark.parametrize("script, local", [(AGENT, "wanted_order"), (ASYNC_AGENT, "async_local")])
def test_pdb_stops_in_the_programs_frame_at_the_divergence(tmp_path, script, local):
    source = capture(tmp_path, script)
    terminal = Terminal(["replay", str(source), "--pdb"], tmp_path, {"ORDER": "B-2"})
    shown = terminal.wait_for("(Pdb)")
    assert "wop: replay diverged at seq 1: event_payload_mismatch" in shown and "observed (today):   B-2" in shown
    assert "agent.py" in shown.split("(Pdb)")[0].splitlines()[-2]
    terminal.type(f"p {local}")
    terminal.wait_for("'B-2'")
    terminal.type("where")
    terminal.wait_for("<module>()")
    terminal.type("c")
    code, output = terminal.finish()
    assert code == 1
    assert "1 divergence, first at seq 1" in output


def test_pdb_stops_only_the_thread_that_diverged(tmp_path):
    source = capture(tmp_path, THREADED_AGENT)
    terminal = Terminal(["replay", str(source), "--pdb", "--lenient"], tmp_path, {"ORDER": "B-2"})
    terminal.wait_for("(Pdb)")
    terminal.wait_for("steady thread done")
    terminal.type("p thread_local")
    terminal.wait_for("'B-2'")
    terminal.type("c")
    code, output = terminal.finish()
    assert code == 1 and "event_payload_mismatch" in output


def test_break_at_stops_before_the_unit_is_served_and_an_unchanged_run_exits_0(tmp_path):
    source = capture(tmp_path, AGENT)
    terminal = Terminal(["replay", str(source), "--break-at", "2"], tmp_path, {})
    shown = terminal.wait_for("(Pdb)")
    assert "--break-at 2: about to hand back the recorded seq 1–2" in shown
    assert "served: {'order': 'A-1', 'status': 'shipped'}" in shown
    terminal.type("p wanted_order")
    terminal.wait_for("'A-1'")
    terminal.type("c")
    code, output = terminal.finish()
    assert code == 0, output
    assert "no divergence: the run replays exactly" in output


def test_pdb_refuses_without_a_terminal(tmp_path):
    source = capture(tmp_path, AGENT)
    done = run_wop("replay", str(source), "--pdb", input="", cwd=tmp_path)
    assert done.returncode == 2 and "needs a terminal" in done.stderr


REFUSAL = '$.response.choices[0].message.content="I cannot help with that."'


@pytest.fixture(scope="module")
def recorded_example(tmp_path_factory, isolation) -> tuple[Path, Path]:
    """The bundled example captured once for the module's tests (a fork writes a capture of its own, never into its
    source), and its recorder's signing key."""
    directory = tmp_path_factory.mktemp("example")
    source = directory / "support"
    with isolation():
        done = run_wop("capture", "--out", str(source), "--", sys.executable,
                       str(ROOT / "examples" / "support_agent.py"), cwd=directory)
        assert done.returncode == 0, done.stderr
        return source, keep_signing_key(directory / "key")


@pytest.fixture
def example(recorded_example) -> Path:
    """The capture of the bundled example, recorded by this test's user."""
    source, key = recorded_example
    adopt_signing_key(key)
    return source


def llm_response_seq(capture_dir: Path) -> int:
    lines = (capture_dir / "events.jsonl").read_bytes().splitlines()
    return next(event["seq"] for event in map(orjson.loads, lines) if event["type"] == "llm_response")


def test_an_edited_answer_changes_the_later_calls_and_the_fork_diffs_at_the_edit(example, tmp_path):
    seq = llm_response_seq(example)
    done = run_wop("fork", str(example), "--edit", str(seq), REFUSAL, "--json", "--out", str(tmp_path / "fork"),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = orjson.loads(done.stdout)
    assert report["edits"][0]["edited"] == "I cannot help with that." and report["edits"][0]["seq"] == seq
    changed = report["divergences"][0]
    assert changed["code"] == "event_payload_mismatch" and changed["jsonPath"] == "$.args.text"
    assert changed["observedValue"].endswith("I cannot help with that.")
    assert {d["eventSeq"] for d in report["divergences"] if d["code"] == "event_missing"} == {seq + 1, seq + 3}
    assert "I cannot help with that." in done.stderr
    diffed = orjson.loads(run_wop("diff", str(example), str(tmp_path / "fork"), "--json", cwd=tmp_path).stdout)
    assert diffed["divergedAtSeq"] == seq == report["diff"]["divergedAtSeq"]
    human = run_wop("fork", str(example), "--edit", str(seq), REFUSAL, cwd=tmp_path)
    assert "the edit changed the run from seq" in human.stdout and "did not happen in the fork" in human.stdout


def test_the_fork_reports_diff_leaves_the_shells_environment_out(example, tmp_path):
    """An edit that changes nothing, forked from a shell with one more exported variable: the fork report's diff
    against the original finds no difference (run_start's env names are run metadata, not behaviour)."""
    seq = llm_response_seq(example)
    recorded = orjson.loads((example / "events.jsonl").read_bytes().splitlines()[seq])
    same = orjson.dumps(recorded["data"]["response"]["choices"][0]["message"]["content"]).decode()
    done = run_wop("fork", str(example), "--edit", str(seq), f"$.response.choices[0].message.content={same}",
                   "--json", "--out", str(tmp_path / "fork"), env={"PS1": "$ "}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert orjson.loads(done.stdout)["diff"]["divergedAtSeq"] is None


def test_an_offline_edited_fork_stops_at_the_first_call_that_needs_the_network(example, tmp_path):
    seq = llm_response_seq(example)
    done = run_wop("fork", str(example), "--edit", str(seq), REFUSAL, "--offline", cwd=tmp_path)
    assert done.returncode == 1
    assert f"--offline: stopped at seq {seq + 1}, the first call the capture cannot answer" in done.stdout


@pytest.mark.parametrize("args, message", [
    (["--edit", "999", '$.x=1'], "this capture has seq 0.."),
    (["--edit", "0", '$.x=1'], "that is a run_start"),
    (["--edit", "{llm}", '$.response.nope=1'], "its paths: $.provider"),
    (["--edit", "{llm}", '$.response.id=not json'], "must be JSON"),
    (["--edit", "{llm}"], "takes two values"),
    (["--edit", "{llm}", '$.response.id="x"', "--from-seq", "3"], "do not go together"),
    (["--offline", "--from-seq", "3"], "--offline goes with --edit"),
])
def test_bad_edits_are_usage_errors_naming_what_is_valid(example, tmp_path, args, message):
    args = [arg.replace("{llm}", str(llm_response_seq(example))) for arg in args]
    done = run_wop("fork", str(example), *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr


def test_a_changed_prompt_line_is_shown_beside_the_divergence_with_its_call_site(tmp_path):
    for name in ("support_agent.py", "fake_model.py"):
        (tmp_path / name).write_text((ROOT / "examples" / name).read_text())
    done = run_wop("capture", "--out", str(tmp_path / "source"), "--", sys.executable, "support_agent.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    script = tmp_path / "support_agent.py"
    script.write_text(script.read_text().replace("Answer in one sentence.", "Answer in two sentences."))
    call_line = next(number for number, line in enumerate(script.read_text().splitlines(), 1) if "wop.llm_call(" in line)

    human = run_wop("replay", str(tmp_path / "source"), cwd=tmp_path)
    assert human.returncode == 1
    assert f"called from support_agent.py:{call_line} in answer()" in human.stdout
    assert f"source changed since the capture  support_agent.py:{call_line}  in answer()" in human.stdout
    assert '-SYSTEM_PROMPT = "You are a concise support agent for Acme. Answer in one sentence."' in human.stdout
    assert '+SYSTEM_PROMPT = "You are a concise support agent for Acme. Answer in two sentences."' in human.stdout

    report = orjson.loads(run_wop("replay", str(tmp_path / "source"), "--json", cwd=tmp_path).stdout)
    change = report["sourceChange"]
    assert (change["file"], change["line"], change["function"], change["eventSeq"]) == (
        "support_agent.py", call_line, "answer", report["divergences"][0]["eventSeq"])
    assert change["pinnedSha256"] != change["currentSha256"] and len(change["currentSha256"]) == 64
    assert any(line.startswith("+SYSTEM_PROMPT") for line in change["hunks"][0]["lines"])
    assert report["divergences"][0]["site"].items() >= {"file": "support_agent.py", "line": call_line, "function": "answer"}.items()
