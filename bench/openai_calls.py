"""CALLS sequential chat completions through the real `openai` SDK, timing its own loop.

Run: python bench/openai_calls.py BASE_URL CALLS. The loop of CALLS calls is timed with time.perf_counter (and its
CPU time with time.process_time), so interpreter start-up, imports and building the client are not in the figure;
the figures ({"us", "cpu"}: microseconds per call; "calls", "seconds") go as one JSON line to the file
BENCH_FIGURES names, or to stderr without it (a file keeps them out of the output `wop replay --strict` compares).
BENCH_VCR=MODE:MATCHING:CASSETTE runs the loop inside a VCR.py cassette: MODE record (a new cassette) or play (one
recorded before), MATCHING default (VCR.py's own match_on) or strict (method, scheme, host, port, path, query and
body); record_mode "once" either way, so a playback serves every call from the cassette or fails. Each answer is
checked, so a run that was served the wrong one stops.
"""

import json
import os
import sys
import time
from contextlib import nullcontext

import openai

SYSTEM = "You are a concise support agent for Acme. Answer in one sentence. " * 3
STRICT_MATCHING = ["method", "scheme", "host", "port", "path", "query", "body"]


def cassette(setting: str | None):
    """The VCR.py cassette BENCH_VCR asks for, or a context that does nothing."""
    if not setting:
        return nullcontext()
    import vcr

    _mode, matching, path = setting.split(":", 2)
    options = {"match_on": STRICT_MATCHING} if matching == "strict" else {}
    return vcr.VCR(record_mode="once", **options).use_cassette(path)


def ask(client: openai.OpenAI, index: int) -> None:
    """One chat completion about order A-index; stops the run if the answer is not about that order."""
    question = f"Where is my order A-{index}? It was due yesterday and I need it for a trip."
    completion = client.chat.completions.create(
        model="gpt-4o-mini", temperature=0.2, max_tokens=200,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])
    if not completion.choices[0].message.content.endswith(question):
        raise SystemExit(f"call {index} was answered {completion.choices[0].message.content!r}")


def main() -> None:
    base_url, calls = sys.argv[1], int(sys.argv[2])
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="sk-bench", max_retries=0)
    with cassette(os.environ.get("BENCH_VCR")):
        start, cpu = time.perf_counter(), time.process_time()
        for index in range(calls):
            ask(client, index)
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    figures = json.dumps({"us": seconds / calls * 1e6, "cpu": cpu_seconds / calls * 1e6, "calls": calls,
                          "seconds": seconds})
    if os.environ.get("BENCH_FIGURES"):
        with open(os.environ["BENCH_FIGURES"], "w") as out:
            out.write(figures + "\n")
    else:
        print(figures, file=sys.stderr)


if __name__ == "__main__":
    main()
