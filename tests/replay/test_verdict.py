"""A strict replay's verdict on programs with threads, asyncio tasks and pools: "replays exactly" only when it does.

Each program is captured once, then replayed strictly several times: values recorded per thread or task go back to
the thread or task that read them, whatever order the scheduler takes today; edits elsewhere in the file (a comment
on top, a renamed file) leave the call sites the same; and what the program prints is part of the verdict.
"""

import re
import sys

import pytest

from tests.conftest import run_wop
from tests.fake_provider import FakeProvider
from tests.programs import capture, replay

KEYED_THREADS = """
import random, sys, threading, time
import openwop_cli as wop

SWAP = len(sys.argv) > 1
results = {}

def worker(number):
    for turn in range(3):
        time.sleep(random.SystemRandom().random() / 100)  # jitter wop does not record: another order each run
        key = f"k{number ^ 1}" if SWAP and number < 2 else f"k{number}"
        results[(number, turn)] = wop.randint(0, 10**9, key=key)

threads = [threading.Thread(target=worker, args=(number,)) for number in range(6)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
for place in sorted(results):
    print(*place, results[place])
"""

KEYED_TASKS = """
import asyncio, random, sys
import openwop_cli as wop

SWAP = len(sys.argv) > 1

async def worker(number):
    values = []
    for turn in range(3):
        await asyncio.sleep(random.SystemRandom().random() / 100)
        key = f"k{number ^ 1}" if SWAP and number < 2 else f"k{number}"
        values.append(wop.randint(0, 10**9, key=key))
    return values

async def main():
    for number, values in enumerate(await asyncio.gather(*(worker(number) for number in range(6)))):
        print(number, *values)

asyncio.run(main())
"""


def _captured(tmp_path, script, env=None):
    done, source = capture(tmp_path, script, env or {})
    assert done.returncode == 0, done.stderr
    return source, done.stdout


def _replays_exactly(tmp_path, source, expected, times, *command, env=None, name="replay"):
    for attempt in range(times):
        done, report = replay(tmp_path, source, "--strict", *command, env=env or {}, name=f"{name}-{attempt}")
        assert done.returncode == 0, (done.stderr, report and report["divergences"])
        assert report["compared"]["liveValues"] == 0 and report["compared"]["output"] == ["stdout", "stderr"]
        printed = [line for line in done.stderr.splitlines() if not line.startswith("wop")]
        assert printed == expected.splitlines()


@pytest.mark.parametrize("script", [KEYED_THREADS, KEYED_TASKS], ids=["threads", "asyncio-tasks"])
def test_keyed_values_go_back_to_the_thread_or_task_that_read_them(tmp_path, script):
    source, printed = _captured(tmp_path, script)
    assert len(printed.splitlines()) == 18 or len(printed.splitlines()) == 6
    _replays_exactly(tmp_path, source, printed, 5)


@pytest.mark.parametrize("script", [KEYED_THREADS, KEYED_TASKS], ids=["threads", "asyncio-tasks"])
def test_two_threads_or_tasks_that_swap_their_keys_diverge(tmp_path, script):
    source, _ = _captured(tmp_path, script)
    done, report = replay(tmp_path, source, "--strict", "--", sys.executable, str(tmp_path / "agent.py"), "swap",
                          env={})
    assert done.returncode == 1, done.stderr
    first = report["divergences"][0]
    assert (first["code"], first["jsonPath"]) == ("event_payload_mismatch", "$.origin")
    assert first["site"]["file"] == "agent.py"


FAN_OUT = """
import asyncio, concurrent.futures, datetime, os, uuid
import openai
import openwop_cli as wop

BASE = os.environ["BASE"] + "/v1"

def ask(client, topic):  # the SDK's keyed values in a pool; the program's own clock and uuid reads below
    prompt = f"[{wop.uuid4()} at {wop.now().isoformat()}] tell me about {topic}"
    return client.chat.completions.create(model="gpt-4o-mini",
                                          messages=[{"role": "user", "content": prompt}]).choices[0].message.content

async def ask_async(client, topic):
    prompt = f"[{uuid.uuid4()} at {datetime.datetime.now().isoformat()}] tell me about {topic}"
    reply = await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}])
    return reply.choices[0].message.content

def in_a_pool():
    client = openai.OpenAI(base_url=BASE, api_key="sk-test", max_retries=0)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda topic: ask(client, topic), [f"pool topic {n}" for n in range(10)]))

async def gathered():
    client = openai.AsyncOpenAI(base_url=BASE, api_key="sk-test", max_retries=0)
    return await asyncio.gather(*(ask_async(client, f"task topic {n}") for n in range(10)))

for answer in in_a_pool() + asyncio.run(gathered()):
    print(answer)
"""


def test_a_fan_out_replays_exactly_after_a_comment_on_top_and_with_its_file_renamed(tmp_path):
    with FakeProvider() as provider:
        source, printed = _captured(tmp_path, FAN_OUT, {"BASE": provider.url})
    assert len(printed.splitlines()) == 20
    program = tmp_path / "agent.py"
    program.write_text("# a comment added on top: every line below moves one down\n" + program.read_text())
    _replays_exactly(tmp_path, source, printed, 2, env={"BASE": provider.url})
    renamed = tmp_path / "fan_out.py"
    program.rename(renamed)
    _replays_exactly(tmp_path, source, printed, 1, "--", sys.executable, str(renamed), env={"BASE": provider.url},
                     name="renamed")


def test_a_changed_line_at_a_call_site_is_named_with_its_site(tmp_path):
    source, _ = _captured(tmp_path, """
        import time
        started = time.time()
        print("started", started)
    """)
    program = tmp_path / "agent.py"
    program.write_text(program.read_text().replace("started = time.time()", "started = time.time() + 0"))
    done, report = replay(tmp_path, source, "--strict", env={})
    assert done.returncode == 1
    first = report["divergences"][0]
    assert (first["code"], first["site"]["line"]) == ("nondeterministic_underflow", 3)


def test_a_value_wop_did_not_record_is_an_output_mismatch(tmp_path):
    (tmp_path / "data.txt").write_text("the answer is 41\n")
    source, _ = _captured(tmp_path, """
        print("before")
        print(open("data.txt").read().strip())
        print("after")
    """)
    (tmp_path / "data.txt").write_text("the answer is 42\n")
    done, report = replay(tmp_path, source, "--strict", env={})
    assert done.returncode == 1
    [divergence] = report["divergences"]
    assert (divergence["code"], divergence["jsonPath"], divergence["expectedValue"], divergence["observedValue"]) == \
        ("output_mismatch", "$.output.stdout[1]", "the answer is 41", "the answer is 42")
    assert "stdout line 2" in divergence["detail"]
    done, report = replay(tmp_path, source, "--strict", "--no-output", env={}, name="not-compared")
    assert done.returncode == 0 and report["compared"]["output"] == []


TIMES_AND_ADDRESSES = """
import logging, os, sys, tempfile, time
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
started = time.perf_counter()
logging.info("starting")
thing = object()
print("made", thing, id(thing), hex(id(thing)))
with tempfile.NamedTemporaryFile() as scratch:
    print("scratch file", scratch.name)
print("pid", os.getpid())
print(f"elapsed {time.perf_counter() - started:.3f}s")
print("took", time.perf_counter() - started)
logging.info("done in %.2f ms", (time.perf_counter() - started) * 1000)
"""


def test_log_times_durations_addresses_pids_and_temp_paths_do_not_fail_an_unchanged_program(tmp_path):
    source, printed = _captured(tmp_path, TIMES_AND_ADDRESSES)
    for attempt in range(5):
        done, report = replay(tmp_path, source, "--strict", env={}, name=f"replay-{attempt}")
        assert done.returncode == 0, (done.stderr, report["divergences"])
        assert report["compared"]["output"] == ["stdout", "stderr"]
    done, report = replay(tmp_path, source, "--strict", "--exact-output", env={}, name="exact")
    assert done.returncode == 1 and report["divergences"][0]["code"] == "output_mismatch"


def test_capture_keeps_the_output_redacted_and_no_output_keeps_none(tmp_path):
    secret = "sk-proj-" + "Ab1" * 16
    source, printed = _captured(tmp_path, f"""
        print("the key is {secret}")
    """)
    assert secret in printed  # passed through unchanged
    manifest = (source / "manifest.json").read_text()
    assert secret not in manifest and "the key is" in manifest
    done = run_wop("capture", "--no-output", "--out", str(tmp_path / "quiet"), "--", sys.executable,
                   str(tmp_path / "agent.py"), cwd=tmp_path)
    assert done.returncode == 0 and secret in done.stdout
    assert '"output"' not in (tmp_path / "quiet" / "manifest.json").read_text()


def test_bytes_that_changed_in_a_request_are_shown_by_size_and_hash_on_the_terminal(tmp_path):
    """The report on a terminal used to die of `Type is not JSON serializable: bytes` (exit 70) when the values at
    the divergence were bytes; now each side shows its size and digest, which tell two of the same size apart."""
    source, _ = _captured(tmp_path, """
        import openwop_cli as wop
        request = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, b"raw bytes"]}]}
        print(wop.llm_call("openai", "gpt-4o", request, lambda: {"content": "ok"})["content"])
    """)
    program = tmp_path / "agent.py"
    program.write_text(program.read_text().replace('b"raw bytes"', 'b"raw bytez"'))
    done = run_wop("replay", str(source), "--strict", "--out", str(tmp_path / "replay"), env={"COLUMNS": "200"},
                   cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    shown = sorted(set(re.findall(r"<9 bytes sha256:[0-9a-f]{12}>", done.stdout)))
    assert len(shown) == 2 and "raw bytez" not in done.stdout.split("source changed")[0]
