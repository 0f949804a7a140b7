"""What comparing the whole request costs a served LLM call: replay.compare.request_difference on a 10 KB request
that matches its recording (the common case), against the orjson parse of that recorded line alone (what any look
at the recorded request costs), in the same run.

Target (issue 32): the full-request comparison adds <= 5 us to a served call with a 10 KB request.
Run: python bench/bench_compare.py [REPEATS]
"""

import statistics
import sys
import timeit
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from openwop_cli.replay.compare import request_difference  # noqa: E402


def request_of(size: int) -> dict:
    """An OpenAI chat request of about size bytes: a long conversation and a few tools."""
    messages, total, index = [], 0, 0
    while total < size - 1500:
        text = f"message {index}: where is my order A-{index}? It was due yesterday and I need it for a trip. "
        messages.append({"role": "user" if index % 2 else "assistant", "content": text})
        total += len(text) + 40
        index += 1
    tools = [{"type": "function", "function": {"name": f"lookup_{n}", "description": "Look an order up by its id.",
                                               "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}
             for n in range(5)]
    return {"model": "gpt-4o-mini", "messages": messages, "tools": tools, "temperature": 0.2, "max_tokens": 300}


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    request = request_of(10_000)
    http = {"method": "POST", "url": "http://127.0.0.1:8000/v1/chat/completions"}
    data = {"provider": "openai", "model": "gpt-4o-mini", "callId": "llm3", "request": request, "http": http,
            "cacheKey": "a" * 64}
    line = orjson.dumps({"version": 1, "captureId": "c", "runId": "r", "seq": 5, "ts": 1, "type": "llm_request",
                         "data": data, "origin": {"pid": 1, "thread": "MainThread"}})
    today = orjson.loads(orjson.dumps(data))  # the same request, built anew as a replayed program would
    number = 20_000
    compare = [timeit.timeit(lambda: request_difference(line, lambda: orjson.loads(line)["data"], today),
                             number=number) / number * 1e6 for _ in range(repeats)]
    parse = [timeit.timeit(lambda: orjson.loads(line), number=number) / number * 1e6 for _ in range(repeats)]
    print(f"request of {len(orjson.dumps(request)):,} bytes, line of {len(line):,} bytes")
    print(f"full-request comparison: {statistics.median(compare):.2f} us per served call "
          f"({min(compare):.2f}-{max(compare):.2f} over {repeats} runs); target <= 5 us")
    print(f"for scale, parsing the recorded line once: {statistics.median(parse):.2f} us "
          f"({min(parse):.2f}-{max(parse):.2f}); ratio {statistics.median(compare) / statistics.median(parse):.2f}x")


if __name__ == "__main__":
    main()
