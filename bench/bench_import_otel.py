"""`wop import otel` of 10,000 OpenInference spans, and its peak memory as the number of traces grows.

Target (issue 38): importing 10k spans takes <= 5 s, and memory stays flat in the number of traces. Each span is
an LLM call as openinference-instrumentation-openai writes it (input.value, llm.input_messages.*, output.value,
token counts, ~1.5 KB), under one root span per trace, in OTLP JSON lines of 100 spans (the Collector's file
exporter's form). The baseline, measured in the same run, is reading the same file with orjson in a fresh Python
(the least any importer does). Memory is the importer's peak RSS for 10, 100 and 1,000 traces of 10 spans each.
Run: python bench/bench_import_otel.py [ROUNDS]
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

SPANS_PER_LINE = 100


def attribute(key: str, value: object) -> dict:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if isinstance(value, int) else value}}


def llm_span(trace: str, parent: str, index: int, start: int) -> dict:
    messages = [{"role": "system", "content": "You are a concise support agent for Acme. Answer in one sentence. " * 3},
                {"role": "user", "content": f"Where is my order A-{index}? It was due yesterday and I need it."}]
    request = {"model": "gpt-4o-mini", "messages": messages, "temperature": 0.2}
    answer = {"id": f"chatcmpl-{index}", "object": "chat.completion", "created": 1763875573, "model": "gpt-4o-mini",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                                                                         "content": f"A-{index} has shipped."}}],
              "usage": {"prompt_tokens": 61, "completion_tokens": 18, "total_tokens": 79}}
    attributes = [attribute("openinference.span.kind", "LLM"), attribute("llm.system", "openai"),
                  attribute("llm.model_name", "gpt-4o-mini"), attribute("input.value", orjson.dumps(request).decode()),
                  attribute("input.mime_type", "application/json"),
                  attribute("output.value", orjson.dumps(answer).decode()),
                  attribute("llm.invocation_parameters", '{"model": "gpt-4o-mini", "temperature": 0.2}'),
                  attribute("llm.token_count.prompt", 61), attribute("llm.token_count.completion", 18)]
    for position, message in enumerate(messages):
        attributes += [attribute(f"llm.input_messages.{position}.message.role", message["role"]),
                       attribute(f"llm.input_messages.{position}.message.content", message["content"])]
    return {"traceId": trace, "spanId": f"{index + 1:016x}", "parentSpanId": parent, "name": "ChatCompletion",
            "kind": 1, "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5_000_000),
            "attributes": attributes, "status": {"code": 1}}


def write_traces(path: Path, traces: int, spans_per_trace: int) -> int:
    """traces traces, each a root span and spans_per_trace - 1 LLM spans, as OTLP JSON lines; returns the spans."""
    spans, written = [], 0
    with open(path, "wb") as file:
        for number in range(traces):
            trace, root = f"{number + 1:032x}", f"{number + 1:08x}00000000"
            start = 1_763_875_573_000_000_000 + number * 1_000_000_000
            spans.append({"traceId": trace, "spanId": root, "name": "agent", "kind": 1,
                          "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 900_000_000),
                          "attributes": [attribute("openinference.span.kind", "CHAIN")]})
            spans += [llm_span(trace, root, number * spans_per_trace + index, start + index * 10_000_000)
                      for index in range(spans_per_trace - 1)]
            while len(spans) >= SPANS_PER_LINE:
                file.write(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans[:SPANS_PER_LINE]}]}]}) + b"\n")
                written += SPANS_PER_LINE
                spans = spans[SPANS_PER_LINE:]
        if spans:
            file.write(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + b"\n")
            written += len(spans)
    return written


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (KiB) of a command run by a fresh Python that waits for
    it alone. The machine is shared: CPU time is the figure that does not count the others' load."""
    probe = ("import resource, subprocess, sys, time; start = time.perf_counter(); "
             "done = subprocess.run(sys.argv[1:], capture_output=True); elapsed = time.perf_counter() - start; "
             "sys.exit(done.stderr.decode()[-400:]) if done.returncode else None; "
             "usage = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "print(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{command[:5]} failed: {done.stderr}")
    wall, cpu, rss = done.stdout.split()
    return float(wall), float(cpu), int(rss)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "WOP_HOME": tempfile.mkdtemp(prefix="wop-bench-home-")}
    work = Path(tempfile.mkdtemp(prefix="wop-bench-otel-"))
    try:
        for traces, per_trace in ((10, 1_000), (1_000, 10)):
            source = work / f"traces-{traces}.jsonl"
            spans = write_traces(source, traces, per_trace)
            imports, reads = [], []
            for round_ in range(rounds):
                out = work / f"out-{traces}-{round_}"
                imports.append(timed([sys.executable, "-m", "openwop_cli", "import", "otel", str(source), "--out",
                                      str(out)], env))
                shutil.rmtree(out)
                reads.append(timed([sys.executable, "-c", "import orjson, sys; "
                                    "[orjson.loads(line) for line in open(sys.argv[1], 'rb')]", str(source)], env))
            print(f"import {spans:,} spans in {traces:,} traces ({source.stat().st_size / 1e6:.1f} MB; target <= 5 s):")
            for label, index in (("wall", 0), ("cpu", 1)):
                values, baseline = [run[index] for run in imports], statistics.median(run[index] for run in reads)
                median = statistics.median(values)
                print(f"  {label:>4} median {median:.2f} s ({min(values):.2f}–{max(values):.2f} over {rounds} runs); "
                      f"reading the file alone {baseline:.2f} s; ratio {median / baseline:.1f}x")
        for traces in (10, 100, 1_000):
            source = work / f"memory-{traces}.jsonl"
            write_traces(source, traces, 10)
            peaks = []
            for round_ in range(min(rounds, 3)):
                out = work / f"memory-out-{traces}-{round_}"
                peaks.append(timed([sys.executable, "-m", "openwop_cli", "import", "otel", str(source), "--out",
                                    str(out)], env)[2])
                shutil.rmtree(out)
            print(f"peak RSS importing {traces:>5,} traces of 10 spans: {statistics.median(peaks) / 1024:.1f} MiB "
                  f"({min(peaks) / 1024:.1f}–{max(peaks) / 1024:.1f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(env["WOP_HOME"], ignore_errors=True)


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"(bench took {time.perf_counter() - start:.0f} s)")
