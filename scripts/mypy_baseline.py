"""Write mypy-baseline.txt: the mypy errors the package has today outside the layers that must have none.

tests/test_types.py runs mypy ([tool.mypy] in pyproject.toml) and fails on any error in STRICT, on an error elsewhere
that the baseline does not list, and on a baseline entry that no longer occurs: the baseline only shrinks. Each entry
is `path: [code] message`, without the line number, so code moving up or down does not break it; an error that occurs
twice in a file is listed twice. Usage (after fixing errors, or, if truly intended, to accept a new one):
    python scripts/mypy_baseline.py
"""

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "mypy-baseline.txt"
CACHE = ROOT / ".mypy_cache"  # mypy's own default: the command line and the test warm each other's cache
STRICT = ("openwop_cli/format/", "openwop_cli/wire/", "openwop_cli/channels/", "openwop_cli/replay/",
          "openwop_cli/diff/")  # the pure layers and the capture format: no error, no baseline
_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+(?::\d+)?: error: (?P<message>.*?)(?:  \[(?P<code>[a-z-]+)\])?$")
_LINE_NUMBER = re.compile(r"\bline \d+\b")  # "already defined on line 35": the other line moves too


def run_mypy(cache_dir: Path = CACHE) -> list[str]:
    """mypy's errors over the package, normalized (see the module docstring); RuntimeError when mypy itself fails."""
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache_dir), "--no-error-summary",
                           "--no-pretty", "--no-color-output", "--show-error-codes", "--hide-column-numbers"],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"mypy exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return normalized(done.stdout)


def normalized(output: str) -> list[str]:
    """The error lines of mypy's output as `path: [code] message`, sorted (notes left out)."""
    errors = []
    for line in output.splitlines():
        found = _ERROR.match(line)
        if found is not None:
            message = _LINE_NUMBER.sub("line N", found["message"])
            errors.append(f"{found['path']}: [{found['code'] or 'misc'}] {message}")
    return sorted(errors)


def is_strict(error: str) -> bool:
    return error.startswith(STRICT)


def read_baseline() -> Counter[str]:
    """The baseline's entries, each with how often it occurs."""
    if not BASELINE.exists():
        return Counter()
    return Counter(line for line in BASELINE.read_text(encoding="utf-8").splitlines() if line.strip())


def main() -> int:
    errors = run_mypy()
    strict = [error for error in errors if is_strict(error)]
    rest = [error for error in errors if not is_strict(error)]
    BASELINE.write_text("".join(f"{error}\n" for error in rest), encoding="utf-8")
    print(f"{BASELINE.name}: {len(rest)} errors in {len({error.split(':')[0] for error in rest})} files")
    for error in strict:
        print(f"not baselined, fix it: {error}", file=sys.stderr)
    return 1 if strict else 0


if __name__ == "__main__":
    sys.exit(main())
