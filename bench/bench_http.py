"""httpx calls to a loopback provider: plain, captured by wop, replayed by wop, and recorded/played by VCR.py.

Like for like: the provider runs in a process of its own (bench/loopback.py); "plain" is the same client program
in a process without wop; VCR.py runs inside that program with its default matching (method, scheme, host, port,
path, query) and with body matching added (its strictest useful setting). Two kinds of call: a JSON POST to a
plain API (an `http` tool call) and an OpenAI chat completion through httpx (an LLM call). Each program times its
own calls after a warm-up; the bench also times each whole process. Runs are interleaved ROUNDS times. Python
writes and reuses its bytecode caches, as on a user's machine (common.user_environment): otherwise every run
would compile wop's modules again, some of them while the program is being timed.

Targets (issue 20): capture adds <= 5% per call over plain; a replayed call is faster than a plain one.
Run: python bench/bench_http.py [REQUESTS] [ROUNDS] [all|wop]   (wop: plain, capture and replay rows only;
vcrpy from the bench extra for the VCR.py rows)
"""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import user_environment  # noqa: E402
from loopback import BODIES, loopback_server, measure, report, timed  # noqa: E402

CLIENT = BODIES + r'''
import json, os, sys, time
from contextlib import nullcontext
import httpx

url, count = sys.argv[1], int(sys.argv[2])
vcr_mode = os.environ.get("BENCH_VCR")  # record|play:default|body:CASSETTE
if vcr_mode:
    import vcr
    mode, matching, cassette = vcr_mode.split(":", 2)
    match_on = ["method", "scheme", "host", "port", "path", "query"] + (["body"] if matching == "body" else [])
    context = vcr.use_cassette(cassette, record_mode="all" if mode == "record" else "none", match_on=match_on)
else:
    context = nullcontext()

with context, httpx.Client() as client:
    for index in range(20):
        client.post(url, json=body(url, index)).json()
    start, cpu = time.perf_counter(), time.process_time()
    for index in range(20, 20 + count):
        client.post(url, json=body(url, index)).json()
    figures = {"us": (time.perf_counter() - start) / count * 1e6, "cpu": (time.process_time() - cpu) / count * 1e6}
print(json.dumps(figures), file=sys.stderr)
'''


def vcr_runs(root: Path, env: dict):
    """VCR.py recording then playing back a cassette, with its default matching and with body matching."""
    def run(index: int, client: list[str], name: str) -> dict[str, dict]:
        runs = {}
        for matching, suffix in (("default", ""), ("body", " +body")):
            cassette = root / f"{name}-{matching}-{index}.yaml"
            for mode in ("record", "play"):
                runs[f"VCR.py {mode}{suffix}"] = timed(client, {**env, "BENCH_VCR": f"{mode}:{matching}:{cassette}"})
        return runs

    return run


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    only_wop = len(sys.argv) > 3 and sys.argv[3] == "wop"
    try:
        import vcr  # noqa: F401

        with_vcr = not only_wop
    except ImportError:
        with_vcr = False
    targets = {"wop capture": "target <= 1.05", "wop replay": "target < 1"}
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / "client.py").write_text(CLIENT)
        env = {**user_environment(), "WOP_HOME": str(root / "home")}
        env.pop("BENCH_VCR", None)
        with loopback_server(root) as base:
            also = vcr_runs(root, env) if with_vcr else None
            api = measure(root, env, f"{base}/orders", count, rounds, also)
            llm = measure(root, env, f"{base}/v1/chat/completions", count, rounds, also)
    report(f"httpx JSON POST to an API (http tool call), {count} requests", api, targets)
    report(f"httpx OpenAI chat completion (LLM call), {count} requests", llm, targets)
    if not with_vcr and not only_wop:
        print("VCR.py: not installed (pip install -e '.[bench]') - its rows are left out")


if __name__ == "__main__":
    main()
