"""Shared pieces of the benchmarks: a realistic ~900-byte event and a timer."""

import hashlib
import os
import time
from collections.abc import Callable
from typing import Any

CAPTURE_ID = "f1a2b3c4d5e6f7a8"


def realistic_data(index: int) -> dict:
    """An llm_request-sized payload (~900 bytes serialized as an event), varied per index."""
    return {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "cacheKey": hashlib.sha256(f"request {index}".encode()).hexdigest(),  # as real keys: no long digit runs
        "callId": f"call-{index}",
        "request": {
            "messages": [
                {"role": "system", "content": "You are a concise support agent for Acme. Answer in one sentence. " * 3},
                {"role": "user", "content": f"Where is my order A-{index}? It was due yesterday and I need it for a trip."},
                {"role": "tool", "content": f"order A-{index} status=shipped eta=2025-11-25 carrier=UPS", "toolCallId": "t1"},
            ],
            "temperature": 0.2,
            "max_tokens": 200,
        },
        "usage": {"prompt_tokens": 61, "completion_tokens": 18},
    }


def per_item_us(function: Callable[[], int]) -> float:
    """Microseconds per item for a function that processes items and returns how many."""
    start = time.perf_counter()
    count = function()
    return (time.perf_counter() - start) / count * 1e6


def median_spread(values: list[float], spec: str = ",.0f") -> tuple[float, str]:
    """The median of repeated measurements, and their spread as text (`min–max over n runs`, each formatted by spec)."""
    import statistics

    return statistics.median(values), f"{min(values):{spec}}–{max(values):{spec}} over {len(values)} runs"


def run_with_usage(command: list[str], **popen) -> tuple[bytes, int, float, float, float]:
    """Run command to its end with its standard output read: that output, its exit code, wall and CPU seconds (user +
    system, its reaped children's included) and peak RSS in MiB (its own or a reaped child's, whichever is larger)."""
    import subprocess

    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, **popen)
    output = process.stdout.read()
    usage = waited(process)
    seconds = time.perf_counter() - start
    return output, process.returncode, seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def waited(process) -> Any:
    """Close a process's stdout, wait for it to end and return its own resource usage, from its wait4
    (getrusage(RUSAGE_CHILDREN) would keep the largest peak of every child reaped earlier)."""
    process.stdout.close()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage


def user_environment() -> dict[str, str]:
    """This environment as a user's machine has it: Python writes and reuses its bytecode caches (some sandboxes
    set PYTHONDONTWRITEBYTECODE, which makes every wop run compile its sources again)."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
