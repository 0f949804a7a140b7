"""Unchanged programs replay with exit 0: concurrent equal writes, thread pools under --repeat, telemetry that posts
new ids on every run, and the history before a replay's --from-seq."""

import json
import sys
from http.server import BaseHTTPRequestHandler

from tests.conftest import http_server, run_wop
from tests.fake_provider import FakeProvider
from tests.programs import capture, events, replay

EQUAL_WRITES = """
import threading
import openwop_cli as wop

@wop.tool
def look(number):
    return {"seen": number % 3}

def worker(number):
    for turn in range(20):
        wop.state.write("seen", "tick", reducer="append")
        look(turn)

threads = [threading.Thread(target=worker, args=(number,)) for number in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(wop.state.get("seen")))
"""


def test_concurrent_writes_of_equal_values_replay_in_any_interleaving(tmp_path):
    done, source = capture(tmp_path, EQUAL_WRITES, {})
    assert done.returncode == 0 and done.stdout == "80\n", done.stderr
    for attempt in range(6):
        replayed, report = replay(tmp_path, source, "--strict", env={}, name=f"replay-{attempt}")
        assert replayed.returncode == 0, (replayed.stderr, report["divergences"][:1])


TAKING_TURNS = """
import os, threading
import openwop_cli as wop

@wop.tool
def look(turn):
    return turn

turns = os.environ["TURNS"].split(",")  # which thread writes next: the order a scheduler picks, set here
position = [0]
changed = threading.Condition()

def worker(me):
    for turn in range(turns.count(me)):
        with changed:
            changed.wait_for(lambda: turns[position[0]] == me)
        wop.state.write("seen", "tick", reducer="append")
        look(f"{me}{turn}")
        with changed:
            position[0] += 1
            changed.notify_all()

threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(wop.state.get("seen")))
"""


def test_equal_writes_recorded_first_and_last_by_one_thread_replay_in_another_order(tmp_path):
    """Thread a recorded the first and the last of three equal writes; today thread b writes first. Each thread is
    served its own writes: b's write taken from a would leave b's recorded one before b's tool call unserved."""
    done, source = capture(tmp_path, TAKING_TURNS, {"TURNS": "a,b,a"})
    assert done.returncode == 0 and done.stdout == "3\n", done.stderr
    replayed, report = replay(tmp_path, source, "--strict", env={"TURNS": "b,a,a"})
    assert replayed.returncode == 0, (replayed.stderr, report["divergences"][:1])


POOL_FAN_OUT = """
import concurrent.futures, datetime, os, uuid
import openai

client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test", max_retries=0)

def ask(topic):
    prompt = f"[{uuid.uuid4()} {datetime.datetime.now().isoformat()}] {topic}"
    return client.chat.completions.create(model="gpt-4o-mini",
                                          messages=[{"role": "user", "content": prompt}]).choices[0].message.content

with concurrent.futures.ThreadPoolExecutor(3) as pool:
    for answer in pool.map(ask, [f"topic {n}" for n in range(9)]):
        print(answer)
"""


def test_repeated_replays_of_a_thread_pool_line_up_by_pool_task(tmp_path):
    with FakeProvider() as provider:
        done, source = capture(tmp_path, POOL_FAN_OUT, {"BASE": provider.url})
    assert done.returncode == 0, done.stderr
    repeated = run_wop("replay", "--repeat", "3", str(source), "--json", "--out", str(tmp_path / "runs"),
                       env={"BASE": provider.url}, cwd=tmp_path)
    report = json.loads(repeated.stdout)
    assert repeated.returncode == 0, (report["uncapturedNondeterminism"], repeated.stderr[-2000:])


class _PostHog(BaseHTTPRequestHandler):
    """A PostHog-shaped collector: POST /batch/ with {api_key, batch}."""

    received: list = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _PostHog.received.append(body)
        answer = b'{"status": 1}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


TELEMETRY = """
import os, requests
import openai

requests.post(os.environ["POSTHOG"] + "/batch/", json={"api_key": "phc_test", "batch": [
    {"event": "pipeline_run", "properties": {"pipeline_id": id(object())}}]})
client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test", max_retries=0)
print(client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
      .choices[0].message.content)
if os.environ.get("TWICE"):  # a second batch today: how many a library sends depends on timing
    requests.post(os.environ["POSTHOG"] + "/batch/", json={"api_key": "phc_test", "batch": []})
"""


def test_telemetry_posting_new_ids_on_every_run_replays_strictly(tmp_path):
    with FakeProvider() as provider, http_server(_PostHog) as posthog:
        env = {"BASE": provider.url, "POSTHOG": posthog}
        done, source = capture(tmp_path, TELEMETRY, env)
    assert done.returncode == 0, done.stderr
    for attempt, extra in enumerate(({}, {"TWICE": "1"})):
        replayed, report = replay(tmp_path, source, "--strict", env={**env, **extra}, name=f"replay-{attempt}")
        assert replayed.returncode == 0, (replayed.stderr, report["divergences"][:1])
        assert [note["code"] for note in report["notes"]] == ["telemetry_not_compared"]
        assert report["compared"]["llmCalls"] == 1 and report["compared"]["toolCalls"] == 0


FIXED_HISTORY = """
import os
import openwop_cli as wop

wop.state.write("count", int(os.environ.get("STEP", "1")), reducer="counter")
wop.state.write("count", 1, reducer="counter")
print("count", wop.state.get("count"))

@wop.tool
def report(count):
    return f"reported {count}"

print(report(wop.state.get("count")))
"""


def test_a_replay_from_seq_serves_the_history_before_it_state_included(tmp_path):
    done, source = capture(tmp_path, FIXED_HISTORY, {"STEP": "1"})
    assert done.stdout == "count 2\nreported 2\n", done.stderr
    [call] = events(source, "tool_call")
    changed_history = {"STEP": "5"}  # today's code writes another value before the tool call
    replayed, report = replay(tmp_path, source, "--strict", env=changed_history, name="whole")
    assert replayed.returncode == 1
    replayed, report = replay(tmp_path, source, "--strict", "--from-seq", str(call["seq"]), env=changed_history,
                              name="from-seq")
    assert replayed.returncode == 0, (replayed.stderr, report["divergences"][:1])
    assert "count 2" in replayed.stderr and "reported 2" in replayed.stderr


def test_a_pinned_workflow_the_capture_redacted_is_a_divergence_when_served(tmp_path):
    workflow = tmp_path / "workflow.json"
    workflow.write_text(json.dumps({"name": "support", "api_key": "sk-proj-" + "Zz9" * 16}))
    script = tmp_path / "agent.py"
    script.write_text("import openwop_cli as wop\nprint(sorted(wop.workflow()))\n")
    done = run_wop("capture", "--workflow", str(workflow), "--out", str(tmp_path / "source"), "--",
                   sys.executable, str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    replayed, report = replay(tmp_path, tmp_path / "source", "--strict", env={})
    assert replayed.returncode == 1
    assert report["divergences"][0]["jsonPath"] == "$.workflow"
    workflow.write_text(json.dumps({"name": "support", "steps": [1, 2]}))
    done = run_wop("capture", "--workflow", str(workflow), "--out", str(tmp_path / "clean"), "--",
                   sys.executable, str(script), cwd=tmp_path)
    workflow.write_text(json.dumps({"name": "changed since"}))
    replayed, report = replay(tmp_path, tmp_path / "clean", "--strict", env={}, name="clean-replay")
    assert replayed.returncode == 0, report["divergences"][:1]
    assert "['name', 'steps']" in replayed.stderr
