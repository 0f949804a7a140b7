"""Cost of a `@wop.tool` call: with no session (pass-through) and captured under `wop capture`.

Targets (issue 4): captured call <= 10 us more than the bare call; pass-through <= 0.5 us more.
The captured numbers are measured inside a real `wop capture` child, against the bare function in
that same process. Run: python bench/bench_tool.py [CALLS]
"""

import os
import subprocess
import sys
import time

import openwop_cli as wop


def lookup(order_id: str, verbose: bool = False) -> dict:
    return {"id": order_id, "status": "shipped"}


traced_lookup = wop.tool(lookup)


def per_call_us(function, calls: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            function("A-1001")
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def measure(calls: int) -> tuple[float, float]:
    return per_call_us(lookup, calls), per_call_us(traced_lookup, calls)


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    if os.environ.get("WOP_MODE") == "capture":
        bare, captured = measure(calls)
        print(f"captured: bare {bare:.2f} us, @wop.tool {captured:.2f} us, added {captured - bare:.2f} us "
              f"(target <= 10), ratio {captured / bare:.1f}x")
        return
    bare, passthrough = measure(calls * 10)
    print(f"no session: bare {bare:.3f} us, @wop.tool {passthrough:.3f} us, added {passthrough - bare:.3f} us "
          "(target <= 0.5)")
    env = {**os.environ, "WOP_HOME": os.environ.get("WOP_HOME", "/tmp/wop-bench-home")}
    subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--name", "bench-tool", "--",
                    sys.executable, __file__, str(calls)], env=env, check=True)


if __name__ == "__main__":
    main()
