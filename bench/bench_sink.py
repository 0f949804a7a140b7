"""Sink append (default redaction) against a bare `orjson.dumps(sorted keys) + write` loop.

Target (issue 3): ratio <= 1.5. Run: python bench/bench_sink.py [EVENTS]
"""

import statistics
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CAPTURE_ID, per_item_us, realistic_data  # noqa: E402

from openwop_cli.format.redact import Redactor  # noqa: E402
from openwop_cli.format.sink import CaptureSink  # noqa: E402

ROUNDS = 5


def bare_loop(path: Path, payloads: list[dict]) -> int:
    with open(path, "wb") as handle:
        for seq, data in enumerate(payloads):
            event = {"version": 1, "captureId": CAPTURE_ID, "runId": CAPTURE_ID, "seq": seq,
                     "ts": 1763875573123 + seq, "type": "llm_request", "data": data}
            handle.write(orjson.dumps(event, option=orjson.OPT_SORT_KEYS) + b"\n")
    return len(payloads)


def sink_loop(path: Path, payloads: list[dict]) -> int:
    secrets = {"OPENAI_API_KEY": "test-openai-key-7f3a9c21", "ANTHROPIC_API_KEY": "test-anthropic-key-12ab"}
    sink = CaptureSink(path, redactor=Redactor.from_environment("default", secrets))
    sink.start({"captureId": CAPTURE_ID})
    for data in payloads:
        sink.append("llm_request", data)
    sink.finalize("ok")
    return len(payloads)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    payloads = [realistic_data(index) for index in range(count)]
    size = len(orjson.dumps({"version": 1, "captureId": CAPTURE_ID, "runId": CAPTURE_ID, "seq": 0, "ts": 0,
                             "type": "llm_request", "data": payloads[0]}))
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        results = {"bare": [], "sink": []}
        for round_ in range(ROUNDS):
            results["bare"].append(per_item_us(lambda: bare_loop(root / f"bare{round_}.jsonl", payloads)))
            results["sink"].append(per_item_us(lambda: sink_loop(root / f"sink{round_}", payloads)))
    bare, sink = min(results["bare"]), min(results["sink"])
    ratios = sorted(sink_us / bare_us for sink_us, bare_us in zip(results["sink"], results["bare"]))
    print(f"events: {count} of ~{size} bytes")
    print(f"bare dumps+write loop: {bare:.2f} us/event")
    print(f"sink append, default redaction: {sink:.2f} us/event")
    from openwop_cli.format.redact import compile_prefilter

    prefilter = compile_prefilter([])
    engine = {"HyperscanMatcher": "hyperscan"}.get(type(prefilter).__name__, type(prefilter).__module__.split(".")[0])
    print(f"ratio sink/bare: {sink / bare:.2f} best rounds, {statistics.median(ratios):.2f} median of {ROUNDS} "
          f"interleaved rounds (spread {ratios[0]:.2f}..{ratios[-1]:.2f}; target <= 1.5), secret prefilter on {engine}")


if __name__ == "__main__":
    main()
