"""Ambient values: unmodified programs' clock, uuid and random reads recorded per call site and served back."""

import datetime
import os
import random
import signal
import sys
import textwrap
import time
import uuid
from pathlib import Path

import orjson
import pytest

import openwop_cli as wop
from openwop_cli.format.reader import CaptureReader
from tests.conftest import requires, run_wop
from tests.fake_provider import FakeProvider

# The agent asks with httpx, the transport the openai SDK sends through (the same llm_request): the SDK would cost each
# process of a capture and its replays 0.9 s of CPU to import, and its own reads of the clock or random, made outside
# the program's code, are not recorded (test_every_source_replays_exactly_and_library_internal_reads_are_not_recorded).
PROMPT_AGENT = """
import os, random, uuid
from datetime import datetime
import httpx

client = httpx.Client(base_url=os.environ["BASE"] + "/v1", timeout=60)
tone = random.choice(["friendly", "formal", "brief"])
system = f"Today is {datetime.now().isoformat()}. Request {uuid.uuid4()}. Be {tone}."
reply = client.post("/chat/completions", json={"model": "gpt-4o-mini", "messages": [
    {"role": "system", "content": system}, {"role": "user", "content": "where is my order?"}]})
print(system)
print(reply.json()["choices"][0]["message"]["content"])
"""


def capture(tmp_path: Path, script: str, *options: str, env: dict | None = None, out: str = "source") -> Path:
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(script))
    done = run_wop("capture", "--out", str(tmp_path / out), *options, "--", sys.executable, str(program),
                   env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / f"{out}.stdout").write_text(done.stdout)
    return tmp_path / out


def replay(tmp_path: Path, source: Path, *options: str, env: dict | None = None, name: str = "replay"):
    """`wop replay --json`: (process, report); the program's output is on stderr."""
    done = run_wop("replay", str(source), "--json", "--out", str(tmp_path / name), *options, env=env, cwd=tmp_path)
    return done, orjson.loads(done.stdout) if done.stdout.startswith("{") else None


def ambient_events(path: Path) -> list[dict]:
    return [event for event in CaptureReader(path) if (event["data"].get("ambient") is True)]


def _where(site: dict) -> tuple:
    """A site's file, line and function (beside them it has its line's text and occurrence)."""
    return site["file"], site["line"], site["function"]


def program_output(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("wop")]


requires("httpx")


def test_an_agent_with_the_date_a_uuid_and_a_random_tone_in_its_prompt_replays_unchanged(tmp_path):
    with FakeProvider() as provider:
        env = {"BASE": provider.url}
        source = capture(tmp_path, PROMPT_AGENT, env=env)
    reads = {(event["data"]["key"], event["origin"]["site"]["line"]) for event in ambient_events(source)
             if event["origin"]["site"]["file"] == "agent.py"}
    assert reads == {("random.choice", 7), ("datetime.now", 8), ("uuid.uuid4", 8)}
    recorded_prompt = next(event for event in CaptureReader(source)
                           if event["type"] == "llm_request")["data"]["request"]["messages"][0]["content"]
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert captured[0] == recorded_prompt
    for number in range(3):
        done, report = replay(tmp_path, source, "--strict", env=env, name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False and report["liveValues"] == []
        assert program_output(done.stderr) == captured


def test_with_ambient_off_the_replay_diverges_at_the_prompt_and_names_the_timestamp_and_uuid(tmp_path):
    with FakeProvider() as provider:
        env = {"BASE": provider.url}
        source = capture(tmp_path, PROMPT_AGENT, "--ambient", "off", env=env)
    assert ambient_events(source) == []
    assert orjson.loads((source / "manifest.json").read_bytes())["ambient"] is False
    done, report = replay(tmp_path, source, env=env)
    assert done.returncode == 1
    divergence = report["divergences"][0]
    assert divergence["jsonPath"] == "$.messages[0].content"
    assert divergence["hint"]["kinds"] == ["timestamp", "uuid"]
    assert "--ambient off" in divergence["hint"]["fix"]
    text = run_wop("replay", str(source), "--out", str(tmp_path / "again"), env=env, cwd=tmp_path)
    assert "differ only in a timestamp and a uuid" in " ".join(text.stdout.split()) or \
        "differ in a timestamp and a uuid" in " ".join(text.stdout.split())


def test_tool_wop_ambient_false_in_pyproject_turns_recording_off(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.wop]\nambient = false\n")
    source = capture(tmp_path, "import uuid; print(uuid.uuid4())")
    assert ambient_events(source) == []
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\nambient = "yes"\n')
    done = run_wop("capture", "--out", str(tmp_path / "bad"), "--", sys.executable, "-c", "pass", cwd=tmp_path)
    assert done.returncode == 2 and "ambient" in done.stderr


DATETIME_PROGRAM = """
import json, pickle, sys
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo
import orjson
from pydantic import BaseModel

class Ticket(BaseModel):
    opened: datetime

start = datetime.now(timezone.utc)
ticket = Ticket(opened=start)
later = datetime.now(timezone.utc)
local = datetime.now(ZoneInfo("Europe/Paris"))
naive = datetime.now()
facts = {
    "isinstance": isinstance(ticket.opened, datetime), "exact type": type(start) is datetime,
    "same class": datetime is sys.modules["datetime"].datetime,
    "utc": start.tzinfo is timezone.utc, "zone": str(local.tzinfo), "naive": naive.tzinfo is None,
    "orjson": orjson.loads(orjson.dumps({"t": start}))["t"] == start.isoformat(),
    "json": json.loads(ticket.model_dump_json())["opened"].replace("Z", "+00:00") == start.isoformat(),
    "pickle": pickle.loads(pickle.dumps(start)) == start,
    "arithmetic": type(later - start) is timedelta and later >= start and start + timedelta(days=1) > later,
    "today": type(date.today()) is date and type(datetime.today()) is datetime,
    "utcnow": datetime.utcnow().tzinfo is None,
}
print(json.dumps(facts, sort_keys=True))
print(start.isoformat(), later.isoformat(), local.isoformat(), naive.isoformat())
"""


def test_datetime_stays_a_real_datetime_for_pydantic_orjson_pickle_arithmetic_and_time_zones(tmp_path):
    requires("pydantic")
    source = capture(tmp_path, DATETIME_PROGRAM, env={"PYTHONWARNINGS": "ignore"})
    plain = __import__("subprocess").run([sys.executable, str(tmp_path / "agent.py")], capture_output=True, text=True,
                                         env={**os.environ, "PYTHONWARNINGS": "ignore"}, cwd=tmp_path)
    done, report = replay(tmp_path, source, env={"PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr
    facts = orjson.loads(plain.stdout.splitlines()[0])
    assert all(value is True for key, value in facts.items() if key != "zone") and facts["zone"] == "Europe/Paris"
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert captured[0] == plain.stdout.splitlines()[0]
    assert program_output(done.stderr) == captured
    recorded = [event["data"]["value"] for event in ambient_events(source) if event["data"]["key"] == "datetime.now"]
    assert captured[1].split()[:2] == recorded[:2] and len(recorded) == 4


CONCURRENT_PROGRAM = """
import asyncio, threading, uuid
from datetime import datetime
import openwop_cli as wop

@wop.tool
def report(who: str, stamp: str, ident: str) -> str:
    return f"{who} {stamp} {ident}"

def stamp():
    return datetime.now().isoformat(), str(uuid.uuid4())

results = {}
barrier = threading.Barrier(4)

def worker():
    barrier.wait()
    for _ in range(3):
        when, ident = stamp()
        name = threading.current_thread().name
        results.setdefault(name, []).append(report(name, when, ident))

threads = [threading.Thread(target=worker, name=f"worker-{index}") for index in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()

async def task(index):
    out = []
    for _ in range(3):
        when, ident = stamp()
        await asyncio.sleep(0)
        out.append(report(f"task-{index}", when, ident))
    return out

async def main():
    return await asyncio.gather(*(task(index) for index in range(4)))

for name in sorted(results):
    print(name, results[name])
for lines in asyncio.run(main()):
    print(lines)
"""


def test_threads_and_tasks_reading_at_one_call_site_are_each_served_their_own_values(tmp_path):
    source = capture(tmp_path, CONCURRENT_PROGRAM)
    reads = ambient_events(source)
    assert {(event["origin"]["site"]["line"], event["data"]["key"]) for event in reads} == {
        (11, "datetime.now"), (11, "uuid.uuid4")}
    assert len({(event["origin"]["thread"], event["origin"].get("task")) for event in reads}) == 8
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    for number in range(5):
        done, report = replay(tmp_path, source, name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["score"]["score"] == 1.0 and report["liveValues"] == []
        assert program_output(done.stderr) == captured


POOL_PROGRAM = """
import concurrent.futures, multiprocessing, os, random, time, uuid

def task(number):
    time.sleep(random.random() / 20)  # which worker takes which task then changes from run to run
    return f"{number} {random.random()} {time.time()} {uuid.uuid4()}"

if __name__ == "__main__":
    context = multiprocessing.get_context(os.environ["START_METHOD"])
    for batch in (range(3), range(3, 6)):  # a new pool for each batch: its tasks are told apart from the last's
        if os.environ["POOL"] == "Pool":
            with context.Pool(2) as pool:  # its end sends the workers SIGTERM
                print(*pool.map(task, batch), sep="\\n")
        else:
            with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as executor:
                print(*executor.map(task, batch), sep="\\n")
"""


@pytest.mark.parametrize("pool", ["Pool", "ProcessPoolExecutor"])
@pytest.mark.parametrize("start_method", ["spawn", "forkserver", "fork"])
def test_pool_workers_values_are_recorded_per_task_and_served_to_whichever_worker_runs_it(tmp_path, start_method,
                                                                                          pool):
    env = {"START_METHOD": start_method, "POOL": pool}
    source = capture(tmp_path, POOL_PROGRAM, env=env)
    reads = [event for event in ambient_events(source) if event["origin"]["site"]["function"] == "task"]
    assert len(reads) == 6 * 4, [event["data"]["key"] for event in reads]
    assert len({event["origin"]["poolTask"] for event in reads}) == 6
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 6
    done, report = replay(tmp_path, source, "--strict", env=env)
    assert done.returncode == 0, done.stderr
    assert report["liveValues"] == []
    assert program_output(done.stderr) == captured


def test_a_thread_pools_tasks_are_served_their_values_whichever_thread_runs_them(tmp_path):
    source = capture(tmp_path, """
        import multiprocessing.pool, random, time, uuid

        def task(number):
            time.sleep(random.random() / 20)
            return f"{number} {uuid.uuid4()}"

        with multiprocessing.pool.ThreadPool(3) as pool:
            print(*pool.map(task, range(8)), sep="\\n")
    """)
    assert len({event["origin"]["poolTask"] for event in ambient_events(source)}) == 8
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    for number in range(2):
        done, report = replay(tmp_path, source, "--strict", name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["liveValues"] == []
        assert program_output(done.stderr) == captured



def test_a_thread_pool_executors_calls_are_served_their_values_whichever_thread_runs_them(tmp_path):
    """Tasks take a jitter wop does not replay (perf_counter), so which thread runs which changes every run."""
    source = capture(tmp_path, """
        import asyncio, concurrent.futures, time, uuid

        def task(number):
            time.sleep((time.perf_counter_ns() % 13) / 1000)
            return f"{number} {uuid.uuid4()}"

        async def main():
            return await asyncio.gather(*(asyncio.to_thread(task, f"async {number}") for number in range(4)))

        with concurrent.futures.ThreadPoolExecutor(3) as executor:
            print(*executor.map(task, range(8)), sep="\\n")
        print(*asyncio.run(main()), sep="\\n")
    """)
    assert len({event["origin"]["poolTask"] for event in ambient_events(source)}) == 12
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    for number in range(3):
        done, report = replay(tmp_path, source, "--strict", name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["liveValues"] == []
        assert program_output(done.stderr) == captured


def test_a_thread_pool_used_inside_a_recorded_call_does_not_shift_the_numbering_of_the_programs_tasks(tmp_path):
    """The tool submits to the executor too, and a replay does not run it (and an HTTP client resolves names in the
    default executor when the capture's run had to): those calls are not tasks. Before, they took task numbers in
    the capture only, and the program's tasks were served other tasks' values."""
    source = capture(tmp_path, """
        import concurrent.futures, uuid
        import openwop_cli as wop

        executor = concurrent.futures.ThreadPoolExecutor(2)

        @wop.tool
        def sizes(text):
            return list(executor.map(len, [text, text * 2]))

        def task(number):
            return f"{number} {uuid.uuid4()}"

        print(sizes("abc"))
        print(*executor.map(task, range(4)), sep="\\n")
    """)
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    done, report = replay(tmp_path, source, "--strict")
    assert done.returncode == 0, done.stderr
    assert report["liveValues"] == []
    assert program_output(done.stderr) == captured


def test_calls_submitted_from_elsewhere_in_numbers_that_change_do_not_shift_the_programs_tasks(tmp_path):
    """A library's own use of the default executor (openai's platform lookup, made by as many requests as race to be
    first) changes from run to run: here 2 such calls in the capture, none in the replay. Tasks are counted per
    submitting line, so the program's keep their numbers."""
    source = capture(tmp_path, """
        import asyncio, os, uuid

        def housekeeping():
            return None

        def task(number):
            return f"{number} {uuid.uuid4()}"

        async def main():
            for _ in range(int(os.environ["HOUSEKEEPING"])):
                await asyncio.to_thread(housekeeping)
            return await asyncio.gather(*(asyncio.to_thread(task, number) for number in range(4)))

        print(*asyncio.run(main()), sep="\\n")
    """, env={"HOUSEKEEPING": "2"})
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    done, report = replay(tmp_path, source, "--strict", env={"HOUSEKEEPING": "0"})
    assert done.returncode == 0, done.stderr
    assert report["liveValues"] == []
    assert program_output(done.stderr) == captured


TIMER_PROGRAM = """
import random, signal, time

ticks = []

def tick(signum, frame):
    ticks.append(time.time())

signal.signal(signal.SIGALRM, tick)
signal.setitimer(signal.ITIMER_REAL, INTERVAL, INTERVAL)
value = random.random()  # the first read: wop loads what events need, or in a replay the capture and its engine
for _ in range(20):
    time.sleep(0.01)
signal.setitimer(signal.ITIMER_REAL, 0)
print("value", value, "ticks", len(ticks) > 0)
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="signal.setitimer")
@pytest.mark.parametrize("interval", ["0.001", "0.0002"])
def test_a_timer_whose_handler_reads_the_clock_is_captured_and_replayed(tmp_path, interval):
    """The handler runs inside wop's first-read loading: the capture used to crash (its read, failing on a half-loaded
    module, broke orjson's initialization) and the replay to wait on its own build until the recursion limit (also
    when the timer fired while the build had its lock but the handlers were not held yet: 0.2 ms makes that likely)."""
    source = capture(tmp_path, TIMER_PROGRAM.replace("INTERVAL", interval))
    assert orjson.loads((source / "manifest.json").read_bytes())["status"] == "ok"
    assert any(event["origin"]["site"]["function"] == "tick" for event in ambient_events(source))
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert captured[0].endswith("ticks True")
    for number in range(2):
        done, _report = replay(tmp_path, source, "--strict", name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert program_output(done.stderr) == captured


RAISING_TIMER_PROGRAM = """
import random, signal, time

class Tick(Exception):
    pass

def tick(signum, frame):  # a timeout: raised in whatever the program called, wop's code among it
    global ticks
    if frame is None or frame.f_code.co_name == "<module>":
        return  # between the program's own lines (a loop's jump back) no try can cover it: not what this tests
    ticks += 1
    raise Tick

def pause():
    time.sleep(0.001)

values, ticks = [], 0
signal.signal(signal.SIGALRM, tick)
signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
while len(values) < 20:
    try:
        values.append(random.random())  # the first: wop loads what events need
        pause()
    except Tick:
        pass
signal.setitimer(signal.ITIMER_REAL, 0)
print("values", len(values), "ticks", ticks > 0)
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="signal.setitimer")
def test_a_timer_whose_handler_raises_never_interrupts_what_wop_loads_for_the_first_event(tmp_path):
    """The handler's exception, raised inside the imports of the first event's loading, left them half done: later
    reads failed outside the program's try (the program died of its own Tick) or orjson's initialization crashed
    the process (SIGSEGV). Its handler now waits for the loading, as in a replay's first build."""
    source = capture(tmp_path, RAISING_TIMER_PROGRAM)
    assert orjson.loads((source / "manifest.json").read_bytes())["status"] == "ok"
    assert (tmp_path / "source.stdout").read_text() == "values 20 ticks True\n"
    reads = [event for event in ambient_events(source) if event["data"]["key"] == "random.random"]
    assert len(reads) >= 20  # (a Tick between a read's return and its append costs the program that value, not wop)


EVERY_SOURCE = """
import datetime, os, random, secrets, time, uuid, logging, tempfile, email.utils

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
logging.info("the stdlib's own clock reads are not recorded")
tempfile.NamedTemporaryFile().close(), email.utils.make_msgid(domain="example.com"), email.utils.formatdate()

class Ticket:
    def __init__(self, ident):
        self.ident = ident
    def __repr__(self):
        return f"Ticket({self.ident})"

tickets = [Ticket(index) for index in range(8)]
print("clock", time.time(), time.time_ns(), time.strftime("%Y-%m-%d %H:%M:%S"), time.ctime())
print("datetime", datetime.datetime.now(), datetime.datetime.utcnow(), datetime.date.today(), datetime.datetime.today())
print("uuid", uuid.uuid4(), uuid.uuid1())
print("random", random.random(), random.choice(tickets), random.sample(tickets, 3), random.gauss(0, 1))
random.shuffle(tickets)
print("shuffle", tickets, random.choices(tickets, k=2), random.randbytes(4).hex(), random.getrandbits(100))
mine = random.Random()
print("instance", mine.random(), mine.choice(tickets))
print("secrets", secrets.token_hex(8), secrets.token_urlsafe(8), secrets.choice(tickets), secrets.randbelow(10**6))
print("system", random.SystemRandom().randint(0, 10**9), os.urandom(6).hex())
random.seed(7)
print("seeded", random.random(), random.choice(tickets))
"""


def test_every_source_replays_exactly_and_library_internal_reads_are_not_recorded(tmp_path):
    source = capture(tmp_path, EVERY_SOURCE)
    events = ambient_events(source)
    assert {event["origin"]["site"]["file"] for event in events} == {"agent.py"}
    assert {event["data"]["source"] for event in events} == {"clock", "uuid", "rng", "entropy"}
    keys = [event["data"]["key"] for event in events]
    assert "random.Random" in keys and "secrets.token_hex" in keys and "SystemRandom.randint" in keys
    assert keys.count("random.random") == 1, "after random.seed(x) the module functions are not recorded"
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 9
    for name in ("r1", "r2"):
        done, report = replay(tmp_path, source, name=name)
        assert done.returncode == 0 and report["liveValues"] == [], done.stderr
        assert [line for line in program_output(done.stderr) if not line[:4].isdigit()] == captured


def test_a_read_at_a_site_the_capture_never_saw_is_a_divergence_and_one_more_read_is_a_note(tmp_path):
    """A value read live at a site (or by a thread or task) the capture has none for — new or changed code — is never
    "replays exactly": the replay names its call site. One more read at a site whose recorded values ran out (a
    timer's, a polling loop's: as many as time allows) gets a live value and a note; a recorded value today's run
    does not read is nothing."""
    source = capture(tmp_path, """
        import os, uuid
        for _ in range(int(os.environ.get("READS", "2"))):
            uuid.uuid4()
        if os.environ.get("NEW"):
            uuid.uuid1()
    """, env={"READS": "2"})
    assert len(ambient_events(source)) == 2
    done, report = replay(tmp_path, source, env={"READS": "1"}, name="fewer")
    assert done.returncode == 0 and report["divergences"] == [] and report["liveValues"] == []
    done, report = replay(tmp_path, source, env={"READS": "3"}, name="more")
    assert done.returncode == 0 and report["divergences"] == []
    assert [(note["key"], note["site"]["line"], note["count"]) for note in report["liveValues"]] == [("uuid.uuid4", 4, 1)]
    done, report = replay(tmp_path, source, env={"NEW": "1"}, name="new")
    assert done.returncode == 1
    [divergence] = report["divergences"]
    assert (divergence["code"], divergence["site"]["line"]) == ("nondeterministic_underflow", 6)
    text = run_wop("replay", str(source), "--out", str(tmp_path / "text"), env={"NEW": "1"}, cwd=tmp_path)
    assert text.returncode == 1 and "agent.py:6" in text.stdout


def test_boundary_requests_name_their_call_site_and_results_do_not(tmp_path):
    source = capture(tmp_path, """
        import openwop_cli as wop

        @wop.tool
        def lookup(order_id):
            return {"id": order_id}

        def handle():
            lookup("A-1")
            wop.state.write("ticket", {"id": "A-1"}, reducer="merge")
            return wop.randint(1, 6, key="die")

        handle()
    """)
    events = {event["type"]: event for event in CaptureReader(source)}
    assert _where(events["tool_call"]["origin"]["site"]) == ("agent.py", 9, "handle")
    assert events["state_mutation"]["origin"]["site"]["line"] == 10
    assert events["nondeterministic"]["origin"]["site"]["line"] == 11
    assert "site" not in events["tool_result"]["origin"]


def test_show_folds_a_call_sites_ambient_values_into_one_row(tmp_path):
    source = capture(tmp_path, """
        import uuid
        from datetime import datetime
        for _ in range(5):
            print(uuid.uuid4(), datetime.now())
    """)
    done = run_wop("show", str(source), "--no-pager")
    rows = [line for line in done.stdout.splitlines() if "ambient" in line]
    assert len(rows) == 1 and "agent.py:5 <module>" in rows[0]
    assert "uuid uuid.uuid4 ×5" in rows[0] and "clock datetime.now ×5" in rows[0]
    one = run_wop("show", str(source), "--seq", "3", "--json")
    assert orjson.loads(one.stdout)["data"]["ambient"] is True


GETPID_AGENT = """
import os
import httpx  # as PROMPT_AGENT: 7 processes run this program
client = httpx.Client(base_url=os.environ["BASE"] + "/v1", timeout=60)
reply = client.post("/chat/completions", json={"model": "gpt-4o-mini", "messages": [
    {"role": "system", "content": f"You are worker {os.getpid()}."}, {"role": "user", "content": "hi"}]})
print(reply.json()["choices"][0]["message"]["content"])
"""


def test_repeat_finds_a_pid_in_the_prompt_as_uncaptured_nondeterminism(tmp_path):
    with FakeProvider() as provider:
        env = {"BASE": provider.url}
        source = capture(tmp_path, GETPID_AGENT, env=env)
    done = run_wop("replay", "--repeat", "3", str(source), "--json", "--out", str(tmp_path / "runs"), env=env,
                   cwd=tmp_path)
    assert done.returncode == 1
    report = orjson.loads(done.stdout)
    assert report["repeat"] == 3 and report["nondeterministic"] is True
    found = report["uncapturedNondeterminism"]
    assert [(item["eventType"], item["jsonPath"], item["kind"]) for item in found] == [
        ("llm_request", "$.messages[0].content", "number")]
    assert _where(found[0]["site"]) == ("agent.py", 5, "<module>")
    assert len(set(found[0]["values"])) == 3
    text = run_wop("replay", str(source), "--repeat", env=env, cwd=tmp_path)
    assert text.returncode == 1
    assert "uncaptured nondeterminism" in text.stdout and "$.messages[0].content" in text.stdout
    assert text.stdout.count("replay ") >= 3


def test_repeat_on_the_example_agent_finds_nothing(tmp_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "support_agent.py"
    out = tmp_path / "source"
    done = run_wop("capture", "--out", str(out), "--", sys.executable, str(example), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = run_wop("replay", "--repeat", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all 3 replays are identical" in done.stdout


def test_library_capture_patches_only_inside_the_block_and_an_in_process_replay_serves_the_values(tmp_path):
    from openwop_cli.host.inprocess_replay import InProcessReplay

    def read_values():
        return uuid.uuid4(), datetime.datetime.now(datetime.UTC), random.random()

    originals = (time.time, uuid.uuid4, random.random, os.urandom, datetime.datetime.__dict__["now"])
    with wop.capture(out=tmp_path / "lib"):
        assert time.time is not originals[0]
        recorded = read_values()
    assert (time.time, uuid.uuid4, random.random, os.urandom, datetime.datetime.__dict__["now"]) == originals
    keys = [event["data"]["key"] for event in ambient_events(tmp_path / "lib")]
    assert keys == ["uuid.uuid4", "datetime.now", "random.random"]
    with InProcessReplay(tmp_path / "lib", out=tmp_path / "replayed") as run:
        again = read_values()
    assert again == recorded
    assert run.outcome.divergences == [] and run.outcome.live_values == []
    assert time.time is originals[0]
    with wop.capture(out=tmp_path / "off", ambient=False):
        assert time.time is originals[0] and uuid.uuid4 is originals[1]


def test_a_fork_serves_the_values_read_before_its_branch_point_and_reads_live_after(tmp_path):
    source = capture(tmp_path, """
        import uuid
        print(uuid.uuid4())
        print(uuid.uuid4())
    """)
    first, second = ambient_events(source)
    done = run_wop("fork", str(source), "--from-seq", str(second["seq"]), "--json", "--out", str(tmp_path / "fork"),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = program_output(done.stderr)
    assert printed[0] == first["data"]["value"] and printed[1] != second["data"]["value"]
    assert orjson.loads(done.stdout)["liveValues"] == []
    forked = ambient_events(tmp_path / "fork")
    assert [event["data"]["value"] for event in forked] == printed
    assert "live" not in forked[1]["data"]


PLUMBING = """
import os, uuid
import boto3, requests

request_id = str(uuid.uuid4())
requests.post(os.environ["BASE"] + "/v1/orders", json={"id": request_id}, timeout=10)
s3 = boto3.client("s3", endpoint_url=os.environ["BASE"], region_name="us-east-1", aws_access_key_id="AKIATEST",
                  aws_secret_access_key="test-secret")
try:
    s3.list_buckets()
except Exception as exc:
    print("s3:", type(exc).__name__)
print("sent", request_id)
"""


def test_the_clock_and_random_of_http_clients_and_aws_signing_are_not_recorded(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(PLUMBING))
    with FakeProvider() as provider:
        done = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, str(program),
                       env={"BASE": provider.url, "AWS_EC2_METADATA_DISABLED": "true"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ambient = [event for event in CaptureReader(tmp_path / "c")
               if event["type"] == "nondeterministic" and event["data"].get("ambient")]
    assert [(event["data"]["key"], event["origin"]["site"]["file"]) for event in ambient] == [("uuid.uuid4", "agent.py")]
    replayed = run_wop("replay", str(tmp_path / "c"), cwd=tmp_path, env={"BASE": provider.url})
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
