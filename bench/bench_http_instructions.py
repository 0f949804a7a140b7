"""Instructions per HTTP call, counted by valgrind (cachegrind): bench_http's client plain, and the same client
recorded by `wop capture` (its process: the calling thread and wop's sender thread).

Instruction counts do not move with the machine's load, so this bench tells a change in what wop does per call
apart from a busy moment on a shared machine (bench_http's times cannot); they do not see cache misses, waits
for the GIL or two processes competing for the cores, which bench_http's times do. Per call = (instructions
with N2 calls - with N1 calls) / (N2 - N1): start-up cancels out.

Target (issue 20): the recorded program's instructions per call <= 1.05x plain.
Run: python bench/bench_http_instructions.py [N1] [N2]   (needs valgrind)
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_http import CLIENT  # noqa: E402
from loopback import loopback_server  # noqa: E402

CACHEGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


def instructions(command: list[str], env: dict) -> int:
    """The instructions valgrind counted for the one process it ran in command (the last count it printed)."""
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    counts = re.findall(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or not counts:
        raise SystemExit(f"{' '.join(command[:8])} ... exited {done.returncode}:\n{done.stderr[-2000:]}")
    return int(counts[-1].replace(",", ""))


def per_call(root: Path, env: dict, url: str, first: int, second: int) -> dict[str, float]:
    """Instructions per call of the client, plain and under `wop capture`."""
    def client(count: int) -> list[str]:
        return [*CACHEGRIND, sys.executable, str(root / "client.py"), url, str(count)]

    def captured(count: int) -> list[str]:
        out = root / f"capture-{count}"
        shutil.rmtree(out, ignore_errors=True)
        return [sys.executable, "-m", "openwop_cli", "capture", "--out", str(out), "--", *client(count)]

    counted = {"plain": [instructions(client(count), env) for count in (first, second)],
               "wop capture": [instructions(captured(count), env) for count in (first, second)]}
    return {kind: (at_second - at_first) / (second - first) for kind, (at_first, at_second) in counted.items()}


def main() -> None:
    first = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    second = int(sys.argv[2]) if len(sys.argv) > 2 else 1300
    if shutil.which("valgrind") is None:
        print("valgrind: not installed - this bench counts instructions with it (apt-get install valgrind)")
        return
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / "client.py").write_text(CLIENT)
        env = {**os.environ, "WOP_HOME": str(root / "home")}
        with loopback_server(root) as base:
            results = {path: per_call(root, env, f"{base}/{path}", first, second)
                       for path in ("orders", "v1/chat/completions")}
    titles = {"orders": "httpx JSON POST to an API (http tool call)",
              "v1/chat/completions": "httpx OpenAI chat completion (LLM call)"}
    for path, found in results.items():
        plain, captured = found["plain"], found["wop capture"]
        print(f"{titles[path]}, instructions per call of the program ({first} and {second} calls):")
        print(f"  plain (no wop)   {plain:10,.0f}")
        print(f"  wop capture      {captured:10,.0f}  +{captured - plain:,.0f}: {captured / plain:.3f}x plain (target <= 1.05)")


if __name__ == "__main__":
    main()
