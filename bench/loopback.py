"""Shared by the HTTP benchmarks: a loopback provider in its own process, and client programs timed by themselves.

The server (aiohttp.web) answers a JSON POST to a plain API (`/orders`: recorded as an `http` tool call) and an
OpenAI chat completion (`/v1/chat/completions`: an LLM call). Each client program times its own calls after a
warm-up (wall clock, and its own CPU time) and prints them as one JSON line on stderr; the bench times the whole
process as well. Runs of each kind are interleaved, so a noisy moment hits every kind alike.
"""

import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER = r'''
import sys
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
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=lambda *a: print("ready", flush=True),
            access_log=None)
'''

# what every client program sends: body(index) for the URL it was given
BODIES = r'''
system = "You are a concise support agent for Acme. Answer in one sentence. " * 3

def body(url, index):
    if url.endswith("/orders"):
        return {"order": f"A-{index}", "items": [1, 2, 3], "note": system}
    return {"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 200, "messages": [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Where is my order A-{index}? It was due yesterday and I need it for a trip."}]}
'''


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def loopback_server(root: Path) -> Iterator[str]:
    """The provider, in a process of its own, for as long as the block runs: yields its base URL."""
    (root / "server.py").write_text(SERVER)
    port = free_port()
    server = subprocess.Popen([sys.executable, str(root / "server.py"), str(port)], stdout=subprocess.PIPE, text=True)
    try:
        server.stdout.readline()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


def timed(command: list[str], env: dict, figures_file: Path | None = None) -> dict:
    """The client's own figures (us, cpu: microseconds per request) and the whole process's wall seconds; the
    client prints its figures as a JSON line on stderr, or writes them to figures_file when one is given."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:6])} ... exited {done.returncode}:\n{done.stdout[-1000:]}"
                         f"{done.stderr[-2000:]}")
    lines = figures_file.read_text().splitlines() if figures_file else done.stderr.splitlines()
    figures = json.loads(next(line for line in lines if line.startswith('{"us"')))
    return {**figures, "process": wall}


def measure(root: Path, env: dict, url: str, count: int, rounds: int,
            also: Callable[[int, list[str], str], dict[str, dict]] | None = None) -> dict[str, list[dict]]:
    """ROUNDS interleaved runs of root/client.py against url: plain, under `wop capture`, under `wop replay` of a
    capture made first, and whatever `also(round, client command, name)` runs in the same round."""
    client = [sys.executable, str(root / "client.py"), url, str(count)]
    wop = [sys.executable, "-m", "openwop_cli"]
    name = url.rsplit("/", 1)[1]
    source = root / f"{name}-source"
    subprocess.run([*wop, "capture", "--out", str(source), "--", *client], env=env, capture_output=True, check=True)
    runs: dict[str, list[dict]] = {"plain": [], "wop capture": [], "wop replay": []}
    for index in range(rounds):
        runs["plain"].append(timed(client, env))
        runs["wop capture"].append(timed([*wop, "capture", "--out", str(root / f"{name}-capture{index}"), "--",
                                          *client], env))
        runs["wop replay"].append(timed([*wop, "replay", str(source), "--no-output", "--out", str(root / f"{name}-replay{index}")],
                                        env))
        for kind, run in (also(index, client, name) if also else {}).items():
            runs.setdefault(kind, []).append(run)
    return runs


def report(title: str, runs: dict[str, list[dict]], targets: dict[str, str]) -> None:
    """Per kind of run: the best and the median round's wall time per request, the client's own CPU time per
    request, and the whole process, each against the plain (no wop) runs of the same bench."""
    rounds = len(runs["plain"])
    print(f"{title} ({rounds} rounds; per request: best / median round, client CPU; whole process median):")
    plain = _figures(runs["plain"])
    print(f"  {'plain (no wop)':<22} {plain['best']:7.0f} / {plain['median']:5.0f} us, cpu {plain['cpu']:4.0f} us, "
          f"process {plain['process'] * 1000:5.0f} ms")
    for kind, figures in ((kind, _figures(found)) for kind, found in runs.items() if kind != "plain"):
        print(f"  {kind:<22} {figures['best']:7.0f} / {figures['median']:5.0f} us, cpu {figures['cpu']:4.0f} us, "
              f"process {figures['process'] * 1000:5.0f} ms: {figures['best'] / plain['best']:.3f}x / "
              f"{figures['median'] / plain['median']:.3f}x, cpu {figures['cpu'] / plain['cpu']:.3f}x plain"
              + (f" ({targets[kind]})" if kind in targets else ""))
    spread = [run["us"] for run in runs["plain"]]
    print(f"  spread of the plain rounds: {min(spread):.0f}..{max(spread):.0f} us")


def _figures(runs: list[dict]) -> dict:
    return {"best": min(run["us"] for run in runs), "median": statistics.median(run["us"] for run in runs),
            "cpu": statistics.median(run["cpu"] for run in runs),
            "process": statistics.median(run["process"] for run in runs)}
