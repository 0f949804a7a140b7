"""What a replay report leads with: the real cause of an early exit, a short traceback after a strict stop,
allowed tools beside their recording, what a failed fork did, and captures told apart in a batch."""

import re
import sys
import textwrap
from pathlib import Path

import orjson

from tests.conftest import ROOT, requires, run_wop
from tests.fake_provider import FakeProvider

requires("openai")

SDK_AGENT = """
import os
import openai

client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", max_retries=0)   # the key comes from OPENAI_API_KEY
reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
    {"role": "system", "content": os.environ.get("PROMPT", "Be brief.")},
    {"role": "user", "content": "where is A-1?"}])
print(reply.choices[0].message.content)
"""

EARLY_EXIT = """
import os
import openwop_cli as wop

@wop.tool
def lookup(order):
    return {"order": order}

for index in range(3):
    lookup(f"A-{index}")
config = os.environ["AGENT_CONFIG"]
for index in range(5):
    lookup(f"B-{index}-{config}")
"""


def write(tmp_path: Path, script: str, name: str = "agent.py") -> Path:
    program = tmp_path / name
    program.write_text(textwrap.dedent(script))
    return program


def capture(tmp_path: Path, script: str, env: dict | None = None, out: str = "source") -> Path:
    program = write(tmp_path, script)
    done = run_wop("capture", "--out", str(tmp_path / out), "--", sys.executable, str(program), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / out


def test_an_openai_sdk_program_replays_with_no_api_key_set(tmp_path, wop_home):
    with FakeProvider() as provider:
        source = capture(tmp_path, SDK_AGENT, env={"BASE": provider.url, "OPENAI_API_KEY": "sk-test-real-0123456789"})
    done = run_wop("replay", str(source), env={"BASE": provider.url, "OPENAI_API_KEY": None}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer to where is A-1?" in done.stdout
    written = b"".join(path.read_bytes() for path in [*source.rglob("*"), *wop_home.rglob("*")] if path.is_file())
    assert b"wop-replay-placeholder" not in written and b"sk-test-real-0123456789" not in written
    assert b"OPENAI_API_KEY" not in b"".join(path.read_bytes() for path in wop_home.rglob("events.jsonl"))


def test_without_a_key_the_sdk_still_refuses_outside_a_replay(tmp_path):
    program = write(tmp_path, SDK_AGENT)
    done = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, str(program),
                   env={"BASE": "http://127.0.0.1:9", "OPENAI_API_KEY": None}, cwd=tmp_path)
    assert done.returncode == 1 and "OPENAI_API_KEY" in done.stderr


def test_an_early_exit_leads_the_report_with_the_exit_code_and_the_stderr_tail(tmp_path):
    source = capture(tmp_path, EARLY_EXIT, env={"AGENT_CONFIG": "x"})
    done = run_wop("replay", str(source), env={"AGENT_CONFIG": None}, cwd=tmp_path)
    assert done.returncode == 1
    report = done.stdout.splitlines()
    assert report[0].startswith("the program exited with code 1 before making 5 recorded calls")
    assert "KeyError: 'AGENT_CONFIG'" in "\n".join(report[1:12])
    assert "5 recorded calls never made (event_missing), the first at seq 7" in done.stdout
    assert done.stdout.count("event_missing") == 1 and "╭" not in done.stdout

    as_json = orjson.loads(run_wop("replay", str(source), "--json", env={"AGENT_CONFIG": None}, cwd=tmp_path).stdout)
    early = as_json["earlyExit"]
    assert early["exitCode"] == 1 and early["missingCalls"] == 5 and early["firstMissingSeq"] == 7
    assert any("KeyError: 'AGENT_CONFIG'" in line for line in early["stderrTail"])
    assert [d["code"] for d in as_json["divergences"]].count("event_missing") == 5


def test_a_strict_stop_shortens_the_programs_traceback_and_the_report_says_who_stopped_it(tmp_path):
    with FakeProvider() as provider:
        env = {"BASE": provider.url, "OPENAI_API_KEY": "sk-test-0123456789abcdef"}
        source = capture(tmp_path, SDK_AGENT, env=env)
        changed = {**env, "PROMPT": "Be warm."}
        short = run_wop("replay", str(source), env=changed, cwd=tmp_path)
        full = run_wop("replay", str(source), "--verbose", env=changed, cwd=tmp_path)
    assert short.returncode == full.returncode == 1
    assert "Traceback (most recent call last)" not in short.stderr
    assert "wop: the replay stopped the program here; it ended with BadRequestError" in short.stderr
    assert re.search(r"the strict replay stopped the program at seq \d+ \(event_payload_mismatch\)", short.stdout)
    assert short.stdout.rstrip().splitlines()[-1].startswith("1 divergence")
    assert "Traceback (most recent call last)" in full.stderr


def test_an_allowed_tool_runs_live_beside_its_recording_and_is_not_unexpected(tmp_path):
    examples = ROOT / "examples"
    source = tmp_path / "support"
    assert run_wop("capture", "--out", str(source), "--", sys.executable, str(examples / "support_agent.py"),
                   cwd=tmp_path).returncode == 0
    done = run_wop("replay", str(source), "--lenient", "--json", "--allow-tool", "loyalty_tier", "--allow-tool",
                   "send_reply", "--", sys.executable, str(examples / "support_agent_changed.py"), cwd=tmp_path)
    report = orjson.loads(done.stdout)
    assert "event_unexpected" not in [d["code"] for d in report["divergences"]]
    notes = {note["detail"].split(":")[0]: note for note in report["notes"]}
    assert notes["--allow-tool loyalty_tier"]["eventSeq"] is None
    assert "the capture has no such call" in notes["--allow-tool loyalty_tier"]["detail"]
    assert notes["--allow-tool send_reply"]["eventSeq"] is not None
    sent = notes["--allow-tool send_reply"]
    assert sent["recorded"] == sent["observed"] and sent["observed"]["sent"] is True
    assert "returned the same result as the recording" in sent["detail"]
    assert "--allow-tool loyalty_tier runs it" not in done.stdout


def test_a_fork_of_a_program_that_fails_to_start_says_so(tmp_path):
    source = capture(tmp_path, EARLY_EXIT, env={"AGENT_CONFIG": "x"})
    done = run_wop("fork", str(source), "--from-seq", "10", env={"AGENT_CONFIG": None}, cwd=tmp_path)
    assert done.returncode == 1
    assert "replayed exactly" not in done.stdout
    assert "the program exited with code 1 before reaching the branch point at seq 10" in done.stdout


def test_a_fork_whose_live_part_fails_names_the_failure(tmp_path):
    source = capture(tmp_path, EARLY_EXIT, env={"AGENT_CONFIG": "x"})
    done = run_wop("fork", str(source), "--from-seq", "4", env={"AGENT_CONFIG": None}, cwd=tmp_path)
    assert done.returncode == 1
    assert "the history before seq 4 replayed exactly; the live run after it failed: KeyError" in done.stdout


def test_two_captures_of_one_script_are_told_apart_in_the_summary_table(tmp_path):
    first = capture(tmp_path, EARLY_EXIT, env={"AGENT_CONFIG": "x"}, out="runs/first")
    second = capture(tmp_path, EARLY_EXIT, env={"AGENT_CONFIG": "x"}, out="runs/second")
    done = run_wop("replay", str(tmp_path / "runs"), env={"AGENT_CONFIG": "x"}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    ids = [orjson.loads((path / "manifest.json").read_bytes())["captureId"] for path in (first, second)]
    rows = [line for line in done.stdout.splitlines() if line.lstrip().startswith("agent")]
    assert len(rows) == 2
    for row, capture_id, path in zip(rows, ids, (first, second)):
        assert capture_id in row and str(path.relative_to(tmp_path)) in row
