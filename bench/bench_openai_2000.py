"""2,000 openai SDK calls that time themselves: plain, under `wop capture` and under VCR.py recording; then replayed.

An independent check of the other HTTP benches' framing (issue 37): a whole program, bench/openai_calls.py, makes
CALLS sequential chat completions through the real `openai` package against tests/fake_provider.py running in a
process of its own on 127.0.0.1, and times its own loop (time.perf_counter), so start-up is not in the ratio; the
bench times each whole process as well. Two phases, each of ROUNDS interleaved rounds (A B C D A B C D …):

1. record, CALLS calls: plain (no wop, nothing patched), `wop capture`, VCR.py recording a new cassette with its
   default matching, and with the strictest (method, scheme, host, port, path, query, body);
2. replay, at each of REPLAY sizes: plain, `wop replay --strict` of a capture of that many calls, and VCR.py playing
   back a cassette of that many calls with its default and its strictest matching.

Every row is a ratio against the plain runs of the same phase. VCR.py's matching is quadratic in a cassette's
length (each request is compared with the interactions before its own, and with body matching each comparison
parses both bodies), so --vcr-up-to and --strict-up-to leave its rows out above a size, and say so.
Run: python bench/bench_openai_2000.py [--calls 2000] [--rounds 7] [--replay 200 5000] [--vcr-up-to N]
[--strict-up-to N]   (vcrpy from the bench extra)
"""

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_spread, user_environment  # noqa: E402
from loopback import timed  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = Path(__file__).resolve().parent / "openai_calls.py"
WOP = [sys.executable, "-m", "openwop_cli"]

# tests/fake_provider.py in a process of its own; it keeps only the last request (a bench sends a hundred thousand)
SERVER = r'''
import collections, sys
sys.path.insert(0, sys.argv[1])
from tests.fake_provider import FakeProvider
provider = FakeProvider()
provider.requests, provider.headers = collections.deque(maxlen=1), collections.deque(maxlen=1)
print(provider.url, flush=True)
provider.server.serve_forever()
'''


@contextmanager
def fake_provider(root: Path) -> Iterator[str]:
    """The fake provider in its own process for as long as the block runs: yields its base URL."""
    (root / "server.py").write_text(SERVER)
    server = subprocess.Popen([sys.executable, str(root / "server.py"), str(ROOT)], stdout=subprocess.PIPE, text=True)
    try:
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait()


class Runs:
    """Runs the program one way and keeps its figures, by kind of run."""

    def __init__(self, root: Path, env: dict, url: str) -> None:
        self.root, self.env, self.url = root, env, url
        self.figures = root / "figures.json"
        self.found: dict[str, list[dict]] = {}
        self.made = 0

    def program(self, calls: int) -> list[str]:
        return [sys.executable, str(PROGRAM), self.url, str(calls)]

    def fresh(self, name: str) -> Path:
        self.made += 1
        return self.root / f"{name}-{self.made}"

    def run(self, kind: str, command: list[str], vcr: str | None = None) -> None:
        env = {**self.env, "BENCH_FIGURES": str(self.figures), **({"BENCH_VCR": vcr} if vcr else {})}
        self.found.setdefault(kind, []).append(timed(command, env, self.figures))

    def vcr(self, kind: str, calls: int, mode: str, matching: str, cassette: Path) -> None:
        self.run(kind, self.program(calls), f"{mode}:{matching}:{cassette}")


def record_phase(runs: Runs, calls: int, rounds: int, vcr_up_to: int, strict_up_to: int) -> None:
    """Plain, `wop capture` and VCR.py recording (default and strictest matching) of CALLS calls, interleaved."""
    for _ in range(rounds):
        runs.run("plain", runs.program(calls))
        runs.run("wop capture", [*WOP, "capture", "--out", str(runs.fresh("capture")), "--", *runs.program(calls)])
        if calls <= vcr_up_to:
            runs.vcr("VCR.py record, default", calls, "record", "default", runs.fresh("cassette").with_suffix(".yaml"))
        if calls <= strict_up_to:
            runs.vcr("VCR.py record, strictest", calls, "record", "strict", runs.fresh("cassette").with_suffix(".yaml"))


def replay_phase(runs: Runs, calls: int, rounds: int, vcr_up_to: int, strict_up_to: int) -> None:
    """Plain, `wop replay --strict` and VCR.py playback (default and strictest matching) of CALLS calls recorded
    once first, interleaved."""
    capture, cassette = runs.fresh("source"), runs.fresh("source").with_suffix(".yaml")
    runs.run("recording the capture", [*WOP, "capture", "--out", str(capture), "--", *runs.program(calls)])
    if calls <= vcr_up_to:
        runs.vcr("recording the cassette", calls, "record", "default", cassette)
    for _ in range(rounds):
        runs.run("plain", runs.program(calls))
        runs.run("wop replay --strict", [*WOP, "replay", "--strict", "--no-output", str(capture), "--out", str(runs.fresh("replay"))])
        if calls <= vcr_up_to:
            runs.vcr("VCR.py playback, default", calls, "play", "default", cassette)
        if calls <= strict_up_to:
            runs.vcr("VCR.py playback, strictest", calls, "play", "strict", cassette)


def report(title: str, found: dict[str, list[dict]], left_out: list[str]) -> None:
    """Per kind: the program's own time per call (median, min–max) and the whole process, against plain."""
    plain_us, _ = median_spread([run["us"] for run in found["plain"]])
    plain_process, _ = median_spread([run["process"] for run in found["plain"]])
    print(f"{title}: the program's own loop, per call (median, min-max), and the whole process (median)")
    for kind, runs in found.items():
        if kind.startswith("recording"):
            continue
        us, spread = median_spread([run["us"] for run in runs])
        process, process_spread = median_spread([run["process"] for run in runs], ".2f")
        cpu, _ = median_spread([run["cpu"] for run in runs])
        ratios = [run["us"] / plain_us for run in runs]
        print(f"  {kind:<27} {us:8,.0f} us ({spread}), cpu {cpu:6,.0f} us: {us / plain_us:6.2f}x plain "
              f"({min(ratios):.2f}-{max(ratios):.2f}x); process {process:6.2f} s ({process_spread}): "
              f"{process / plain_process:5.2f}x")
    for kind in left_out:
        print(f"  {kind:<27} not run (--vcr-up-to/--strict-up-to: VCR.py's matching is quadratic in the cassette)")


def left_out(calls: int, vcr_up_to: int, strict_up_to: int, kinds: tuple[str, str]) -> list[str]:
    return ([kinds[0]] if calls > vcr_up_to else []) + ([kinds[1]] if calls > strict_up_to else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--replay", type=int, nargs="*", default=[200, 5000])
    parser.add_argument("--vcr-up-to", type=int, default=10**9, help="VCR.py rows only up to this many calls")
    parser.add_argument("--strict-up-to", type=int, default=10**9, help="VCR.py strictest rows only up to this")
    options = parser.parse_args()
    print(f"load average at the start: {' '.join(f'{load:.2f}' for load in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as temp, fake_provider(Path(temp)) as url:
        root = Path(temp)
        env = {**user_environment(), "WOP_HOME": str(root / "home")}
        env.pop("BENCH_VCR", None)
        runs = Runs(root, env, url)
        record_phase(runs, options.calls, options.rounds, options.vcr_up_to, options.strict_up_to)
        report(f"record, {options.calls:,} calls, {options.rounds} rounds", runs.found,
               left_out(options.calls, options.vcr_up_to, options.strict_up_to,
                        ("VCR.py record, default", "VCR.py record, strictest")))
        print(f"load average: {' '.join(f'{load:.2f}' for load in os.getloadavg())}", flush=True)
        for calls in options.replay:
            runs.found = {}
            replay_phase(runs, calls, options.rounds, options.vcr_up_to, options.strict_up_to)
            report(f"replay, {calls:,} calls, {options.rounds} rounds", runs.found,
                   left_out(calls, options.vcr_up_to, options.strict_up_to,
                            ("VCR.py playback, default", "VCR.py playback, strictest")))
            print(f"load average: {' '.join(f'{load:.2f}' for load in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
