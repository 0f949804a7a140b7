"""aiohttp calls to a loopback server: plain, captured by wop, replayed by wop.

Targets (issue 14): capture adds <= 10% to a loopback call; a replayed call is faster than the plain
call. Two kinds of call: a JSON POST to a plain API (recorded as an `http` tool call, as in
bench_http.py) and an OpenAI chat completion (an LLM call: also the recipe's cache key, and a flush
of the request to `wop capture` before it is sent, so a crash mid-call leaves it on record). The
server (aiohttp.web) runs in its own process; "plain" is the same client program in a process
without wop; each program times its own calls after a warm-up (wall clock, and its own CPU time);
plain, captured and replayed runs are interleaved ROUNDS times. On a shared machine the best round
is the figure to read, the median shows the noise. Run: python bench/bench_aiohttp.py [REQUESTS] [ROUNDS]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SERVER = r'''
import json, sys
from aiohttp import web

async def orders(request):
    return web.json_response({"ok": True, "echo": await request.json()})

async def chat(request):
    body = await request.json()
    question = body["messages"][-1]["content"]
    return web.json_response({"id": "chatcmpl-bench", "object": "chat.completion", "created": 1763875573,
                              "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": "answer to " + question}}],
                              "usage": {"prompt_tokens": 61, "completion_tokens": 18, "total_tokens": 79}})

app = web.Application()
app.router.add_post("/v1/chat/completions", chat)
app.router.add_post("/orders", orders)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=lambda *a: print("ready", flush=True))
'''

CLIENT = r'''
import asyncio, json, sys, time
import aiohttp

url, count = sys.argv[1], int(sys.argv[2])
system = "You are a concise support agent for Acme. Answer in one sentence. " * 3

def body(index):
    if url.endswith("/orders"):
        return {"order": f"A-{index}", "items": [1, 2, 3], "note": system}
    return {"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 200, "messages": [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Where is my order A-{index}? It was due yesterday and I need it for a trip."}]}

async def main():
    async with aiohttp.ClientSession() as session:
        for index in range(20):
            async with session.post(url, json=body(index)) as response:
                await response.json()
        start, cpu = time.perf_counter(), time.process_time()
        for index in range(20, 20 + count):
            async with session.post(url, json=body(index)) as response:
                await response.json()
        return {"us": (time.perf_counter() - start) / count * 1e6, "cpu": (time.process_time() - cpu) / count * 1e6}

print(json.dumps(asyncio.run(main())), file=sys.stderr)
'''


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def timed(command: list[str], env: dict) -> dict:
    """The client's own figures: wall-clock and CPU microseconds per request."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(next(line for line in done.stderr.splitlines() if line.startswith('{"us"')))


def measure(root: Path, env: dict, url: str, count: int, rounds: int) -> dict:
    client = [sys.executable, str(root / "client.py"), url, str(count)]
    wop = [sys.executable, "-m", "openwop_cli"]
    name = url.rsplit("/", 1)[1]
    subprocess.run([*wop, "capture", "--out", str(root / f"{name}-source"), "--", *client], env=env,
                   capture_output=True, check=True)
    runs: dict[str, list[dict]] = {"plain": [], "captured": [], "replayed": []}
    for index in range(rounds):
        runs["plain"].append(timed(client, env))
        runs["captured"].append(timed([*wop, "capture", "--out", str(root / f"{name}-capture{index}"), "--", *client],
                                      env))
        runs["replayed"].append(timed([*wop, "replay", str(root / f"{name}-source"), "--out",
                                       str(root / f"{name}-replay{index}")], env))
    return runs


def report(title: str, runs: dict, count: int, rounds: int) -> None:
    """Per kind of run: the best round's wall time (what a quiet machine shows), the median round's, and the
    client process's CPU time per request (its own work, whatever else the machine runs), each against plain."""
    print(f"{title}, {count} requests x {rounds} rounds (best / median round, client CPU):")
    plain = {"best": min(run["us"] for run in runs["plain"]), "median": statistics.median(run["us"] for run in runs["plain"]),
             "cpu": statistics.median(run["cpu"] for run in runs["plain"])}
    print(f"  plain (no wop)  {plain['best']:.0f} / {plain['median']:.0f} us, cpu {plain['cpu']:.0f} us")
    for kind, label, target in (("captured", "wop capture", "target <= 1.10"), ("replayed", "wop replay", "target < 1")):
        best = min(run["us"] for run in runs[kind])
        median = statistics.median(run["us"] for run in runs[kind])
        cpu = statistics.median(run["cpu"] for run in runs[kind])
        print(f"  {label:<15} {best:.0f} / {median:.0f} us, cpu {cpu:.0f} us: {best / plain['best']:.3f}x / "
              f"{median / plain['median']:.3f}x, cpu {cpu / plain['cpu']:.3f}x plain ({target})")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / "server.py").write_text(SERVER)
        (root / "client.py").write_text(CLIENT)
        port = free_port()
        server = subprocess.Popen([sys.executable, str(root / "server.py"), str(port)], stdout=subprocess.PIPE, text=True)
        server.stdout.readline()
        env = {**os.environ, "WOP_HOME": str(root / "home")}
        try:
            api = measure(root, env, f"http://127.0.0.1:{port}/orders", count, rounds)
            llm = measure(root, env, f"http://127.0.0.1:{port}/v1/chat/completions", count, rounds)
        finally:
            server.terminate()
            server.wait()
    report("aiohttp JSON POST to an API (http tool call)", api, count, rounds)
    report("aiohttp OpenAI chat completion (LLM call)", llm, count, rounds)


if __name__ == "__main__":
    main()
