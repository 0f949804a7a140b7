"""`wop capture -- CMD` end to end: real child processes, real captures, read back with the real reader."""

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import ROOT, run_wop, start_capture, wait_for_events

EXAMPLE = ROOT / "examples" / "support_agent.py"


def capture(tmp_path: Path, script: str, *args: str, env: dict | None = None, options: tuple = ()) -> tuple:
    """Write script to a file, run it under `wop capture --out`, return (completed process, capture dir)."""
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(script))
    out = tmp_path / "capture"
    done = run_wop("capture", "--out", str(out), *options, "--", sys.executable, str(program), *args,
                   env=env, cwd=tmp_path)
    return done, out


def events_of(capture_dir: Path) -> list[dict]:
    return list(CaptureReader(capture_dir))


def manifest_of(capture_dir: Path) -> dict:
    return orjson.loads((capture_dir / "manifest.json").read_bytes())


def test_the_example_agent_is_captured_with_every_kind_of_event_in_order(tmp_path):
    out = tmp_path / "agent"
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(EXAMPLE), "A-1001")
    assert done.returncode == 0, done.stderr
    assert "[A-1001]" in done.stdout and "has shipped" in done.stdout
    assert f"{out}" in done.stderr.splitlines()[-1] and "12 events" in done.stderr and " ok" in done.stderr
    assert run_wop("verify", str(out)).returncode == 0
    types = [event["type"] for event in events_of(out)]
    assert types == ["run_start", "nondeterministic", "tool_call", "tool_result", "state_mutation", "nondeterministic",
                     "llm_request", "llm_response", "tool_call", "tool_result", "state_mutation", "run_end"]
    shown = run_wop("show", str(out), "--type", "llm,tool,nd,state")
    assert shown.returncode == 0 and "lookup_order" in shown.stdout and "fake-gpt" in shown.stdout
    request = events_of(out)[6]["data"]
    assert request["provider"] == "openai" and len(request["cacheKey"]) == 64
    recipe_messages = [{"role": m["role"], "content": m["content"],
                        **({"toolCallId": m["tool_call_id"]} if "tool_call_id" in m else {})}
                       for m in request["request"]["messages"]]
    recipe = {"provider": "openai", "model": "fake-gpt", "messages": recipe_messages,
              "temperature": request["request"]["temperature"]}
    assert run_wop("cache-key", "-", input=orjson.dumps(recipe).decode()).stdout.strip() == request["cacheKey"]


def test_the_childs_exit_code_is_wops_and_a_failing_run_is_status_error(tmp_path):
    out = tmp_path / "agent"
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(EXAMPLE), "A-404")
    assert done.returncode == 1
    manifest = manifest_of(out)
    assert manifest["status"] == "error" and "exited with code 1" in manifest["error"]
    end = events_of(out)[-1]
    assert end["type"] == "run_end" and end["data"]["exitCode"] == 1
    failed = [e["data"] for e in events_of(out) if e["type"] == "tool_result"]
    assert failed == [{"callId": failed[0]["callId"], "ok": False,
                       "error": {"type": "KeyError", "module": "builtins", "message": "'no order A-404'",
                                 "args": ["no order A-404"], "repr": "KeyError('no order A-404')"}}]


def test_a_child_that_raises_records_the_exception_as_the_reason(tmp_path):
    done, out = capture(tmp_path, """
        import openwop_cli as wop
        wop.random()
        raise ValueError("the model said no")
    """)
    assert done.returncode == 1 and "ValueError: the model said no" in done.stderr
    manifest = manifest_of(out)
    assert manifest["status"] == "error"
    assert manifest["error"] == "ValueError: the model said no (exit code 1)"
    assert [e["type"] for e in events_of(out)] == ["run_start", "nondeterministic", "run_end"]


def test_sys_exit_3_passes_through_as_the_exit_code(tmp_path):
    done, out = capture(tmp_path, "import sys\nsys.exit(3)\n")
    assert done.returncode == 3
    assert manifest_of(out)["status"] == "error"
    assert events_of(out)[-1]["data"]["exitCode"] == 3


def test_a_child_interrupted_by_sigint_still_finalizes_with_what_it_recorded(tmp_path):
    done, out = capture(tmp_path, """
        import os, signal
        import openwop_cli as wop

        @wop.tool
        def step(n):
            return n * 2

        step(1)
        os.kill(os.getpid(), signal.SIGINT)
        step(2)
    """)
    assert done.returncode == 128 + signal.SIGINT
    manifest = manifest_of(out)
    assert manifest["status"] == "error" and manifest["error"] == "interrupted (SIGINT)"
    assert [e["type"] for e in events_of(out)] == ["run_start", "tool_call", "tool_result", "run_end"]
    assert run_wop("verify", str(out)).returncode == 0


COUNTS_ITS_SIGNALS = """
    import os, signal, sys, time
    read_end, write_end = os.pipe()  # the C-level handler writes a byte per delivery (Python's handler may run once)
    os.set_blocking(write_end, False)
    os.set_blocking(read_end, False)
    signal.set_wakeup_fd(write_end)
    signal.signal(getattr(signal, sys.argv[1]), lambda signum, _frame: None)
    for _ in range(int(sys.argv[2])):
        print("ready", os.getpid(), flush=True)
        received = b""
        for _ in range(30_000_000):  # on the CPU, not asleep: a signal is delivered at once, not merged with another
            try:
                received = os.read(read_end, 100)
                break
            except BlockingIOError:
                pass
        time.sleep(0.3)  # a second delivery would have come by now
        try:
            received += os.read(read_end, 100)
        except BlockingIOError:
            pass
        print(len(received), flush=True)
"""
ROUNDS = 5


def signals_received(wop: subprocess.Popen, send: Any) -> list[str]:
    """Send a signal ROUNDS times (send()) to a `wop capture` of COUNTS_ITS_SIGNALS; how many its program got each
    time."""
    counts, program = [], None
    try:
        for _ in range(ROUNDS):
            ready, program = wop.stdout.readline().split()
            assert ready == "ready"
            send()
            counts.append(wop.stdout.readline().strip())
        assert wop.wait(timeout=30) == 0
    except BaseException:
        if wop.poll() is None:
            os.killpg(wop.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, TypeError):  # the program, in a process group of its own, outlives wop's
            if "counts.py" in Path(f"/proc/{program}/cmdline").read_text(errors="replace"):
                os.kill(int(program), signal.SIGKILL)
        wop.wait()
        raise
    return counts


@pytest.mark.parametrize("sent_to", ["the process group", "wop capture"])
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_without_a_terminal_reaches_the_program_once_whether_sent_to_wop_or_its_process_group(
        tmp_path, sent_to, signame):
    """Ctrl-C in CI, a supervisor ending a job: no terminal, and the signal sent to wop's process group or to wop."""
    program = tmp_path / "counts.py"
    program.write_text(textwrap.dedent(COUNTS_ITS_SIGNALS))
    wop = start_capture(program, tmp_path / "c", signame, str(ROUNDS))
    kill = os.killpg if sent_to == "the process group" else os.kill
    assert signals_received(wop, lambda: kill(wop.pid, getattr(signal, signame))) == ["1"] * ROUNDS
    assert manifest_of(tmp_path / "c")["status"] == "ok"


def test_ctrl_c_at_a_terminal_reaches_the_program_once_even_with_stdin_elsewhere(tmp_path):
    """The terminal sends SIGINT to its foreground process group: wop's and its program's."""
    import fcntl
    import termios

    program = tmp_path / "counts.py"
    program.write_text(textwrap.dedent(COUNTS_ITS_SIGNALS))
    controller, terminal = os.openpty()
    wop = subprocess.Popen([sys.executable, "-m", "openwop_cli", "capture", "--out", str(tmp_path / "c"), "--",
                            sys.executable, str(program), "SIGINT", str(ROUNDS)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal, text=True,
                           start_new_session=True, preexec_fn=lambda: fcntl.ioctl(terminal, termios.TIOCSCTTY, 0))
    os.close(terminal)
    try:
        assert signals_received(wop, lambda: os.write(controller, b"\x03")) == ["1"] * ROUNDS
    finally:
        os.close(controller)


def test_a_child_killed_by_sigkill_leaves_a_valid_capture_saying_so(tmp_path):
    done, out = capture(tmp_path, """
        import os, signal
        import openwop_cli as wop
        wop.llm_call("openai", "m", {"messages": [{"role": "user", "content": "hi"}]}, lambda: {"content": "yo"})
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    assert done.returncode == 128 + signal.SIGKILL
    manifest = manifest_of(out)
    assert manifest["status"] == "error" and manifest["error"] == "killed by SIGKILL"
    assert [e["type"] for e in events_of(out)] == ["run_start", "llm_request", "llm_response", "run_end"]
    assert run_wop("verify", str(out)).returncode == 0


def test_killing_wop_itself_leaves_an_incomplete_capture_that_verify_explains(tmp_path):
    program = tmp_path / "slow.py"
    program.write_text("import time, openwop_cli as wop\n"
                       "wop.llm_call('openai', 'm', {'messages': []}, lambda: {'content': 'x'})\n"
                       "print('ready', flush=True)\ntime.sleep(60)\n")
    out = tmp_path / "capture"
    wop = start_capture(program, out)
    try:
        assert wop.stdout.readline().strip() == "ready"
        wait_for_events(out, 3, seconds=20)
    finally:
        os.killpg(wop.pid, signal.SIGKILL)
        wop.wait()
    assert manifest_of(out)["status"] == "incomplete"
    assert [e["type"] for e in events_of(out)] == ["run_start", "llm_request", "llm_response"]
    verified = run_wop("verify", str(out))
    assert verified.returncode == 3 and "never finalized" in verified.stdout + verified.stderr


CONCURRENT = """
    import asyncio, threading
    import openwop_cli as wop

    @wop.tool
    def work(worker, index):
        return {"worker": worker, "index": index}

    @wop.tool
    async def async_work(task, index):
        await asyncio.sleep(0)
        return {"task": task, "index": index}

    def chat(label):
        request = {"messages": [{"role": "user", "content": label}]}
        return wop.llm_call("openai", "m", request, lambda: {"content": "re " + label})

    def thread_body(worker):
        for index in range(25):
            work(worker, index)
            chat(f"thread {worker} {index}")

    async def task_body(task):
        for index in range(4):
            await async_work(task, index)
            await wop.llm_call("openai", "m", {"messages": [{"role": "user", "content": f"t{task}"}]},
                               lambda: asyncio.sleep(0, result={"content": "ok"}))

    async def tasks():
        await asyncio.gather(*(task_body(task) for task in range(50)))

    threads = [threading.Thread(target=thread_body, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    asyncio.run(tasks())
    for thread in threads:
        thread.join()
"""


def test_eight_threads_and_fifty_tasks_lose_nothing_and_every_result_pairs_with_its_call(tmp_path):
    done, out = capture(tmp_path, CONCURRENT)
    assert done.returncode == 0, done.stderr
    assert run_wop("verify", str(out)).returncode == 0
    events = events_of(out)
    assert [event["seq"] for event in events] == list(range(len(events)))
    counts = Counter(event["type"] for event in events)
    calls = 8 * 25 + 50 * 4
    assert counts["tool_call"] == counts["tool_result"] == calls
    assert counts["llm_request"] == counts["llm_response"] == calls
    for call_type, result_type in (("tool_call", "tool_result"), ("llm_request", "llm_response")):
        call_ids = [e["data"]["callId"] for e in events if e["type"] == call_type]
        result_ids = [e["data"]["callId"] for e in events if e["type"] == result_type]
        assert len(set(call_ids)) == calls and set(call_ids) == set(result_ids)
    by_call = {e["data"]["callId"]: e for e in events if e["type"] == "tool_call"}
    for result in (e for e in events if e["type"] == "tool_result"):
        call = by_call[result["data"]["callId"]]
        assert result["origin"] == {key: value for key, value in call["origin"].items() if key != "site"}
        assert result["data"]["result"]["index"] == call["data"]["args"]["index"]
    threads = {e["origin"]["thread"] for e in events if e["type"] == "tool_call" and "task" not in e["origin"]}
    tasks = {e["origin"]["task"] for e in events if e["type"] == "tool_call" and "task" in e["origin"]}
    assert len(threads) == 8 and len(tasks) == 50


def test_a_busy_program_never_writes_to_wop_itself_the_flusher_thread_sends_its_batches(tmp_path):
    done, out = capture(tmp_path, """
        import socket, threading
        import openwop_cli as wop

        senders = set()
        original = socket.socket.sendall

        def watched(self, data, *args):
            senders.add(threading.current_thread().name)
            return original(self, data, *args)

        socket.socket.sendall = watched

        @wop.tool
        def lookup(index):
            return {"index": index, "note": "x" * 300}

        for index in range(3000):  # ~2 MB of events: dozens of full batches
            lookup(index)
        print("MainThread" in senders)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"  # the batches went from the flusher thread (or wait for the exit)
    events = events_of(out)
    assert [event["data"]["result"]["index"] for event in events if event["type"] == "tool_result"] == list(range(3000))


def test_forked_multiprocessing_workers_lose_no_event_although_they_end_with_os_exit(tmp_path):
    done, out = capture(tmp_path, """
        import multiprocessing
        import openwop_cli as wop

        @wop.tool
        def step(worker, index):
            return {"worker": worker, "index": index}

        def work(worker):
            for index in range(500):
                step(worker, index)

        if __name__ == "__main__":
            multiprocessing.set_start_method("fork")
            workers = [multiprocessing.Process(target=work, args=(name,)) for name in ("a", "b")]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
    """)
    assert done.returncode == 0, done.stderr
    results = Counter(event["data"]["result"]["worker"] for event in events_of(out) if event["type"] == "tool_result")
    assert results == {"a": 500, "b": 500}


FORK_DURING_FIRST_READ = """
    import os, signal, sys, threading, time

    first_import, forked = threading.Event(), threading.Event()

    class HoldFirstImport:
        # holds the first import the reader thread makes (one wop makes for its first read) until the fork is done
        def find_spec(self, name, path=None, target=None):
            if threading.current_thread().name == "reader" and not first_import.is_set():
                first_import.set()
                forked.wait(1)
            return None

    def read_clock():
        time.time()

    sys.meta_path.insert(0, HoldFirstImport())
    reader = threading.Thread(target=read_clock, name="reader")
    reader.start()
    first_import.wait(5)
    pid = os.fork()
    if pid == 0:
        time.time()
        os._exit(0)
    forked.set()
    for _ in range(100):
        ended, status = os.waitpid(pid, os.WNOHANG)
        if ended:
            print("the forked process ended with", os.waitstatus_to_exitcode(status))
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print("the forked process hung")
    reader.join()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_fork_while_another_thread_makes_the_first_recorded_read_leaves_a_working_child(tmp_path):
    """The first read loads what events need (and, in a replay, the capture and the engine) under import locks and
    a lock of wop's: a fork meanwhile used to leave them taken in the child, which hung on its first read."""
    done, out = capture(tmp_path, FORK_DURING_FIRST_READ)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the forked process ended with 0"
    replayed = run_wop("replay", "--strict", str(out), "--out", str(tmp_path / "replay"), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.startswith("the forked process ended with 0\n")


def test_no_secret_from_the_environment_reaches_the_capture(tmp_path):
    secrets = {"OPENAI_API_KEY": "sk-test-0123456789abcdefghij", "MY_SERVICE_TOKEN": "tok-9f8e7d6c5b4a",
               "DB_PASSWORD": "hunter2-but-longer"}
    done, out = capture(tmp_path, """
        import os, sys
        import openwop_cli as wop

        @wop.tool
        def call_api(url, headers):
            return {"echo": headers, "env": dict(os.environ)}

        key = os.environ["OPENAI_API_KEY"]
        call_api("https://api.example.com", {"Authorization": "Bearer " + key, "X-Token": os.environ["MY_SERVICE_TOKEN"]})
        wop.llm_call("openai", "m", {"messages": [{"role": "user", "content": "my password is " + os.environ["DB_PASSWORD"]}]},
                     lambda: {"content": "noted " + os.environ["DB_PASSWORD"]})
        wop.nondeterministic("network", "token", lambda: os.environ["MY_SERVICE_TOKEN"])
        print("done")
    """, "--api-key", secrets["OPENAI_API_KEY"], env=secrets)
    assert done.returncode == 0, done.stderr
    everything = b"".join(path.read_bytes() for path in out.rglob("*") if path.is_file())
    for value in secrets.values():
        assert value.encode() not in everything, value
    assert b"OPENAI_API_KEY" in everything  # names are kept, values never


def test_grandchild_python_processes_are_recorded_without_corrupting_the_capture(tmp_path):
    done, out = capture(tmp_path, """
        import subprocess, sys
        import openwop_cli as wop
        wop.random(key="parent-before")
        children = [subprocess.Popen([sys.executable, "-c",
                    "import openwop_cli as wop\\nfor i in range(200): wop.random(key='child')"]) for _ in range(3)]
        for child in children:
            child.wait()
        wop.random(key="parent-after")
    """)
    assert done.returncode == 0, done.stderr
    assert run_wop("verify", str(out)).returncode == 0
    events = events_of(out)
    keys = [e["data"]["key"] for e in events if e["type"] == "nondeterministic"]
    assert keys[0] == "parent-before" and keys[-1] == "parent-after" and keys.count("child") == 600
    pids = {e["origin"]["pid"] for e in events if e["type"] == "nondeterministic"}
    assert len(pids) == 4
    assert len(manifest_of(out)["program"]["processes"]) == 4


def test_an_existing_sitecustomize_still_runs(tmp_path):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text("import os\nos.environ['CUSTOM_SITE_RAN'] = 'yes'\n")
    done, out = capture(tmp_path, """
        import os
        import openwop_cli as wop
        wop.nondeterministic("process", "custom-site", lambda: os.environ.get("CUSTOM_SITE_RAN"))
    """, env={"PYTHONPATH": str(site_dir)})
    assert done.returncode == 0, done.stderr
    recorded = [e["data"]["value"] for e in events_of(out) if e["type"] == "nondeterministic"]
    assert recorded == ["yes"]


def test_output_passes_through_unchanged(tmp_path):
    done, _ = capture(tmp_path, """
        import sys
        sys.stdout.write("line one\\nünïcödé ✓\\n")
        sys.stderr.write("to stderr\\n")
    """)
    assert done.stdout == "line one\nünïcödé ✓\n"
    assert done.stderr.startswith("to stderr\n")


def test_the_script_local_modules_and_workflow_are_pinned_by_sha256(tmp_path):
    (tmp_path / "helpers.py").write_text("VALUE = 41\n")
    workflow = tmp_path / "flow.json"
    workflow.write_text('{"name": "triage", "blocks": [{"id": "a"}]}')
    done, out = capture(tmp_path, "import helpers\nprint(helpers.VALUE + 1)\n", options=("--workflow", str(workflow)))
    assert done.returncode == 0, done.stderr
    program = manifest_of(out)["program"]
    script = tmp_path / "program.py"
    assert program["script"][0]["sha256"] == hashlib.sha256(script.read_bytes()).hexdigest()
    modules = {pin["path"]: pin for pin in program["modules"]}
    assert modules["helpers.py"]["sha256"] == hashlib.sha256(b"VALUE = 41\n").hexdigest()
    blob = out / "blobs" / "sha256" / modules["helpers.py"]["blob"]["$blob"][7:9] / modules["helpers.py"]["blob"]["$blob"][7:]
    assert blob.read_bytes() == b"VALUE = 41\n"
    assert program["workflow"]["sha256"] == hashlib.sha256(workflow.read_bytes()).hexdigest()
    assert program["python"] == sys.version.split()[0]


def test_a_program_that_does_not_import_wop_still_gets_run_start_and_run_end(tmp_path):
    done, out = capture(tmp_path, "print('plain')\n")
    assert done.returncode == 0
    events = events_of(out)
    assert [e["type"] for e in events] == ["run_start", "run_end"]
    assert events[0]["data"]["python"] == sys.version.split()[0]
    assert events[0]["data"]["argv"][1].endswith("program.py")


@pytest.mark.parametrize("args, message", [
    ((), "give the command to capture"),
    (("--", "no-such-command-wop"), "command not found"),
    (("--", "./missing.sh"), "no such file"),
    (("--redact", "paranoid", "--", "true"), "paranoid"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    done = run_wop("capture", "--out", str(tmp_path / "c"), *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "c" / "events.jsonl").exists()


def test_an_existing_capture_is_never_overwritten(tmp_path):
    first = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, "-c", "print(1)")
    assert first.returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "c").rglob("*") if p.is_file()}
    again = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, "-c", "print(2)")
    assert again.returncode == 2 and "already holds a capture" in again.stderr
    assert "2" not in again.stdout
    assert {p: p.read_bytes() for p in (tmp_path / "c").rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("kind", ["python", "env-shebang", "shell", "isolated-python"])
def test_a_command_never_runs_when_its_capture_cannot_be_made(tmp_path, kind):
    """wop's own Python starts while the capture is set up but waits for its go; any other command (a Python whose
    options skip the bootstrap, `-I`, among them) starts after."""
    existing = tmp_path / "c"
    assert run_wop("capture", "--out", str(existing), "--", sys.executable, "-c", "print(1)").returncode == 0
    marker = tmp_path / "ran"
    script = tmp_path / "program"
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if kind == "shell":
        command = ["sh", "-c", f"touch {marker}"]
    else:
        script.write_text(f"#!/usr/bin/env {Path(sys.executable).name}\nopen({str(marker)!r}, 'w').close()\n")
        script.chmod(0o755)
        command = {"python": [sys.executable, str(script)], "isolated-python": [sys.executable, "-I", str(script)],
                   "env-shebang": [str(script)]}[kind]
    done = run_wop("capture", "--out", str(existing), "--", *command, env=env)
    assert done.returncode == 2 and "already holds a capture" in done.stderr
    time.sleep(0.5)  # a child that was not stopped would have run by now
    assert not marker.exists()


@pytest.mark.parametrize("mode", ["capture", "replay"])
@pytest.mark.parametrize("parent", ["answers", "goes away", "is interrupted"])
def test_a_gated_child_runs_nothing_of_the_program_before_the_go_and_never_without_it(tmp_path, parent, mode):
    """The test is the parent: it holds the go back, then gives it, goes away without it, or is interrupted by Ctrl-C
    (which the terminal sends to the waiting child too: it ends of SIGINT, not of a fatal error in site). Neither the
    program nor the sitecustomize its environment brings runs before the go."""
    import socket

    from openwop_cli.host.launcher import BOOTSTRAP_DIR, PACKAGE_ROOT

    marker, site_marker = tmp_path / "ran", tmp_path / "site-ran"
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(f"open({str(site_marker)!r}, 'w').close()\n")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "sink"))
    listener.listen(2)
    env = {**os.environ, "WOP_MODE": mode, "WOP_SINK": f"unix:{tmp_path / 'sink'}", "WOP_GATE": "1",
           "WOP_PACKAGE_ROOT": str(PACKAGE_ROOT), "PYTHONPATH": f"{BOOTSTRAP_DIR}{os.pathsep}{tmp_path / 'site'}"}
    child = subprocess.Popen([sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"], env=env,
                             stderr=subprocess.PIPE, text=True)
    listener.settimeout(30)
    conn, _ = listener.accept()
    conn.settimeout(30)
    received = b""
    while b'"ready"' not in received:
        chunk = conn.recv(65536)
        assert chunk, f"the child never asked for its go; it sent {received!r}"
        received += chunk
    time.sleep(1.0)
    assert not marker.exists() and not site_marker.exists() and child.poll() is None
    if parent == "answers":
        conn.sendall(b"{}\n")
        if mode == "replay":  # the replayed process then says which process it is, on a connection of its own
            answer_replay_hello(listener)
    if parent == "is interrupted":
        child.send_signal(signal.SIGINT)
    else:
        conn.close()
    _, stderr = child.communicate(timeout=30)
    conn.close()
    assert marker.exists() == site_marker.exists() == (parent == "answers")
    assert child.returncode == {"answers": 0, "goes away": 3, "is interrupted": -signal.SIGINT}[parent], stderr
    assert parent != "goes away" or "went away before the program started" in stderr
    assert "Fatal Python error" not in stderr


def answer_replay_hello(listener) -> None:
    """Play `wop replay` for a replayed process's replayHello (it stands for no recorded process)."""
    conn, _ = listener.accept()
    conn.settimeout(30)
    received = b""
    while b"replayHello" not in received:
        received += conn.recv(65536)
    conn.sendall(b'{"recordedPid": null}\n')


def test_only_the_first_process_waits_for_the_capture_and_its_program_sees_no_trace_of_it(tmp_path):
    done, out = capture(tmp_path, """
        import os, subprocess, sys
        print("gate" in " ".join(os.environ).lower())
        subprocess.run([sys.executable, "-c", "import os, time; print('WOP_GATE' in os.environ); time.time()"])
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
    processes = manifest_of(out)["program"]["processes"]
    assert len(processes) == 2 and processes[0]["python"]


def test_a_program_started_before_its_settings_were_read_is_told_them_with_its_go(tmp_path, wop_home):
    # wop starts its own Python before it reads [tool.wop] and places the capture in the store: where the capture goes
    # and whether ambient values are recorded reach the program, and the Pythons it starts, with its go.
    (tmp_path / "pyproject.toml").write_text("[tool.wop]\nambient = false\n")
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent("""
        import os, subprocess, sys
        print(os.environ["WOP_CAPTURE_DIR"], os.environ["WOP_AMBIENT"], flush=True)
        subprocess.run([sys.executable, "-c", "import os; print(os.environ['WOP_AMBIENT'])"])
    """))
    done = run_wop("capture", "--json", "--", sys.executable, str(program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(done.stderr.splitlines()[-1])
    assert done.stdout.split() == [summary["path"], "0", "0"]
    assert Path(summary["path"]).parent == wop_home / "captures"


def test_only_wops_own_python_is_started_before_its_capture_is_ready(tmp_path, monkeypatch):
    """The interpreter wop runs in, in its environment, named or in a `#!` line: the runtime is known to load there.
    The same binary elsewhere (another virtual environment, or none) may lack what the runtime needs."""
    from openwop_cli.host.launcher import starts_own_python

    def script(name: str, first_line: str) -> str:
        path = tmp_path / name
        path.write_text(first_line + "\nprint(1)\n")
        return str(path)

    own = Path(sys.executable)
    monkeypatch.setenv("PATH", f"{own.parent}{os.pathsep}{os.environ['PATH']}")
    elsewhere = tmp_path / "bin" / own.name
    elsewhere.parent.mkdir()
    elsewhere.symlink_to(own.resolve())
    assert starts_own_python([str(own), "-c", "print(1)"])
    assert starts_own_python([own.name, "-V"])
    assert starts_own_python([script("a", f"#!/usr/bin/env {own.name}")])
    assert starts_own_python([script("c", f"#!{own}")])
    assert not starts_own_python([str(elsewhere), "-c", "print(1)"])
    assert not starts_own_python([script("i", f"#!{elsewhere}")])
    assert not starts_own_python([script("d", "#!/bin/sh")])
    assert not starts_own_python([script("e", "#!/usr/bin/env bash")])
    assert not starts_own_python([script("f", "print(1)")])
    assert not starts_own_python(["sh", "-c", f"{own} -c 1"])
    assert not starts_own_python([str(tmp_path / "missing")])
    for skips_the_bootstrap in (["-I", "-c", "1"], ["-E", "x.py"], ["-S", "x.py"], ["-uI", "x.py"], ["-X", "dev", "-I"]):
        assert not starts_own_python([str(own), *skips_the_bootstrap]), skips_the_bootstrap
    for runs_it in (["-u", "x.py"], ["-X", "importtime", "x.py"], ["-Wignore", "-c", "import sys; sys.exit(1)"],
                    ["-c", "-I"], ["-m", "pytest", "-I"], ["x.py", "-I"]):
        assert starts_own_python([str(own), *runs_it]), runs_it
    assert not starts_own_python([script("g", f"#!/usr/bin/env -S {own.name} -I")])
    assert starts_own_python([script("h", f"#!/usr/bin/env -S {own.name} -u")])


def test_a_long_tmpdir_still_gets_its_channel_a_unix_socket_path_that_fits(tmp_path):
    """A unix socket's path has at most 103 bytes everywhere; wop's is TMPDIR/wop-XXXXXXXX/sink."""
    long_tmpdir = tmp_path / ("t" * 120)
    long_tmpdir.mkdir()
    done, out = capture(tmp_path, "import time; time.time()", env={"TMPDIR": str(long_tmpdir)})
    assert done.returncode == 0, done.stderr
    assert [e["type"] for e in events_of(out)] == ["run_start", "nondeterministic", "run_end"]
    assert list(long_tmpdir.iterdir()) == []


def test_captures_go_to_the_store_and_are_found_by_name(tmp_path, wop_home):
    done = run_wop("capture", "--", sys.executable, str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    listed = run_wop("ls", "--json")
    assert "support_agent" in listed.stdout
    assert run_wop("show", "support_agent").returncode == 0


DISK_FULL = """
import resource, signal, subprocess, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000))
sys.exit(subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--out", sys.argv[1], "--",
                         sys.executable, sys.argv[2]]).returncode)
"""


def test_a_full_disk_warns_once_keeps_the_program_running_and_the_manifest_says_what_was_lost(tmp_path):
    program = tmp_path / "chatty.py"
    program.write_text("import openwop_cli as wop\n"
                       "for i in range(3000):\n    wop.nondeterministic('rng', 'pad', lambda: 'x' * 200)\n"
                       "print('program finished')\n")
    out = tmp_path / "capture"
    done = subprocess.run([sys.executable, "-c", DISK_FULL, str(out), str(program)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    assert "program finished" in done.stdout
    assert done.stderr.count("warning: capture writes") == 1
    manifest = manifest_of(out)
    assert manifest["status"] == "error" and manifest["lost"]["events"] > 0
    assert "events were not written" in manifest["error"]


def test_bootstrap_does_not_slow_a_plain_import_of_the_cli_package():
    code = "import sys, openwop_cli; print(sorted(m for m in sys.modules if m.startswith('openwop_cli')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['openwop_cli', 'openwop_cli._version']"


def test_reading_the_capture_while_the_program_runs_shows_the_incomplete_prefix(tmp_path):
    program = tmp_path / "slow.py"
    program.write_text("import time, openwop_cli as wop\nwop.llm_call('openai','m',{'messages':[]},lambda: {})\n"
                       "print('ready', flush=True)\ntime.sleep(30)\n")
    out = tmp_path / "capture"
    wop = start_capture(program, out)
    try:
        assert wop.stdout.readline().strip() == "ready"
        wait_for_events(out, 1, seconds=20)
        assert manifest_of(out)["status"] == "incomplete"
    finally:
        os.killpg(wop.pid, signal.SIGTERM)
        wop.wait(timeout=30)
    assert manifest_of(out)["status"] == "error"
    assert "SIGTERM" in manifest_of(out)["error"]


def test_the_closing_line_reads_the_same_printed_plain_and_coloured_and_replays_report_too(tmp_path):
    """Without a terminal the closing line and a clean replay's report are printed without rich; coloured
    (FORCE_COLOR), by rich: the same words either way."""
    import re

    def words(text: str) -> str:
        return re.sub(r"\x1b\[[0-9;]*m", "", text).replace(str(tmp_path), "TMP")

    outputs = []
    for index, colour in enumerate(({"FORCE_COLOR": None}, {"FORCE_COLOR": "1", "NO_COLOR": None})):
        out = tmp_path / f"run{index}"
        captured = run_wop("capture", "--out", str(out), "--", sys.executable, "-c", "print(1)", env=colour)
        replayed = run_wop("replay", "--strict", "--out", str(tmp_path / f"replay{index}"), str(out), env=colour)
        assert captured.returncode == 0 and replayed.returncode == 0, captured.stderr + replayed.stderr
        assert ("\x1b[" in captured.stderr + replayed.stdout) == (index == 1)
        manifest, replay_manifest = manifest_of(out), manifest_of(tmp_path / f"replay{index}")
        outputs.append(words(captured.stderr + replayed.stdout)
                       .replace(manifest["captureId"], "ID").replace(replay_manifest["captureId"], "RID")
                       .replace(f"run{index}", "RUN").replace(f"replay{index}", "REPLAY"))
    assert outputs[0] == outputs[1]
    assert "captured ID  TMP/RUN  2 events  ok" in outputs[0]
    assert "no divergence: the run replays exactly" in outputs[0]


def test_module_paths_resolve_as_realpath_does_through_symlinked_directories_files_and_dotdot(tmp_path, monkeypatch):
    """local_modules resolves each directory once; what it finds must be exactly what os.path.realpath says."""
    from openwop_cli.runtime.program import _real_path

    (tmp_path / "real" / "pkg").mkdir(parents=True)
    (tmp_path / "real" / "pkg" / "m.py").write_text("")
    (tmp_path / "elsewhere.py").write_text("")
    (tmp_path / "real" / "linked.py").symlink_to(tmp_path / "elsewhere.py")
    (tmp_path / "linkdir").symlink_to(tmp_path / "real" / "pkg")
    (tmp_path / "up").symlink_to(tmp_path / "real" / "pkg")  # `up/..` is real/, not tmp_path
    monkeypatch.chdir(tmp_path)
    paths = [str(tmp_path / "linkdir" / "m.py"), str(tmp_path / "real" / "pkg" / "m.py"),
             str(tmp_path / "real" / "linked.py"), str(tmp_path / "up" / ".." / "linked.py"),
             "linkdir/m.py", str(tmp_path / "real" / "." / "pkg" / "m.py")]
    resolved: dict[str, str] = {}
    assert [_real_path(path, resolved) for path in paths] == [os.path.realpath(path) for path in paths]


def test_llm_requests_in_any_python_shape_get_the_same_keys_in_capture_and_replay(tmp_path):
    done, out = capture(tmp_path, """
        from dataclasses import dataclass
        import openwop_cli as wop

        @dataclass
        class Message:
            role: str
            content: object

        shapes = [
            {"messages": ({"role": "user", "content": "a tuple of messages"},)},
            {"messages": [Message("user", "a dataclass message")]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"$bytes": "aGVsbG8="}]}]},
            {"messages": [{"role": "user", "content": b"raw bytes"}]},
        ]
        for request in shapes:
            print(wop.llm_call("openai", "gpt-4o", request, lambda: {"content": "ok"})["content"])
    """)
    assert done.returncode == 0, done.stderr
    assert "were left out" not in done.stderr
    requests = [event["data"] for event in events_of(out) if event["type"] == "llm_request"]
    assert len(requests) == 4 and all(len(request["cacheKey"]) == 64 for request in requests)
    for _ in range(2):
        replayed = run_wop("replay", "--strict", str(out), "--out", str(tmp_path / f"replay{_}"), cwd=tmp_path)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr


def test_a_divergence_in_a_pool_worker_ends_the_replay_instead_of_hanging_the_pool(tmp_path):
    done, out = capture(tmp_path, """
        import multiprocessing, os
        import openwop_cli as wop

        @wop.tool
        def lookup(order):
            return {"order": order}

        def work(_):
            return lookup(os.environ.get("ORDER", "A-1"))["order"]

        if __name__ == "__main__":
            with multiprocessing.get_context("fork").Pool(1) as pool:
                print(pool.map(work, [0]))
    """)
    assert done.returncode == 0, done.stderr
    replayed = run_wop("replay", "--strict", str(out), "--out", str(tmp_path / "replay"), cwd=tmp_path,
                       env={"ORDER": "B-2"})
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "the strict replay stopped the program" in replayed.stdout


def _scheduling_policies(pid: int) -> list[int]:
    """The scheduling policy of each of a process's threads (field 41 of /proc/PID/task/TID/stat; 5 is SCHED_IDLE)."""
    policies = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        with contextlib.suppress(OSError):
            policies.append(int(stat.read_text().rsplit(")", 1)[1].split()[38]))
    return policies


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SCHED_IDLE is Linux's")
def test_wop_captures_collector_runs_on_idle_cores_and_a_replays_does_not(tmp_path):
    """A capture's collector yields the cores to the program and the servers it talks to (at nice 10 it took the core
    a loopback server needed); a replay's answers the replayed program, which must not wait for it."""
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent("""
        import sys, time, uuid
        print(uuid.uuid4(), flush=True)
        sys.stdin.readline() if len(sys.argv) > 1 else time.sleep(0.5)
    """))
    capturing = start_capture(program, tmp_path / "c")
    try:
        assert capturing.stdout.readline()
        assert 5 in _scheduling_policies(capturing.pid)
    finally:
        os.killpg(capturing.pid, signal.SIGTERM)
        capturing.wait(timeout=60)
    done = run_wop("capture", "--out", str(tmp_path / "d"), "--", sys.executable, str(program))
    assert done.returncode == 0, done.stderr
    replaying = subprocess.Popen([sys.executable, "-m", "openwop_cli", "replay", str(tmp_path / "d")],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[int] = []
    try:
        while replaying.poll() is None:  # sampled while the program runs (its sleep), the collector serving it
            seen += _scheduling_policies(replaying.pid)
            time.sleep(0.02)
    finally:
        replaying.communicate(timeout=60)
    assert len(seen) > 10 and 5 not in seen


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pins processes to one core (Linux)")
def test_every_event_reaches_the_capture_when_the_collector_got_no_core_while_the_program_ran(tmp_path):
    """On a busy machine a collector at SCHED_IDLE may not run at all while the program does: a quick program can
    connect, send its events and end before the collector has accepted its connection. Pinned to one core beside a
    process that keeps it busy, the program still runs (at the usual priority) and its events must all be kept."""
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent("""
        import openwop_cli as wop

        @wop.tool
        def step(index):
            return index * 2

        print(sum(step(index) for index in range(50)))
    """))
    core = min(os.sched_getaffinity(0))
    busy = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"])
    try:
        for attempt in range(3):
            out = tmp_path / f"c{attempt}"
            done = subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--out", str(out), "--",
                                   sys.executable, str(program)], capture_output=True, text=True, timeout=120,
                                  preexec_fn=lambda: os.sched_setaffinity(0, {core}))
            assert done.returncode == 0 and done.stdout.strip() == "2450", done.stderr
            events = [event["type"] for event in CaptureReader(out)]
            assert events.count("tool_call") == events.count("tool_result") == 50, (attempt, Counter(events))
    finally:
        busy.kill()
        busy.wait()


HANDLER_STARTS_A_PROCESS = """
    import os, signal, subprocess, sys
    import openwop_cli as wop

    def report(signum, frame):
        subprocess.run([sys.executable, "-c", "pass"])  # wop sends what is queued first
        print("handler done", flush=True)

    signal.signal(signal.SIGUSR1, report)
    print(os.getpid(), flush=True)
    for index in range(100):
        wop.nondeterministic("data", f"k{index}", lambda: "x" * 60_000)
        subprocess.run([sys.executable, "-c", "pass"])  # sends it first: waits while wop reads nothing
    print("main done", flush=True)
"""


def test_a_signal_handler_that_sends_while_its_thread_is_sending_does_not_hang_the_program(tmp_path):
    """While `wop capture` read nothing (stopped here; at SCHED_IDLE on a busy machine it may not run for long), the
    program's main thread waited in a send; a signal's handler starting a process there sent what was queued first,
    and waited for the send lock its own thread held: the program hung for good, and `wop capture` with it."""
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(HANDLER_STARTS_A_PROCESS))
    out = tmp_path / "c"
    wop = start_capture(program, out)
    try:
        pid = int(wop.stdout.readline())
        os.kill(wop.pid, signal.SIGSTOP)
        time.sleep(1)  # the program fills the channel and waits in a send
        os.kill(pid, signal.SIGUSR1)
        time.sleep(0.5)
        os.kill(wop.pid, signal.SIGCONT)
        output, _ = wop.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):  # gone already, unless it hung
            os.killpg(wop.pid, signal.SIGKILL)
        wop.wait()
    assert output.splitlines() == ["handler done", "main done"]
    assert manifest_of(out)["status"] == "ok"
    assert len([event for event in events_of(out) if event["type"] == "nondeterministic"]) == 100


FINALIZED_AT_ITS_END = """
import sys

class Finalized:
    def __init__(self, path):
        self.path, self.me = path, self  # a cycle: only the garbage collector frees it

    def __del__(self):
        with open(self.path, "w") as out:
            out.write("finalized")

def main():
    global unclosed  # the module's dict and this function hold each other
    unclosed = open(sys.argv[2], "w")
    unclosed.write("buffered, never closed")
    Finalized(sys.argv[1])

main()
"""


@pytest.mark.parametrize("mode", ["capture", "replay"])
def test_the_programs_own_objects_are_finalized_as_python_ends(tmp_path, mode):
    """What a program leaves to Python's end happens under wop as without it: a cycle's __del__ runs and a file never
    closed is flushed. (`gc.freeze()` after wop's runtime loaded took 8 ms off that end and lost the file's text.)"""
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(FINALIZED_AT_ITS_END))
    argv = [sys.executable, str(program), str(tmp_path / "finalized"), str(tmp_path / "unclosed")]
    assert run_wop("capture", "--out", str(tmp_path / "c"), "--", *argv).returncode == 0
    if mode == "replay":
        for path in ("finalized", "unclosed"):
            (tmp_path / path).unlink()
        assert run_wop("replay", "--strict", str(tmp_path / "c"), "--out", str(tmp_path / "r")).returncode == 0
    assert (tmp_path / "finalized").read_text() == "finalized"
    assert (tmp_path / "unclosed").read_text() == "buffered, never closed"
