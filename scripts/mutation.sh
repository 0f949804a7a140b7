#!/usr/bin/env bash
# Mutation testing (mutmut 3) of the modules that decide a verdict; see docs/mutation.md.
#
#   scripts/mutation.sh                                  # the modules of [tool.mutmut] only_mutate
#   scripts/mutation.sh openwop_cli/diff/__init__.py ...          # these modules instead
#
# It runs in a copy of the work tree (tracked files, as they are on disk) under $TMPDIR, so the
# tree never holds mutants/, and prints the score and every mutant that survived. The copy is kept
# for a closer look: `cd DIR && mutmut show NAME` (the diff of one mutant), `mutmut browse`.
# MUTATION_JOBS sets how many mutants run at once (default: the number of CPUs); MUTATION_TESTS (test paths, space
# separated) replaces the test selection of [tool.mutmut] for this run: one module's own tests run faster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/wop-mutation.XXXXXX")
(cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$work")
cd "$work"
python3 - "$@" <<'PY'
import os, re, sys
from pathlib import Path

def replaced(text, setting, items):
    listed = "".join(f'    "{item}",\n' for item in items)
    text, count = re.subn(rf"{setting} = \[\n(?:    .*\n)*?\]", f"{setting} = [\n{listed}]", text)
    assert count == 1, f"pyproject.toml: [tool.mutmut] {setting} not found"
    return text

text = Path("pyproject.toml").read_text()
if sys.argv[1:]:
    text = replaced(text, "only_mutate", sys.argv[1:])
if os.environ.get("MUTATION_TESTS", "").split():
    text = replaced(text, "pytest_add_cli_args_test_selection", os.environ["MUTATION_TESTS"].split())
Path("pyproject.toml").write_text(text)
PY
# mutmut imports the mutated copy (mutants/) into its own process; a test's subprocess (a `wop capture` of a
# program in a temporary directory) imports this unmutated copy, not whatever wop is installed.
export PYTHONPATH="$work${PYTHONPATH:+:$PYTHONPATH}"
mutmut run --max-children "${MUTATION_JOBS:-$(nproc)}" >mutmut-run.log 2>&1 || { tail -40 mutmut-run.log; exit 1; }
mutmut export-cicd-stats >/dev/null
python3 - <<'PY'
import json
stats = json.load(open("mutants/mutmut-cicd-stats.json"))
tested = stats["total"] - stats.get("skipped", 0)
killed = stats["killed"] + stats.get("timeout", 0)
print(f"mutants: {stats['total']}  killed: {stats['killed']}  timeout: {stats.get('timeout', 0)}  "
      f"survived: {stats['survived']}  no tests: {stats.get('no_tests', 0)}  "
      f"score: {100 * killed / max(tested, 1):.1f}% (killed + timeout) / tested")
PY
echo "not killed:"
mutmut results
echo "the run is kept in $work (cd there: mutmut show NAME, mutmut browse)"
