"""What comparing the whole request costs a served LLM call: replay.compare.request_difference on a 10 KB request
that matches its recording (the common case), against the orjson parse of that recorded line alone (what any look
at the recorded request costs), in the same run. Two ways in: with the body's bytes as the SDK sent them (an HTTP
adapter has them; httpx writes `json=` compactly, as the openai and anthropic SDKs send it), and with only the
parsed body (a program calling wop.llm_call with a dict): a served call keys it first, and the redactor's prefilter
writes its JSON on the way (runtime.providers.keyed_request), which the comparison then looks for; the same
comparison with nothing written before (the body written again) is printed too, for scale.

Target (issue 32): the full-request comparison adds <= 5 us to a served call with a 10 KB request.
Run: python bench/bench_compare.py [REPEATS]
"""

import statistics
import sys
import timeit
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from openwop_cli.format.redact import Redactor  # noqa: E402
from openwop_cli.replay.compare import request_difference  # noqa: E402
from openwop_cli.runtime.providers import keyed_request  # noqa: E402


def request_of(size: int) -> dict:
    """An OpenAI chat request of at least size bytes as JSON: a long conversation and a few tools."""
    tools = [{"type": "function", "function": {"name": f"lookup_{n}", "description": "Look an order up by its id.",
                                               "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}
             for n in range(5)]
    request = {"model": "gpt-4o-mini", "messages": [], "tools": tools, "temperature": 0.2, "max_tokens": 300}
    while len(orjson.dumps(request)) < size:
        index = len(request["messages"])
        text = f"message {index}: where is my order A-{index}? It was due yesterday and I need it for a trip. "
        request["messages"].append({"role": "user" if index % 2 else "assistant", "content": text})
    return request


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    request = request_of(10_000)
    http = {"method": "POST", "url": "http://127.0.0.1:8000/v1/chat/completions"}
    data = {"provider": "openai", "model": "gpt-4o-mini", "callId": "llm3", "request": request, "http": http,
            "cacheKey": "a" * 64}
    line = orjson.dumps({"version": 1, "captureId": "c", "runId": "r", "seq": 5, "ts": 1, "type": "llm_request",
                         "data": data, "origin": {"pid": 1, "thread": "MainThread"}})
    sent = httpx.Request("POST", http["url"], json=request).content  # the bytes the SDK sends
    today = orjson.loads(orjson.dumps(data))  # the same request, built anew as a replayed program would
    today["request"] = orjson.loads(sent)
    redactor = Redactor.from_environment()
    keys, written = keyed_request("openai", "gpt-4o-mini", today["request"], redactor)  # as the served call keys it
    assert keys["cacheKey"] and written is not None
    number = 20_000
    runs: dict[str, list[float]] = {"sent": [], "parsed": [], "rewritten": [], "parse": []}
    for _ in range(repeats):  # interleaved
        runs["sent"].append(timeit.timeit(lambda: request_difference(line, lambda: orjson.loads(line)["data"], today,
                                                                     redactor, sent), number=number) / number * 1e6)
        runs["parsed"].append(timeit.timeit(lambda: request_difference(line, lambda: orjson.loads(line)["data"],
                                                                       today, redactor, written),
                                            number=number) / number * 1e6)
        runs["rewritten"].append(timeit.timeit(lambda: request_difference(line, lambda: orjson.loads(line)["data"],
                                                                          today, redactor),
                                               number=number) / number * 1e6)
        runs["parse"].append(timeit.timeit(lambda: orjson.loads(line), number=number) / number * 1e6)
    print(f"request of {len(sent):,} bytes, line of {len(line):,} bytes, {repeats} interleaved runs")
    for kind, label in (("sent", "with the bytes the SDK sent (HTTP adapters)"),
                        ("parsed", "with the parsed body (wop.llm_call), its JSON as keying wrote it")):
        times = runs[kind]
        print(f"full-request comparison {label}: {statistics.median(times):.2f} us per served call "
              f"({min(times):.2f}-{max(times):.2f}); target <= 5 us")
    for kind, label in (("rewritten", "the comparison with the body written again (nothing handed on)"),
                        ("parse", "parsing the recorded line once")):
        times = runs[kind]
        print(f"for scale, {label}: {statistics.median(times):.2f} us ({min(times):.2f}-{max(times):.2f})")


if __name__ == "__main__":
    main()
