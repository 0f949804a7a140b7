"""aiohttp calls to a loopback provider: plain, captured by wop, replayed by wop.

Like for like, as bench_http.py: the provider (aiohttp.web) runs in its own process; "plain" is the same client
program in a process without wop; each program times its own calls after a warm-up (wall clock, and its own CPU
time) and the bench times each whole process; plain, captured and replayed runs are interleaved ROUNDS times.
Two kinds of call: a JSON POST to a plain API (an `http` tool call) and an OpenAI chat completion (an LLM call).

Targets (issue 20): capture adds <= 5% per call over plain; a replayed call is faster than a plain one.
On a shared machine the best round is the figure to read, the median shows the noise.
Run: python bench/bench_aiohttp.py [REQUESTS] [ROUNDS]
"""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import user_environment  # noqa: E402
from loopback import BODIES, loopback_server, measure, report  # noqa: E402

CLIENT = BODIES + r'''
import asyncio, json, sys, time
import aiohttp

url, count = sys.argv[1], int(sys.argv[2])

async def main():
    async with aiohttp.ClientSession() as session:
        for index in range(20):
            async with session.post(url, json=body(url, index)) as response:
                await response.json()
        start, cpu = time.perf_counter(), time.process_time()
        for index in range(20, 20 + count):
            async with session.post(url, json=body(url, index)) as response:
                await response.json()
        return {"us": (time.perf_counter() - start) / count * 1e6, "cpu": (time.process_time() - cpu) / count * 1e6}

print(json.dumps(asyncio.run(main())), file=sys.stderr)
'''


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    targets = {"wop capture": "target <= 1.05", "wop replay": "target < 1"}
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / "client.py").write_text(CLIENT)
        env = {**user_environment(), "WOP_HOME": str(root / "home")}
        with loopback_server(root) as base:
            api = measure(root, env, f"{base}/orders", count, rounds)
            llm = measure(root, env, f"{base}/v1/chat/completions", count, rounds)
    report(f"aiohttp JSON POST to an API (http tool call), {count} requests", api, targets)
    report(f"aiohttp OpenAI chat completion (LLM call), {count} requests", llm, targets)


if __name__ == "__main__":
    main()
