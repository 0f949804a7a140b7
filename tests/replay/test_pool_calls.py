"""Tool and LLM calls made in multiprocessing pool tasks: each task is served its own recorded calls, in their
order, by whichever worker (process or thread) runs it in the replay."""

import pytest

from openwop_cli.format.reader import CaptureReader
from tests.fake_provider import FakeProvider
from tests.runtime.test_ambient import capture, program_output, replay

pytest.importorskip("openai")

POOL_CALLS = """
import concurrent.futures, multiprocessing, multiprocessing.pool, os, random, time
import openai
import openwop_cli as wop

@wop.tool
def lookup(order):
    time.sleep(random.random() / 50)  # which worker takes which task then changes from run to run
    return f"{order}:{random.randint(0, 10**9)}"

def task(number):
    shared = lookup("shared")  # the same call in every task, a different recorded result in each
    own = lookup(f"A-{number}")
    client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-0123456789abcdef", max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "user", "content": f"{shared} {own}"}])
    return f"{number} {reply.choices[0].message.content}"

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
