"""Tool and LLM calls made in other processes: a pool task is served its own recorded calls by whichever worker runs
it, and each multiprocessing.Process (or forked child) those of the recorded process it stands for."""

import os
import signal
import textwrap

import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import requires
from tests.fake_provider import FakeProvider
from tests.runtime.test_ambient import capture, program_output, replay

requires("httpx")


def assert_replays_exactly(tmp_path, source, captured: list[str], env: dict | None = None, times: int = 3) -> None:
    """Strict replays of source, times over, each reproducing the captured output with no divergence and no live
    value."""
    for number in range(times):
        done, report = replay(tmp_path, source, "--strict", env=env, name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False and report["liveValues"] == []
        assert program_output(done.stderr) == captured

POOL_CALLS = """
import concurrent.futures, multiprocessing, multiprocessing.pool, os, random, time
import httpx  # what the openai SDK calls through: each spawned worker imports this module, and the SDK costs 1 s
import openwop_cli as wop

@wop.tool
def lookup(order):
    time.sleep(random.random() / 50)  # which worker takes which task then changes from run to run
    return f"{order}:{random.randint(0, 10**9)}"

def task(number):
    shared = lookup("shared")  # the same call in every task, a different recorded result in each
    own = lookup(f"A-{number}")
    reply = httpx.post(os.environ["BASE"] + "/v1/chat/completions", timeout=60, json={"model": "gpt-4o-mini",
                       "messages": [{"role": "user", "content": f"{shared} {own}"}]}).json()
    return f"{number} {reply['choices'][0]['message']['content']}"

if __name__ == "__main__":
    kind, method = os.environ["POOL"], os.environ["START_METHOD"]
    if kind == "ThreadPool":
        with multiprocessing.pool.ThreadPool(3) as pool:
            print(*pool.map(task, range(6), chunksize=1), sep="\\n")
    elif kind == "Pool":
        with multiprocessing.get_context(method).Pool(3) as pool:
            print(*pool.map(task, range(6), chunksize=1), sep="\\n")
    else:
        context = multiprocessing.get_context(method)
        with concurrent.futures.ProcessPoolExecutor(3, mp_context=context) as executor:
            print(*executor.map(task, range(6)), sep="\\n")
"""


@pytest.mark.parametrize("pool, start_method", [("Pool", "fork"), ("Pool", "spawn"),
                                                ("ProcessPoolExecutor", "forkserver"), ("ThreadPool", "-")])
def test_pool_tasks_calls_are_served_to_whichever_worker_runs_the_task(tmp_path, pool, start_method):
    with FakeProvider() as provider:
        env = {"BASE": provider.url, "POOL": pool, "START_METHOD": start_method}
        source = capture(tmp_path, POOL_CALLS, env=env)
    calls = [event for event in CaptureReader(source) if event["type"] in ("tool_call", "llm_request")]
    assert len(calls) == 18 and len({event["origin"]["poolTask"] for event in calls}) == 6
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 6
    for number in range(2):  # offline: the provider is gone
        done, report = replay(tmp_path, source, "--strict", env=env, name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False and report["score"]["score"] == 1.0
        assert program_output(done.stderr) == captured


PROCESSES = """
import multiprocessing, os, random, time
import openwop_cli as wop

@wop.tool
def lookup(order):
    return f"{order}:{random.randint(0, 10**9)}"

def work(number, queue):
    time.sleep(random.random() / 20)  # which process reaches wop first then changes from run to run
    queue.put((number, lookup(f"A-{number}"), lookup("shared")))

if __name__ == "__main__":
    context = multiprocessing.get_context(os.environ["START_METHOD"])
    queue = context.Queue()
    processes = [context.Process(target=work, args=(number, queue)) for number in range(4)]
    for process in processes:
        process.start()
    results = sorted(queue.get(timeout=60) for _ in processes)  # a child stopped by a replay never answers
    for process in processes:
        process.join()
    print(*results, sep="\\n")
    if os.fork() == 0:  # a plain fork: it stands for the recorded process forked here
        print("forked", lookup("in the fork"), flush=True)
        os._exit(0)
    os.wait()
"""


@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
def test_each_multiprocessing_process_is_served_its_own_recorded_calls(tmp_path, start_method):
    """Spawned siblings share their argv and reach wop in any order: they are paired with the recorded processes by
    their multiprocessing identity. Before, a forked Process was served its parent's calls and spawned ones each
    other's, and the program, its children stopped, waited for their results."""
    env = {"START_METHOD": start_method}
    source = capture(tmp_path, PROCESSES, env=env)
    processes = CaptureReader(source).manifest["program"]["processes"]
    assert sorted(process.get("mpIdentity") or [] for process in processes)[-4:] == [[1], [2], [3], [4]]
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 5 and captured[-1].startswith("forked in the fork:")
    for number in range(2):
        done, report = replay(tmp_path, source, "--strict", env=env, name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False and report["score"]["score"] == 1.0
        assert program_output(done.stderr) == captured


def test_a_program_waiting_for_a_process_the_strict_replay_stopped_is_ended(tmp_path):
    """The children's calls changed since the capture: the replay stops them, and their parent would wait for their
    results for ever; wop ends it WOP_STOP_GRACE seconds after the stop (10 unless said) and says so."""
    program = PROCESSES.replace("queue.get(timeout=60)", "queue.get()")
    env = {"START_METHOD": "spawn"}
    source = capture(tmp_path, program, env=env)
    (tmp_path / "agent.py").write_text(textwrap.dedent(program.replace('lookup(f"A-{number}")', 'lookup(f"B-{number}")')))
    done, report = replay(tmp_path, source, "--strict", env={**env, "WOP_STOP_GRACE": "1.5"})
    assert done.returncode == 1, done.stderr
    assert report["diverged"] is True and report["divergences"][0]["code"] == "event_payload_mismatch"
    assert [note["code"] for note in report["notes"]] == ["program_ended_after_stop"]
    assert "still running 1.5 s after the replay stopped it" in report["notes"][0]["detail"]
    for wrong in ("soon", "0", "-3"):
        done, report = replay(tmp_path, source, "--strict", env={**env, "WOP_STOP_GRACE": wrong}, name=f"bad{wrong}")
        assert (done.returncode, report) == (2, None), done.stderr
        assert done.stderr.strip().startswith(f"wop: error: WOP_STOP_GRACE='{wrong}': give the seconds") and \
            len(done.stderr.strip().splitlines()) == 1, done.stderr



KILLED_BEFORE_READING = """
import multiprocessing, os, time, uuid

def worker():
    open("waiting", "w").close()
    while not os.path.exists("go"):  # there only in the replay: the recorded worker was killed waiting
        time.sleep(0.01)
    uuid.uuid4()
    open("read", "w").close()
    time.sleep(60)

if __name__ == "__main__":
    child = multiprocessing.get_context("fork").Process(target=worker)
    child.start()
    for _ in range(3000):  # until the worker waits (the capture) or has read its value (the replay)
        if os.path.exists("read" if os.path.exists("go") else "waiting"):
            break
        time.sleep(0.01)
    if os.path.exists("go"):
        time.sleep(1)  # and its sender has sent the read (at the latest 0.2 s after it, format/flusher.py)
    child.terminate()  # as a pool's terminate() ends its workers, wherever they are
    child.join()
    forked = multiprocessing.get_context("fork").Process(target=print, args=("ended on its own",))
    forked.start()
    forked.join()
    print("done", child.exitcode)
"""


def test_a_value_read_where_the_recorded_process_was_killed_is_noted_not_a_divergence(tmp_path):
    """The recorded worker was killed before it read a value; today's gets further and reads it live. The capture
    cannot say what it would have read: a note, not nondeterministic_underflow (a spawned pool's worker terminated
    while importing openai, whose bedrock module reads os.urandom, failed strict replays now and then)."""
    source = capture(tmp_path, KILLED_BEFORE_READING)
    processes = CaptureReader(source).manifest["program"]["processes"]
    stopped = {tuple(process.get("mpIdentity") or ()): process.get("stopped") for process in processes}
    assert stopped == {(): None, (1,): True, (2,): None}, processes  # the program, the killed one, the one that ended
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    (tmp_path / "go").touch()
    done, report = replay(tmp_path, source, "--strict")
    assert done.returncode == 0, done.stderr
    assert report["diverged"] is False and program_output(done.stderr) == captured
    (note,) = [note for note in report["notes"] if note["code"] == "read_past_recorded_stop"]
    assert "uuid.uuid4 at agent.py" in note["detail"] and "killed" in note["detail"]


TERMINATED_POOL = """
import multiprocessing, random, time, uuid

def start():
    global TAG
    TAG = uuid.uuid4().hex  # each worker reads a value as it starts; terminate() kills some before it is sent

def square(number):
    time.sleep(0.05 * number if number < 3 else 60)  # the others are still running when the pool is terminated
    return number * number

if __name__ == "__main__":
    pool = multiprocessing.get_context("spawn").Pool(4, initializer=start)
    results = []
    for value in pool.imap_unordered(square, range(8)):
        results.append(value)
        if len(results) == 3:
            break
    # A worker killed while it sends a result holds the result queue's lock for good, and terminate() then waits
    # for ever (CPython issue 96995): none is sending by now.
    time.sleep(0.5)
    pool.terminate()
    pool.join()
    print("got", len(results), random.randint(0, 100))
"""


KILLED_AS_IT_STARTS = """
import multiprocessing, os, time, uuid

TAG = uuid.uuid4()  # read by every process, the spawned child too, as it imports this module
if __name__ == "__mp_main__" and os.path.exists("go"):
    open("read", "w").close()  # today's child has read its value

if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(60,))
    child.start()
    if os.path.exists("go"):  # there only in the replay: today's child lives until it has read its value
        for _ in range(3000):
            if os.path.exists("read"):
                break
            time.sleep(0.01)
        time.sleep(1)  # and its sender has sent the read (at the latest 0.2 s after it, format/flusher.py)
    child.kill()
    child.join()
    print("done", child.exitcode)
"""


def test_a_process_killed_before_it_said_anything_is_known_from_its_parent(tmp_path):
    """Killed right after it was started, the spawned child never reached wop: its parent's word puts it in the
    manifest, stopped, and today's child, which lives long enough to read a value, is paired with it."""
    source = capture(tmp_path, KILLED_AS_IT_STARTS)
    processes = CaptureReader(source).manifest["program"]["processes"]
    assert [(process.get("mpIdentity"), process.get("stopped")) for process in processes] == [(None, None), ([1], True)]
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    (tmp_path / "go").touch()
    done, report = replay(tmp_path, source, "--strict")
    assert done.returncode == 0, done.stderr
    assert report["diverged"] is False and program_output(done.stderr) == captured
    assert [note["code"] for note in report["notes"]] == ["read_past_recorded_stop"]

def test_a_terminated_pool_replays_exactly_whatever_its_killed_workers_had_read(tmp_path):
    """A spawned pool with an initializer that reads a uuid, terminated after three results: each worker is in the
    manifest (one killed before it could say so itself, from its parent), the killed ones `stopped`, and two strict replays exit 0, printing what the capture printed; the values a killed
    worker read that never reached the capture are read live and listed."""
    source = capture(tmp_path, TERMINATED_POOL)
    processes = CaptureReader(source).manifest["program"]["processes"]
    stopped = {tuple(process.get("mpIdentity") or ()): process.get("stopped") for process in processes}
    assert stopped.pop(()) is None and set(stopped) == {(1,), (2,), (3,), (4,)} and True in stopped.values(), processes
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    for number in range(2):
        done, report = replay(tmp_path, source, "--strict", name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False and program_output(done.stderr) == captured
        assert {live["site"]["function"] for live in report["liveValues"]} <= {"start"}
        assert {note["code"] for note in report["notes"]} <= {"read_past_recorded_stop"}

def test_tasks_submitted_from_racing_threads_are_still_served_their_calls(tmp_path):
    """Two threads submit to one executor at once: today's submit order, which numbers the tasks, is not the
    recorded one, and each call still finds its recorded result by content."""
    source = capture(tmp_path, """
        import concurrent.futures, random, threading, time
        import openwop_cli as wop

        @wop.tool
        def lookup(order):
            return f"{order}:{random.randint(0, 10**9)}"

        executor = concurrent.futures.ThreadPoolExecutor(4)
        futures = {}

        def submit(prefix):
            for number in range(4):
                time.sleep((time.perf_counter_ns() % 7) / 1000)
                futures[f"{prefix}-{number}"] = executor.submit(lookup, f"{prefix}-{number}")

        submitters = [threading.Thread(target=submit, args=(prefix,)) for prefix in "AB"]
        for thread in submitters:
            thread.start()
        for thread in submitters:
            thread.join()
        print(*sorted(future.result() for future in futures.values()), sep="\\n")
    """)
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    for number in range(3):
        done, report = replay(tmp_path, source, "--strict", name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False
        assert program_output(done.stderr) == captured


def test_gathered_tasks_each_running_work_in_the_default_executor_get_their_own_values(tmp_path):
    """Six gathered tasks each hand work to asyncio's default executor twice (to_thread, then run_in_executor),
    after a random pause: which task submits first changes from run to run. Before, the executor's calls were
    numbered in submission order over all tasks, so a task's second piece of work was served another's values and
    every strict replay failed at the output; now each task numbers its own."""
    source = capture(tmp_path, """
        import asyncio, random, time, uuid
        import openwop_cli as wop

        def blocking(name):
            time.sleep(random.random() / 50)
            return f"{name}:{wop.randint(0, 10**9, key='k')}:{uuid.uuid4().hex[:6]}"

        async def worker(name):
            await asyncio.sleep(random.random() / 50)
            first = await asyncio.to_thread(blocking, name)
            second = await asyncio.get_running_loop().run_in_executor(None, blocking, name + "'")
            return first, second

        async def main():
            for row in await asyncio.gather(*(worker(f"w{number}") for number in range(6))):
                print(*row)

        asyncio.run(main())
    """)
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 6
    assert_replays_exactly(tmp_path, source, captured)

THREADS_IN_PROCESSES = """
import concurrent.futures, multiprocessing, multiprocessing.pool, random, time, uuid
import openwop_cli as wop

@wop.tool
def search(query):
    return f"{query}:{random.randint(0, 10**9)}"

def part(owner, number):
    time.sleep(random.random() / 20)
    return f"{search(f'{owner}-{number}')} {uuid.uuid4().hex[:8]}"

def parts(owner):
    time.sleep(random.random() / 20)  # which process, and which pool worker, gets going first changes every run
    with concurrent.futures.ThreadPoolExecutor(2) as executor:
        found = list(executor.map(part, [owner] * 3, range(3)))
    with multiprocessing.pool.ThreadPool(2) as pool:
        return found + pool.starmap(part, [(owner, number) for number in range(3, 6)], chunksize=1)

def child(owner, queue):
    queue.put((owner, parts(owner)))

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    children = [context.Process(target=child, args=(owner, queue)) for owner in "AB"]
    for process in children:
        process.start()
    print(*sorted(queue.get(timeout=60) for _ in children), sep="\\n")
    for process in children:
        process.join()
    with context.Pool(2) as pool:
        print(*pool.map(parts, ["C", "D", "E", "F"], chunksize=1), sep="\\n")
"""


def test_an_executors_threads_belong_to_the_process_or_pool_task_that_submits_to_them(tmp_path):
    """Each Process, and each Pool task, runs a ThreadPoolExecutor and a ThreadPool of its own: their tasks belong to
    the process or pool task that submitted them. Before, every process's first executor's calls were `threads 1.N`
    (and a ThreadPool's `pool J.N`, J counting the jobs of the worker's earlier tasks, like a process Pool's) for all
    processes, and the replay mixed the processes' calls (out of order, or another process's results) every run."""
    source = capture(tmp_path, THREADS_IN_PROCESSES)
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 6
    assert_replays_exactly(tmp_path, source, captured)


POOLS_IN_PROCESSES = """
import concurrent.futures, multiprocessing, random, time
import openwop_cli as wop

@wop.tool
def search(query):
    return f"{query}:{random.randint(0, 10**9)}"

def part(owner, number):
    time.sleep(random.random() / 20)  # which worker, and which child's pool, gets going first changes every run
    return search(f"{owner}-{number}")

def child(owner, queue):
    context = multiprocessing.get_context("spawn")
    if owner == "A":
        with context.Pool(2) as pool:
            queue.put((owner, pool.starmap(part, [(owner, number) for number in range(3)], chunksize=1)))
    else:
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as executor:
            queue.put((owner, list(executor.map(part, [owner] * 3, range(3)))))

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    children = [context.Process(target=child, args=(owner, queue)) for owner in "ABC"]
    for process in children:
        process.start()
    print(*sorted(queue.get(timeout=60) for _ in children), sep="\\n")
    for process in children:
        process.join()
"""


def test_the_pools_of_different_processes_have_tasks_of_their_own(tmp_path):
    """One child runs a Pool, two others a ProcessPoolExecutor each: each numbers its tasks from 0, and a task's name
    says whose it is (`process 2/executor 1.0`). Before, the children's tasks shared names and the replay mixed their
    calls every run."""
    source = capture(tmp_path, POOLS_IN_PROCESSES)
    tasks = {event["origin"]["poolTask"] for event in CaptureReader(source) if event["type"] == "tool_call"}
    assert len(tasks) == 9 and {task.split("/")[0] for task in tasks} == {"process 1", "process 2", "process 3"}
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 3
    assert_replays_exactly(tmp_path, source, captured)


PROCESS_TREE = """
import multiprocessing, os, random, time, uuid
import openwop_cli as wop

STARTED = uuid.uuid4().hex[:8]  # read again, at import, by every spawned process: before it knows which it is

@wop.tool
def step(owner):
    return f"{owner}:{random.randint(0, 10**9)}"

def leaf(owner, queue):
    time.sleep(random.random() / 20)  # which process reaches wop first changes from run to run
    queue.put((owner, STARTED, step(owner)))

def branch(owner, queue):
    context = multiprocessing.get_context(os.environ["START_METHOD"])
    leaves = context.Queue()
    children = [context.Process(target=leaf, args=(f"{owner}.{number}", leaves)) for number in range(2)]
    for process in children:
        process.start()
    found = sorted(leaves.get(timeout=60) for _ in children)
    for process in children:
        process.join()
    queue.put((owner, STARTED, step(owner), found))

if __name__ == "__main__":
    context = multiprocessing.get_context(os.environ["START_METHOD"])
    queue = context.Queue()
    children = [context.Process(target=branch, args=(owner, queue)) for owner in "AB"]
    for process in children:
        process.start()
    print(*sorted(queue.get(timeout=60) for _ in children), sep="\\n")
    for process in children:
        process.join()
"""


@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_a_tree_of_processes_is_served_each_its_own_calls_and_values(tmp_path, start_method):
    """Each child starts children of its own; a spawned process reads the clock and uuids while it imports the main
    module, before its Process object (its identity) reaches it. Before, such a read paired it with a recorded process
    by argv and order alone, and the replay served siblings each other's calls most runs."""
    env = {"START_METHOD": start_method}
    source = capture(tmp_path, PROCESS_TREE, env=env)
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 2
    assert_replays_exactly(tmp_path, source, captured, env)


FORKS = """
import multiprocessing, os, random, time
import openwop_cli as wop

@wop.tool
def work(owner):
    return f"{owner}:{random.randint(0, 10**9)}"

def in_process(owner, queue):
    queue.put(work(owner))

def started(owner):
    queue = multiprocessing.Queue()
    process = multiprocessing.Process(target=in_process, args=(owner, queue))
    process.start()
    found = queue.get(timeout=60)
    process.join()
    return found

if __name__ == "__main__":
    multiprocessing.set_start_method(os.environ["START_METHOD"])
    read, write = os.pipe()
    forked = []
    for number in range(3):
        pid = os.fork()
        if pid == 0:
            time.sleep(random.random() / 20)  # which child reaches wop first changes from run to run
            line = f"fork {number} {work(f'fork {number}')} {started(f'process of fork {number}')}\\n"
            os.write(write, line.encode())
            os._exit(0)
        forked.append(pid)
    os.close(write)
    for pid in forked:
        os.waitpid(pid, 0)
    print(*sorted(os.read(read, 1 << 16).decode().splitlines()), sep="\\n")
    print(started("process of main"))
"""


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_forked_children_are_told_apart_by_their_place_under_their_parent(tmp_path, start_method):
    """os.fork children share their argv and reach wop in any order; each starts a Process whose multiprocessing
    identity, (1,), is also that of the Process main starts. Before, the forks were paired first come, and the
    Processes by that identity, most runs wrongly."""
    env = {"START_METHOD": start_method}
    source = capture(tmp_path, FORKS, env=env)
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 4
    assert_replays_exactly(tmp_path, source, captured, env)


QUEUE_WORKERS = """
import queue, random, threading, time, uuid
import openwop_cli as wop

@wop.tool
def lookup(item):
    return {"item": item, "price": random.randint(0, 10**9)}

work, results = queue.KIND(), queue.Queue()

def worker():
    while True:
        item = work.get()
        if item is None:
            break
        time.sleep((time.perf_counter_ns() % 7) / 1000)  # which worker takes which item changes from run to run
        token = uuid.uuid4().hex[:8]
        results.put((item, token, time.time(), lookup(item)["price"]))
        work.task_done()

threads = [threading.Thread(target=worker) for _ in range(3)]
for thread in threads:
    thread.start()
for item in range(12):
    work.put(item)
work.join()
for _ in threads:
    work.put(None)
for thread in threads:
    thread.join()
print(*sorted(results.get() for _ in range(12)), sep="\\n")
"""


@pytest.mark.parametrize("kind", ["Queue", "LifoQueue"])
def test_items_hand_rolled_workers_take_from_a_queue_are_served_their_values_whichever_worker_takes_them(
        tmp_path, kind):
    """Worker threads pull items from a queue the main thread fills: which worker takes which item is a race. Before,
    the values and calls were served per recorded thread, and a strict replay stopped on a uuid read by the wrong
    worker (`event_payload_mismatch`) in 3 runs of 3."""
    source = capture(tmp_path, QUEUE_WORKERS.replace("KIND", kind))
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 12
    tasks = {event["origin"].get("poolTask") for event in CaptureReader(source) if event["type"] == "tool_call"}
    assert len(tasks) == 12 and all(task.startswith("queue 1.") for task in tasks), tasks
    assert_replays_exactly(tmp_path, source, captured)


QUEUE_KINDS = """
import queue, random, threading, time, uuid
import openwop_cli as wop

@wop.tool
def lookup(item):
    return {"item": item, "price": random.randint(0, 10**9)}

class Deduplicating(queue.Queue):  # its own storage: an item already waiting is not put again
    def _init(self, maxsize):
        self.queue = []
    def _put(self, item):
        if item not in self.queue:
            self.queue.append(item)
    def _get(self):
        return self.queue.pop(0)
    def _qsize(self):
        return len(self.queue)

work, results = KIND(), queue.Queue()

def worker():
    while True:
        try:
            rank, item = work.get_nowait()
        except queue.Empty:
            return
        time.sleep((time.perf_counter_ns() % 7) / 1000)  # which worker takes which item changes from run to run
        results.put_nowait((item, uuid.uuid4().hex[:8], lookup(item)["price"]))

for item in range(12):
    work.put_nowait((item % 4, item))
work.put_nowait((0, 0))
threads = [threading.Thread(target=worker) for _ in range(3)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(*sorted(results.get() for _ in range(results.qsize())), sep="\\n")
"""


@pytest.mark.parametrize("kind", ["queue.PriorityQueue", "Deduplicating"])
def test_items_a_priority_queue_or_a_subclass_hands_out_with_nowait_are_served_their_values(tmp_path, kind):
    """Items put and taken with put_nowait and get_nowait, from a queue that takes them in its own order. Before,
    an item put with put_nowait was no task (its caller, queue.py, is not the program), nor was any item of a
    PriorityQueue or of a subclass with its own _put and _get (names were kept in put order), and a strict replay
    stopped on a call made by the wrong worker."""
    source = capture(tmp_path, QUEUE_KINDS.replace("KIND", kind))
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == (12 if kind == "Deduplicating" else 13)  # (0, 0) is put twice
    tasks = {event["origin"].get("poolTask") for event in CaptureReader(source) if event["type"] == "tool_call"}
    assert len(tasks) == len(captured) and all(task.startswith("queue 1.") for task in tasks), tasks
    assert_replays_exactly(tmp_path, source, captured)


QUEUE_EVENT_LOOPS = """
import asyncio, concurrent.futures, queue, random, threading, time, uuid
import openwop_cli as wop

@wop.tool
def lookup(item):
    return {"item": item, "price": random.randint(0, 10**9)}

async def handle(item):
    await asyncio.sleep((time.perf_counter_ns() % 7) / 1000)  # which worker takes which item changes each run
    token = uuid.uuid4().hex[:8]
    return item, token, lookup(f"{item} {token}")["price"]

work, results = queue.Queue(), queue.Queue()

def worker():
    while (item := work.get()) is not None:
        results.put(asyncio.run(handle(item)))

threads = [threading.Thread(target=worker) for _ in range(3)]
for thread in threads:
    thread.start()
for item in range(9):
    work.put(item)
for _ in threads:
    work.put(None)
for thread in threads:
    thread.join()
with concurrent.futures.ThreadPoolExecutor(3) as executor:
    done = list(executor.map(lambda item: asyncio.run(handle(item)), range(9, 15)))
print(*sorted([results.get() for _ in range(9)] + done), sep="\\n")
"""


def test_workers_running_event_loops_side_by_side_are_served_their_items_values(tmp_path):
    """Worker threads (hand-rolled, and an executor's) each run an event loop (asyncio.run) per item. Before, the
    values an item's coroutine read were keyed by its asyncio task's name, Task-N, N counting the process's tasks in
    whichever order the workers made them: a strict replay got live uuids and stopped on a tool call."""
    source = capture(tmp_path, QUEUE_EVENT_LOOPS)
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 15
    origins = {(event["origin"]["poolTask"].split(" from")[0], event["origin"]["task"])
               for event in CaptureReader(source) if event["type"] == "tool_call"}
    assert len(origins) == 15 and {task for _, task in origins} == {"handle#1"}, origins
    assert_replays_exactly(tmp_path, source, captured)


THREADS_EVENT_LOOPS = """
import asyncio, datetime, os, threading, time, uuid
import httpx  # the openai SDK's AsyncOpenAI calls through its AsyncClient, without the SDK's 1 s import

async def ask(client, thread):
    request_id = uuid.uuid4().hex[:8]
    reply = await client.post("/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": f"thread {thread} request {request_id} at {datetime.datetime.now():%H:%M:%S.%f}"}]})
    return reply.json()["choices"][0]["message"]["content"]

async def work(thread):
    async with httpx.AsyncClient(base_url=os.environ["BASE"], timeout=60) as client:
        return await asyncio.gather(*(ask(client, thread) for _ in range(2)))

answers = {}

def worker(thread):
    if thread != int(os.environ["FIRST"]):  # which thread starts its event loop first: up to the network, the machine
        time.sleep(0.3)
    answers[thread] = " ".join(asyncio.run(work(thread)))

threads = [threading.Thread(target=worker, args=(thread,)) for thread in range(2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
for thread in sorted(answers):
    print(thread, answers[thread])
"""


def test_threads_running_event_loops_side_by_side_are_served_their_own_values_and_calls(tmp_path):
    """Two threads the program starts each run an event loop (asyncio.run) whose tasks read the clock and a uuid into
    their prompts; which thread makes its tasks first differs from run to run. Before, their values and calls were
    keyed by the tasks' names, Task-N, N counting the process's tasks: the replay, its other thread first, served
    neither thread its values (live ones) and stopped at the first LLM call with a payload mismatch."""
    with FakeProvider() as provider:
        source = capture(tmp_path, THREADS_EVENT_LOOPS, env={"BASE": provider.url, "FIRST": "0"})
    origins = {(event["origin"]["thread"], event["origin"]["task"])
               for event in CaptureReader(source) if event["type"] == "llm_request"}
    assert origins == {(f"MainThread/worker#{thread}", f"work#1/ask#{task}") for thread in (1, 2) for task in (1, 2)}
    captured = sorted((tmp_path / "source.stdout").read_text().splitlines())
    assert len(captured) == 2
    for number in range(2):  # offline, the other thread first
        done, report = replay(tmp_path, source, "--strict", env={"BASE": provider.url, "FIRST": "1"},
                              name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False and report["liveValues"] == []
        assert sorted(program_output(done.stderr)) == captured


CHANGED_TASK = """
import multiprocessing, random, time
import openwop_cli as wop

@wop.tool
def lookup(order):
    return f"{order}:{random.randint(0, 10**9)}"

def task(number):
    time.sleep(random.random() / 20)
    if number == 2:
        return "skipped"
    return lookup(f"A-{number}")

if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print(*pool.map(task, range(4), chunksize=1), sep="\\n")
"""


@pytest.mark.parametrize("policy", ["--strict", "--lenient"])
def test_a_call_a_pool_task_did_not_make_is_reported_as_unexpected_not_as_another_tasks(tmp_path, policy):
    """Today task 2 makes a call where the capture's task 2 made none. Before, the report compared it with the first
    recorded call of that tool of any pool task (another worker's, served there too), and a lenient replay served it
    that task's answer."""
    source = capture(tmp_path, CHANGED_TASK)
    changed = CHANGED_TASK.replace('return "skipped"', 'return lookup("new")')
    (tmp_path / "agent.py").write_text(textwrap.dedent(changed))
    done, report = replay(tmp_path, source, policy)
    assert done.returncode == 1, done.stderr
    codes = [divergence["code"] for divergence in report["divergences"]]
    assert codes[0] == "event_unexpected" and set(codes[1:]) <= {"output_mismatch"}, codes  # it printed another answer
    assert report["divergences"][0]["observed"]["data"]["args"] == {"order": "new"}


WAITING_CHILD = """
import multiprocessing, os, random
import openwop_cli as wop

@wop.tool
def work(owner):
    return f"{owner}:{random.randint(0, 10**9)}"

def first(done, results):
    results.put(work("A-1"))
    done.set()

def second(done, results):
    with open("second.pid", "w") as file:
        file.write(str(os.getpid()))
    results.put(work("B"))
    done.wait()  # for ever, once the replay has stopped `first`

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    done, results = context.Event(), context.Queue()
    processes = [context.Process(target=target, args=(done, results)) for target in (second, first)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    print(sorted(results.get() for _ in processes))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the process table in /proc")
def test_the_processes_of_a_program_the_strict_replay_ended_are_ended_too(tmp_path):
    """The replay stops `first`; `second` waits for it for ever, and the program joins `second`. Ending the program's
    main process alone left `second` running after the replay had finished (a stray process in CI)."""
    source = capture(tmp_path, WAITING_CHILD)
    (tmp_path / "agent.py").write_text(textwrap.dedent(WAITING_CHILD.replace('work("A-1")', 'work("A-2")')))
    done, report = replay(tmp_path, source, "--strict", env={"WOP_STOP_GRACE": "1"})
    assert done.returncode == 1, done.stderr
    assert [note["code"] for note in report["notes"]] == ["program_ended_after_stop"]
    second = int((tmp_path / "second.pid").read_text())
    running = _running(second)
    if running:
        os.kill(second, signal.SIGKILL)
    assert not running


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


SUBPROCESS_FIRST = """
import multiprocessing, random, subprocess, sys
import openwop_cli as wop

@wop.tool
def work(owner):
    return f"{owner}:{random.randint(0, 10**9)}"

def child(owner, queue):  # its first recorded call comes after its own child's
    found = subprocess.run([sys.executable, "tool.py", owner], capture_output=True, text=True).stdout.strip()
    queue.put((owner, found, work(owner)))

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    children = [context.Process(target=child, args=(owner, queue)) for owner in "ABC"]
    for process in children:
        process.start()
    print(*sorted(queue.get(timeout=60) for _ in children), sep="\\n")
    for process in children:
        process.join()
"""


def test_a_process_whose_child_reaches_wop_first_is_still_paired_by_its_identity(tmp_path):
    """Each spawned Process runs a Python subprocess before its own first call: the subprocess asks for its pairing
    first, while wop knows its parent only by argv. Before, that pairing took the parent's for good (by argv and order),
    and the parent, asking later with its identity, got a sibling's recorded calls."""
    (tmp_path / "tool.py").write_text(textwrap.dedent("""
        import random, sys
        import openwop_cli as wop

        @wop.tool
        def sub_work(owner):
            return f"{owner}:{random.randint(0, 10**9)}"

        print(sub_work(sys.argv[1]))
    """))
    source = capture(tmp_path, SUBPROCESS_FIRST)
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 3
    for number in range(2):
        done, report = replay(tmp_path, source, "--strict", name=f"replay-{number}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False
        assert program_output(done.stderr) == captured


MORE_WORKERS = """
import multiprocessing, os
import openwop_cli as wop

def task(number):
    drawn = wop.randint(0, 10**9)
    barrier.wait()  # each worker takes a task: each records
    return number, drawn

def hold(shared):
    global barrier
    barrier = shared

if __name__ == "__main__":
    workers = int(os.environ["WORKERS"])  # os.cpu_count() on another machine
    context = multiprocessing.get_context(os.environ["START_METHOD"])
    barrier = context.Barrier(workers)
    with context.Pool(workers, initializer=hold, initargs=(barrier,)) as pool:
        print(*pool.map(task, range(2), chunksize=1), sep="\\n")
    print("after the pool", wop.randint(0, 10**9))
"""


@pytest.mark.parametrize("start_method", ["fork", "forkserver"])
def test_pool_workers_the_capture_has_no_recorded_self_of_never_take_the_main_processs_place(tmp_path, start_method):
    """A pool of more workers than when it was recorded (its size os.cpu_count() on another machine): a worker whose
    identity no recorded process has is paired with no recorded process. Before, once the recorded workers were taken,
    one took the main process's place, and the main process's own call after the pool was served nothing."""
    source = capture(tmp_path, MORE_WORKERS, env={"WORKERS": "1", "START_METHOD": start_method})
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 3
    done, report = replay(tmp_path, source, "--strict", env={"WORKERS": "2", "START_METHOD": start_method})
    assert done.returncode == 0, done.stderr
    assert report["diverged"] is False
    assert program_output(done.stderr) == captured


FORK_AFTER_A_POOL = """
import multiprocessing, os
import openwop_cli as wop

def task(number):
    drawn = wop.randint(0, 10**9)
    barrier.wait()  # each worker takes a task: each asks for its pairing
    return number, drawn

def hold(shared):
    global barrier
    barrier = shared

if __name__ == "__main__":
    workers = int(os.environ["WORKERS"])  # which workers run a task changes from run to run
    context = multiprocessing.get_context("spawn")  # its workers are no forks: the forked child is -1 in every run
    barrier = context.Barrier(workers)
    with context.Pool(workers, initializer=hold, initargs=(barrier,)) as pool:
        print(*pool.map(task, range(2), chunksize=1), sep="\\n", flush=True)
    child = os.fork()
    if child == 0:
        print("forked child", wop.randint(0, 10**9), flush=True)
        os._exit(0)
    os.waitpid(child, 0)
    print("after the child", wop.randint(0, 10**9))
"""


def test_a_pool_worker_the_capture_has_no_recorded_self_of_never_takes_a_later_processs_place(tmp_path):
    """A pool worker that ran no task when recorded, and so has no recorded self, runs one today: it is served its
    task's calls and takes no recorded process's place. Before, it took the first recorded Process not yet taken, the
    forked child started after the pool, which then found its recorded self taken and was served nothing."""
    source = capture(tmp_path, FORK_AFTER_A_POOL, env={"WORKERS": "1"})
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 4
    done, report = replay(tmp_path, source, "--strict", env={"WORKERS": "2"})
    assert done.returncode == 0, done.stderr
    assert report["diverged"] is False
    assert program_output(done.stderr) == captured


ONE_TASK_PER_WORKER = """
import concurrent.futures, multiprocessing, os, random, threading
import openwop_cli as wop

@wop.tool
def work(owner):
    return f"{owner}:{random.randint(0, 10**9)}"

def one_task_each(number):
    if number == 0:
        first_taken.set()
    both_taken.wait()  # each worker runs one task

def hold(event, barrier):
    global first_taken, both_taken
    first_taken, both_taken = event, barrier
    if not multiprocessing.current_process().name.endswith(os.environ["FIRST"]):
        first_taken.wait()  # the worker FIRST names takes task 0, the other task 1

def in_thread(owner, results):
    results.append(work(f"thread of {owner}"))
"""  # what the programs below share: a tool call, and a pool of two whose workers run one task each

IN_A_POOL_OF_TWO = """
if __name__ == "__main__":
    context = multiprocessing.get_context(os.environ["START_METHOD"])
    first_taken, both_taken = context.Event(), context.Barrier(2)
    with context.Pool(2, initializer=hold, initargs=(first_taken, both_taken)) as pool:
        print(*pool.map(task, range(2), chunksize=1), sep="\\n")
"""  # the programs' main: their tasks mapped by a multiprocessing.Pool of two


FORK_IN_A_TASK = ONE_TASK_PER_WORKER + """
def task(number):
    one_task_each(number)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        results = [work(f"child of {number}")]
        helper = threading.Thread(target=in_thread, args=(f"child of {number}", results), name="helper")
        helper.start()
        helper.join()
        os.write(write, " ".join(results).encode())
        os._exit(0)
    os.waitpid(child, 0)
    return number, work(f"task {number}"), os.read(read, 1 << 16).decode()
""" + IN_A_POOL_OF_TWO


def replays_whichever_worker_runs_each_task(tmp_path, program: str, start_method: str) -> None:
    """Capture program with each of its two pool workers running one task (FIRST names the one that takes task 0),
    then replay it strictly with the tasks in the same workers and swapped: no divergence, the same output."""
    source = capture(tmp_path, program, env={"START_METHOD": start_method, "FIRST": "1"})
    captured = (tmp_path / "source.stdout").read_text().splitlines()
    assert len(captured) == 2
    for first in ("1", "2"):
        env = {"START_METHOD": start_method, "FIRST": first}
        done, report = replay(tmp_path, source, "--strict", env=env, name=f"replay-{first}")
        assert done.returncode == 0, done.stderr
        assert report["diverged"] is False and report["score"]["score"] == 1.0
        assert program_output(done.stderr) == captured


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_child_forked_in_a_pool_task_is_served_its_own_calls_whichever_worker_runs_the_task(tmp_path, start_method):
    """A child forked while a pool task runs makes calls of its own, its thread too, and its worker makes the task's
    after it; replayed with the tasks in the workers that ran them and swapped. Before, the child and its worker shared
    the task's calls as one ordered stream that neither process saw the other serve (every replay diverged: calls out
    of order), and the child, numbered among its worker's forks, was paired with the other task's child when the tasks
    swapped workers (its thread was served nothing)."""
    replays_whichever_worker_runs_each_task(tmp_path, FORK_IN_A_TASK, start_method)


THREAD_IN_A_TASK = ONE_TASK_PER_WORKER + """
def task(number):
    one_task_each(number)
    results = []
    helper = threading.Thread(target=in_thread, args=(number, results), name="helper")
    helper.start()
    helper.join()
    return number, work(f"task {number}"), results[0]
""" + IN_A_POOL_OF_TWO


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_thread_started_in_a_pool_task_is_served_its_own_calls_whichever_worker_runs_the_task(tmp_path, start_method):
    """A thread a pool task starts makes a call, and the task one after it; replayed with the tasks in the workers
    that ran them and swapped. Before, the thread's calls were its worker's (its pid and thread name), so with the
    tasks swapped each thread was served the other task's call (event_payload_mismatch)."""
    replays_whichever_worker_runs_each_task(tmp_path, THREAD_IN_A_TASK, start_method)


PROCESS_IN_A_TASK = ONE_TASK_PER_WORKER + """
def in_process(owner, queue):
    queue.put(work(f"process of {owner}"))

def task(number):
    one_task_each(number)
    queue = context.Queue()
    process = context.Process(target=in_process, args=(number, queue), name="helper")
    process.start()
    found = queue.get()
    process.join()
    return number, work(f"task {number}"), found

context = multiprocessing.get_context(os.environ["START_METHOD"])

if __name__ == "__main__":
    first_taken, both_taken = context.Event(), context.Barrier(2)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context, initializer=hold,
                                                initargs=(first_taken, both_taken)) as pool:
        print(*pool.map(task, range(2)), sep="\\n")
"""


@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
def test_a_process_started_in_a_pool_task_is_served_its_own_calls_whichever_worker_runs_the_task(tmp_path,
                                                                                                 start_method):
    """A multiprocessing.Process an executor's task starts makes a call, and the task one after it; replayed with the
    tasks in the workers that ran them and swapped. Before, a spawned (or forkserver) Process was numbered among its
    worker's Processes and ran no task, so with the tasks swapped each was paired with the other task's Process and
    served its call (event_payload_mismatch); a forked one ran the task's fork and was served its own."""
    replays_whichever_worker_runs_each_task(tmp_path, PROCESS_IN_A_TASK, start_method)
