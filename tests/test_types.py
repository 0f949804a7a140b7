"""mypy and ruff over the code: no type error in the pure layers and the format, none elsewhere beyond
mypy-baseline.txt (which can only shrink), and `ruff check` clean."""

import importlib.util
import subprocess
import sys
from collections import Counter

import pytest

from tests.conftest import ROOT

_SPEC = importlib.util.spec_from_file_location("mypy_baseline", ROOT / "scripts" / "mypy_baseline.py")
assert _SPEC is not None and _SPEC.loader is not None
baseline = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(baseline)

REGENERATE = "python scripts/mypy_baseline.py"


@pytest.fixture(scope="module")
def mypy_errors() -> Counter[str]:
    """mypy's errors over the package, normalized as the baseline lists them, run once for the module (in mypy's
    .mypy_cache, which a later run reads: a few seconds when little changed)."""
    pytest.importorskip("mypy", reason="mypy is in the test extra")
    return Counter(baseline.run_mypy())


def test_the_pure_layers_and_the_format_have_no_type_error(mypy_errors):
    strict = sorted(error for error in mypy_errors.elements() if baseline.is_strict(error))
    assert not strict, ("mypy errors in format/, wire/, channels/, replay/ or diff/ (these are never baselined; fix "
                        "them, or `# type: ignore[code]` with the reason where mypy is wrong):\n" + "\n".join(strict))


def test_no_type_error_beyond_the_baseline(mypy_errors):
    new = (Counter(error for error in mypy_errors.elements() if not baseline.is_strict(error))
           - baseline.read_baseline())
    assert not new, ("new mypy errors (run `mypy` for their lines): fix them; only if one is truly intended, accept it "
                     f"with `{REGENERATE}` and commit mypy-baseline.txt:\n" + "\n".join(sorted(new.elements())))


def test_the_baseline_lists_only_errors_that_still_occur(mypy_errors):
    gone = baseline.read_baseline() - mypy_errors
    assert not gone, (f"mypy no longer reports these: remove them from mypy-baseline.txt (or run `{REGENERATE}`), so "
                      "the baseline only shrinks:\n" + "\n".join(sorted(gone.elements())))


def test_ruff_check_passes():
    pytest.importorskip("ruff", reason="ruff is in the test extra")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (
        f"`ruff check .` failed (`ruff check --fix` fixes the [*] ones):\n{done.stdout}{done.stderr}")
