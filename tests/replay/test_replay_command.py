"""`wop replay` and `wop fork` end to end: real programs, a real fake provider on 127.0.0.1, real captures.

The four acceptance scenarios of capture-replay-design.md are in tests/conformance."""

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conformance.runs import AGENT
from tests.conftest import ROOT, run_wop
from tests.fake_provider import FakeProvider


def write_program(tmp_path: Path, script: str) -> Path:
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(script))
    return program


def capture(tmp_path: Path, script: str = AGENT, env: dict | None = None) -> Path:
    program = write_program(tmp_path, script)
    out = tmp_path / "source"
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(program), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return out


def replay(tmp_path: Path, source: Path, *options: str, env: dict | None = None, name: str = "replay"):
    """Run `wop replay --json` and return (process, report)."""
    out = tmp_path / name
    done = run_wop("replay", str(source), "--json", "--out", str(out), *options, env=env, cwd=tmp_path)
    report = orjson.loads(done.stdout) if done.stdout.strip().startswith("{") else None
    return done, report


def test_the_same_values_come_back_in_a_replay(tmp_path):
    source = capture(tmp_path, """
        import openwop_cli as wop
        print(wop.now().isoformat(), wop.time(), wop.random(), wop.randint(1, 10**9), wop.uuid4(), wop.version("v2", 1, 2))
    """)
    recorded = [e["data"] for e in CaptureReader(source) if e["type"] == "nondeterministic"]
    done, report = replay(tmp_path, source)
    assert done.returncode == 0 and report["score"]["score"] == 1.0
    printed = done.stderr.splitlines()[0].split()
    assert printed[:5] == [str(value["value"]) for value in recorded[:5]]
    assert printed[5] == "2"


def test_the_example_replays_strictly_with_score_one_and_a_prompt_change_is_located(tmp_path):
    example = ROOT / "examples" / "support_agent.py"
    source = tmp_path / "source"
    assert run_wop("capture", "--out", str(source), "--", sys.executable, str(example), cwd=tmp_path).returncode == 0
    done, report = replay(tmp_path, source, name="same")
    assert done.returncode == 0 and report["score"]["score"] == 1.0, done.stderr
    strict, report = replay(tmp_path, source, "--", sys.executable, str(example), "--warm", name="warm")
    assert strict.returncode == 1
    assert [(d["code"], d["eventSeq"], d["jsonPath"]) for d in report["divergences"]] == [
        ("event_payload_mismatch", 6, "$.messages[0].content")]
    changed = ROOT / "examples" / "support_agent_changed.py"
    lenient, report = replay(tmp_path, source, "--lenient", "--allow-tool", "loyalty_tier", "--",
                             sys.executable, str(changed), name="changed")
    assert lenient.returncode == 1
    codes = [(d["code"], d.get("eventSeq")) for d in report["divergences"]]
    assert codes == [("event_payload_mismatch", 6)]
    assert [note["code"] for note in report["notes"]] == ["tool_ran_live"]
    human = run_wop("replay", str(source), "--out", str(tmp_path / "human"), "--", sys.executable, str(example),
                    "--warm", cwd=tmp_path)
    assert human.returncode == 1
    assert "$.messages[0].content" in human.stdout and "Be warm." in human.stdout and "seq 6" in human.stdout


CONCURRENT = (Path(__file__).resolve().parent.parent / "runtime" / "test_capture_command.py").read_text()
CONCURRENT = CONCURRENT[CONCURRENT.index('CONCURRENT = """') + 16: CONCURRENT.index('"""', CONCURRENT.index('CONCURRENT = """') + 16)]


def test_threads_and_tasks_replay_strictly_run_after_run(tmp_path):
    source = capture(tmp_path, CONCURRENT)
    for attempt in range(5):
        done, report = replay(tmp_path, source, "--strict", name=f"r{attempt}")
        assert done.returncode == 0, (attempt, report and report["divergences"][:3], done.stderr[-2000:])
        assert report["score"]["score"] == 1.0


SEQUENTIAL = """
    import os
    import openwop_cli as wop

    @wop.tool
    def step(name):
        return name.upper()

    order = ["a", "b"] if not os.environ.get("SWAP") else ["b", "a"]
    print([step(name) for name in order])
"""


def test_swapped_sequential_calls_fail_strict_and_are_reported_by_lenient(tmp_path):
    source = capture(tmp_path, SEQUENTIAL)
    strict, report = replay(tmp_path, source, "--strict", env={"SWAP": "1"}, name="strict")
    assert strict.returncode == 1
    assert "out of order" in report["divergences"][0]["detail"]
    lenient, report = replay(tmp_path, source, "--lenient", env={"SWAP": "1"}, name="lenient")
    assert lenient.returncode == 1 and report["replay"]["exitCode"] == 0
    assert "['B', 'A']" in lenient.stderr
    assert any("out of order" in d["detail"] for d in report["divergences"])


def test_a_recorded_tool_error_is_raised_again_as_its_own_type(tmp_path):
    source = capture(tmp_path, """
        import openwop_cli as wop

        @wop.tool
        def charge(amount):
            raise PermissionError(f"card declined for {amount}")

        try:
            charge(12)
        except PermissionError as exc:
            print("caught", type(exc).__name__, exc)
    """)
    done, report = replay(tmp_path, source)
    assert done.returncode == 0, done.stderr
    assert "caught PermissionError card declined for 12" in done.stderr


def test_a_call_the_program_no_longer_makes_is_event_missing(tmp_path):
    source = capture(tmp_path, """
        import os
        import openwop_cli as wop

        @wop.tool
        def notify(who):
            return True

        notify("ops")
        if not os.environ.get("SKIP"):
            notify("customer")
    """)
    done, report = replay(tmp_path, source, env={"SKIP": "1"})
    assert done.returncode == 1
    assert [(d["code"], d["eventSeq"]) for d in report["divergences"]] == [("event_missing", 3)]


def test_network_is_blocked_during_replay_with_the_host_and_port_named(tmp_path):
    script = """
        import os, socket
        import openwop_cli as wop
        wop.random()
        host, port = os.environ["PROVIDER_URL"].removeprefix("http://").split(":")
        if os.environ.get("CONNECT"):
            try:
                socket.create_connection((host, int(port)), timeout=5).sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
                print("REACHED THE NETWORK")
            except Exception as exc:
                print("blocked:", exc)
    """
    with FakeProvider() as provider:
        source = capture(tmp_path, script, env={"PROVIDER_URL": provider.url})
        done, report = replay(tmp_path, source, env={"PROVIDER_URL": provider.url, "CONNECT": "1"})
        port = provider.url.rsplit(":", 1)[1]
        assert provider.requests == []
    assert "REACHED THE NETWORK" not in done.stderr
    assert f"127.0.0.1:{port}" in done.stderr and "not in the capture" in done.stderr
    divergence = report["divergences"][0]
    assert divergence["code"] == "replay_network_blocked" and divergence.get("eventSeq") is None
    blocked = divergence["observedValue"]
    assert blocked["port"] == int(port) and blocked["site"]["file"] == "agent.py"
    assert "no call there to serve" in divergence["detail"]


@pytest.mark.parametrize("damage", ["truncate", "edit", "incomplete", "nan-in-manifest", "utf16-manifest"])
def test_a_corrupt_or_incomplete_capture_is_exit_3_and_never_modified(tmp_path, damage):
    """Also a manifest that Python's json reads but wop's reader refuses (NaN, UTF-16): the replay starts the program
    from json's reading of it before it loads orjson, and that start must come to nothing."""
    source = capture(tmp_path, SEQUENTIAL)
    events = source / "events.jsonl"
    manifest_file = source / "manifest.json"
    if damage == "truncate":
        events.write_bytes(events.read_bytes()[:-7])
    elif damage == "edit":
        events.write_bytes(events.read_bytes().replace(b'"A"', b'"Z"'))
    elif damage == "nan-in-manifest":
        manifest_file.write_bytes(manifest_file.read_bytes().rstrip()[:-1] + b', "extra": NaN}')
    elif damage == "utf16-manifest":
        manifest_file.write_bytes(manifest_file.read_bytes().decode().encode("utf-16"))
    else:
        manifest = orjson.loads((source / "manifest.json").read_bytes())
        manifest["status"] = "incomplete"
        (source / "manifest.json").write_bytes(orjson.dumps(manifest))
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.rglob("*") if p.is_file()}
    temporary = tmp_path / "tmp"  # where the replay's channel would stay if its early-started program were not ended
    temporary.mkdir()
    done = run_wop("replay", str(source), "--out", str(tmp_path / "r"), cwd=tmp_path, env={"TMPDIR": str(temporary)})
    assert done.returncode == 3, done.stderr
    said = "manifest.json is not valid JSON" if "manifest" in damage else "cannot replay"
    assert said in done.stderr and "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert "['A', 'B']" not in done.stdout  # the program never ran
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "r").exists()
    assert list(temporary.iterdir()) == []


def test_fork_serves_history_then_runs_live_with_overrides(tmp_path):
    with FakeProvider() as provider:
        source = capture(tmp_path, env={"PROVIDER_URL": provider.url})
        (tmp_path / "tool-ran.txt").unlink()
        llm_seq = next(e["seq"] for e in CaptureReader(source) if e["type"] == "llm_request")
        tool_seq = next(e["seq"] for e in CaptureReader(source) if e["type"] == "tool_call")
        before = len(provider.requests)
        provider.prefix = "LIVE"
        done = run_wop("fork", str(source), "--from-seq", str(tool_seq), "--set", "pick=7", "--json",
                       "--out", str(tmp_path / "fork"), env={"PROVIDER_URL": provider.url}, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert len(provider.requests) == before, "the LLM call before the branch point must be served"
    report = orjson.loads(done.stdout)
    assert report["mode"] == "branch" and report["fromSeq"] == tool_seq and not report["diverged"]
    assert (tmp_path / "tool-ran.txt").read_text() == "A-1\n", "the tool after the branch point runs live"
    assert "| pick: 7 |" in done.stderr and "answer: answer to" in done.stderr
    forked = Path(report["replay"]["path"])
    manifest = orjson.loads((forked / "manifest.json").read_bytes())
    assert manifest["mode"] == "fork" and manifest["source"]["fromSeq"] == tool_seq
    assert llm_seq < tool_seq


def test_fork_with_a_live_refusal_reports_a_refusal_divergence(tmp_path):
    with FakeProvider() as provider:
        source = capture(tmp_path, env={"PROVIDER_URL": provider.url})
    with FakeProvider(refuse=True) as refusing:
        done = run_wop("fork", str(source), "--from-seq", "1", "--json", "--out", str(tmp_path / "fork"),
                       env={"PROVIDER_URL": refusing.url}, cwd=tmp_path)
    report = orjson.loads(done.stdout)
    assert done.returncode == 1
    refusal = [d for d in report["divergences"] if d["code"] == "replay_diverged_at_refusal"]
    assert refusal and (refusal[0]["expectedValue"], refusal[0]["observedValue"]) == ("valid", "refusal")


@pytest.mark.parametrize("args, message", [
    (("fork", "SOURCE"), "fork needs --from-seq"),
    (("fork", "SOURCE", "--from-seq", "999"), "out of range: this capture has seq 0.."),
    (("replay", "SOURCE", "--from-seq", "-1"), "out of range"),
    (("fork", "SOURCE", "--from-seq", "1", "--set", "novalue"), "expected KEY=VALUE"),
    (("replay", "no-such-capture"), "no capture"),
])
def test_bad_replay_and_fork_input_is_exit_2(tmp_path, args, message):
    source = capture(tmp_path, SEQUENTIAL)
    done = run_wop(*[str(source) if arg == "SOURCE" else arg for arg in args], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


STATEFUL = """
    import os
    import openwop_cli as wop

    wop.state.declare("recent", "append", max_size=int(os.environ.get("KEEP", "2")))
    for item in ["a", "b", "c"]:
        wop.state.write("recent", item)
    print(wop.state.get("recent"))
"""


def test_a_state_that_differs_with_equal_write_inputs_is_a_divergence_at_the_channel(tmp_path):
    source = capture(tmp_path, STATEFUL)
    same, report = replay(tmp_path, source, name="same")
    assert same.returncode == 0 and report["score"]["score"] == 1.0, same.stderr
    done, report = replay(tmp_path, source, "--lenient", env={"KEEP": "3"}, name="changed")
    assert done.returncode == 1
    divergence = report["divergences"][0]
    assert divergence["code"] == "event_payload_mismatch" and divergence["eventType"] == "state_mutation"
    assert divergence["jsonPath"].startswith("$.channels.recent")
    writes = [e["seq"] for e in CaptureReader(source) if e["type"] == "state_mutation" and e["data"]["kind"] == "channel"]
    assert divergence["eventSeq"] == writes[2]


def test_a_directory_of_captures_replays_with_junit_and_github_annotations(tmp_path):
    import xml.etree.ElementTree as ET

    captures = tmp_path / "captures"
    for name in ("one", "two"):
        program = write_program(tmp_path, SEQUENTIAL)
        assert run_wop("capture", "--name", name, "--out", str(captures / name), "--", sys.executable,
                       str(program), cwd=tmp_path).returncode == 0
    junit = tmp_path / "out" / "replay.xml"
    done = run_wop("replay", str(captures), "--junit", str(junit), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 captures" in done.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    assert [case.get("name") for case in suite.iter("testcase")] == ["one", "two"]

    failing = run_wop("replay", str(captures), "--junit", str(junit), env={"SWAP": "1", "GITHUB_ACTIONS": "true"},
                      cwd=tmp_path)
    assert failing.returncode == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "2"
    failures = [case.find("failure") for case in suite.iter("testcase")]
    assert all(f is not None and f.get("type") == "event_payload_mismatch" for f in failures)
    annotations = [line for line in failing.stdout.splitlines() if line.startswith("::error title=wop replay: ")]
    assert len(annotations) == 2 and "out of order" in annotations[0]


def test_replay_policy_comes_from_tool_wop_when_no_flag_is_given(tmp_path):
    source = capture(tmp_path, SEQUENTIAL)
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\npolicy = "lenient"\n')
    done, report = replay(tmp_path, source, env={"SWAP": "1"})
    assert report["policy"] == "lenient" and report["replay"]["exitCode"] == 0
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\npolicy = "sloppy"\n')
    bad = run_wop("replay", str(source), cwd=tmp_path)
    assert bad.returncode == 2 and "[tool.wop] policy" in bad.stderr


def test_a_program_started_before_the_settings_were_read_is_told_them_with_its_go(tmp_path):
    # `wop replay` starts the program's interpreter before it reads [tool.wop]: the policy and the telemetry hosts it
    # sets reach the program, and the Pythons it starts, with its go.
    source = capture(tmp_path, "print('ran')\n")
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\npolicy = "lenient"\ntelemetry = ["metrics.example.com"]\n')
    told = "import os; print(os.environ['WOP_POLICY'], os.environ['WOP_TELEMETRY_HOSTS'])"
    program = write_program(tmp_path, f"""
        import subprocess, sys
        {told}
        subprocess.run([sys.executable, "-c", {told!r}])
    """)
    done = run_wop("replay", str(source), "--out", str(tmp_path / "again"), "--", sys.executable, str(program),
                   cwd=tmp_path)
    assert done.stdout.split()[:4] == ["lenient", "metrics.example.com"] * 2, done.stdout + done.stderr


def test_a_ctrl_c_while_the_replay_starts_its_program_leaves_no_channel_behind(tmp_path):
    """wop replay starts its program before it reads the capture: a Ctrl-C (SIGINT to wop's process group) just as
    that program is being started must leave no channel directory in TMPDIR and no process, whenever it lands."""
    source = capture(tmp_path, "print('ran')\n")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(temporary)}
    for attempt in range(20):
        wop = subprocess.Popen([sys.executable, "-m", "openwop_cli", "replay", str(source), "--out",
                                str(tmp_path / f"r{attempt}")], env=env, cwd=tmp_path, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        children = Path(f"/proc/{wop.pid}/task/{wop.pid}/children")
        while wop.poll() is None and not children.read_text().split():
            pass  # the moment wop forks its program
        os.killpg(wop.pid, signal.SIGINT)
        wop.wait(timeout=60)
        assert list(temporary.iterdir()) == [], f"attempt {attempt}"


def test_a_command_without_a_capture_is_a_usage_error(tmp_path):
    done = run_wop("replay", "--", sys.executable, "-c", "print('ran')", cwd=tmp_path)
    assert done.returncode == 2 and "ran" not in done.stdout
    assert "give the capture to replay" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_capture_whose_manifest_is_not_a_regular_file_is_one_line_and_exit_3(tmp_path, kind):
    source = capture(tmp_path, "print('ran')\n")
    manifest = source / "manifest.json"
    manifest.unlink()
    os.mkfifo(manifest) if kind == "fifo" else manifest.mkdir()
    done = run_wop("replay", str(source), cwd=tmp_path)
    assert done.returncode == 3 and "ran" not in done.stdout and "captures" not in done.stdout
    assert "not a regular file" in done.stderr and len(done.stderr.splitlines()) == 1


OVERRIDABLE = """
    from pathlib import Path
    import openwop_cli as wop

    Path("ran.txt").write_text("yes")
    print("greeting", wop.randint(0, 2, key="greeting"), "name", wop.nondeterministic("user", "name", lambda: "Ada"),
          "big", wop.randint(2**70, 2**71, key="big"), "at", wop.now().isoformat(), "v", wop.version("prompt", 1, 2))
"""


@pytest.mark.parametrize("override, message", [
    ("nokey=1", "--set nokey=1: the capture recorded no value under the key 'nokey'; "
                "its keys: big, greeting, name, now, prompt"),
    ("greeting=abc", "--set greeting=abc: greeting was recorded at seq 1 as an integer ("),
    ("greeting=1.5", "not a number; give an integer, e.g. --set greeting="),
    ("now=tomorrow", "--set now=tomorrow: now was recorded at seq 4 as a time ("),
    ("prompt=7", "--set prompt=7: prompt was recorded at seq 5 as a wop.version choice (2); give an integer in 1..2"),
])
def test_a_fork_set_the_capture_cannot_take_is_one_line_and_exit_2_before_the_program_runs(tmp_path, override,
                                                                                             message):
    source = capture(tmp_path, OVERRIDABLE)
    (tmp_path / "ran.txt").unlink()
    done = run_wop("fork", str(source), "--from-seq", "1", "--set", override, "--out", str(tmp_path / "fork"),
                   cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "ran.txt").exists() and not (tmp_path / "fork").exists()


def test_a_fork_set_is_read_as_the_capture_recorded_its_key(tmp_path):
    """Text where text was recorded (123 is the text "123"), an exact integer beyond 64 bits, a time, a version."""
    source = capture(tmp_path, OVERRIDABLE)
    done = run_wop("fork", str(source), "--from-seq", "1", "--set", "greeting=2", "--set", "name=123",
                   "--set", f"big={2**70 + 1}", "--set", "now=2030-01-02T03:04:05+00:00", "--set", "prompt=1",
                   "--json", "--out", str(tmp_path / "fork"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"greeting 2 name 123 big {2**70 + 1} at 2030-01-02T03:04:05+00:00 v 1" in done.stderr
    values = {e["data"]["key"]: e["data"]["value"] for e in CaptureReader(tmp_path / "fork")
              if e["type"] == "nondeterministic"}
    assert values["name"] == "123" and values["big"] == {"$bigint": str(2**70 + 1)}


NEVER_RETURNED = """
import os, sys, threading, time
import openai
import openwop_cli as wop

@wop.tool
def wait_for_approval(order):
    open(os.environ["ASKED"], "w").close()
    threading.Event().wait()

def ask():
    client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-0123456789abcdef", max_retries=0)
    try:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Where is A-1?"}])
        print("> answered", flush=True)
    except Exception as exc:
        print(">", type(exc).__name__, flush=True)
    done.set()

def approve():
    try:
        wait_for_approval("A-1")
    except Exception as exc:
        print(">", type(exc).__name__, flush=True)
    done.set()

done = threading.Event()
threading.Thread(target=ask if sys.argv[1:] == ["llm"] else approve, daemon=True).start()
for _ in range(300):  # until the call is under way (the file stays: a replay's goes on to wait for the call)
    if os.path.exists(os.environ["ASKED"]):
        break
    time.sleep(0.05)
done.wait(float(os.environ["WAIT"]))  # for an answer to a call that is under way
print("> gave up waiting", flush=True)
"""


@pytest.mark.parametrize("call", ["llm", "tool"])
def test_a_recorded_call_that_never_returned_is_a_reported_divergence(tmp_path, call):
    """A daemon thread's call (an LLM call to a server that never answers; a tool that waits forever) was still
    running when the program ended: the capture has its request and no answer. Before, the replay answered it with
    wop's error at once (the SDK's BadRequestError for wop's HTTP 400; ReplayDivergenceError from the tool), the
    program printed a line it never printed, and the strict replay said score 1.00, "replays exactly", exit 0."""
    import http.server
    import threading

    class Silent(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            open(env["ASKED"], "w").close()
            release.wait(30)

        def log_message(self, *args):
            pass

    release = threading.Event()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"BASE": f"http://127.0.0.1:{server.server_address[1]}", "ASKED": str(tmp_path / "asked")}
    try:
        program = write_program(tmp_path, NEVER_RETURNED)
        # the server or the tool has the call, which never returns: the capture need not wait for its answer long
        done = run_wop("capture", "--out", str(tmp_path / "source"), "--", sys.executable, str(program), call,
                       env={**env, "WAIT": "0.1"}, cwd=tmp_path)
    finally:
        release.set()
        server.shutdown()
        server.server_close()
    assert done.returncode == 0 and done.stdout.splitlines() == ["> gave up waiting"], done.stderr
    recorded = [event["type"] for event in CaptureReader(tmp_path / "source")]
    request_type = "llm_request" if call == "llm" else "tool_call"
    assert request_type in recorded and ("llm_response" if call == "llm" else "tool_result") not in recorded
    seq = recorded.index(request_type)
    # time for a replay that answered the call at once, with wop's error, to print that
    replayed, report = replay(tmp_path, tmp_path / "source", "--strict", env={**env, "WAIT": "3"})
    assert replayed.returncode == 1, replayed.stderr
    assert report["diverged"] is True and report["score"]["score"] < 1.0
    first = report["divergences"][0]
    assert first["code"] == "event_missing" and first["eventSeq"] == seq, first
    assert "never returned" in first["detail"], first
