"""Regenerate the README's pictures: `python docs/make_screenshots.py` (needs chromium for the HTML one).

- docs/divergence.svg: a strict `wop replay` of the bundled capture against the changed agent, at a terminal.
- docs/debugging.svg: the README's "Debugging a divergence": one line of the example changed, then `wop replay`
  (the divergence with its call site, and the changed lines of the file beside it).
- docs/report.png: `wop report` of the bundled capture against its changed run, in headless chromium.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from openwop_cli.host.run_replay import run_replay
from openwop_cli.report.console import THEME
from openwop_cli.report.verdict import render_replay

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


DIVERGENCE_COMMAND = ["python3", "examples/support_agent_changed.py"]


def divergence_svg() -> Path:
    """Exactly `wop replay fixtures/support-agent -- python3 examples/support_agent_changed.py` (strict, the default)."""
    with tempfile.TemporaryDirectory() as temp:
        outcome = run_replay(ROOT / "fixtures" / "support-agent", DIVERGENCE_COMMAND, policy="strict", from_seq=None,
                             branch=False, overrides={}, allow_tools=[], out=Path(temp) / "replay", name="screenshot",
                             warn=lambda message: None, store_root=Path(temp), output_to_stderr=True)
    console = Console(record=True, width=100, theme=THEME, force_terminal=True, file=open("/dev/null", "w"))
    render_replay(console, outcome)
    path = HERE / "divergence.svg"
    console.save_svg(str(path), title="wop replay fixtures/support-agent -- " + " ".join(DIVERGENCE_COMMAND))
    return path


def debugging_svg() -> Path:
    """`wop replay support` after `perl -pi -e 's/one sentence/two sentences/' support_agent.py`, as the README shows."""
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        for name in ("support_agent.py", "fake_model.py"):
            shutil.copy(ROOT / "examples" / name, work / name)
        subprocess.run([sys.executable, "-m", "openwop_cli", "capture", "--name", "support", "--out", "support", "--",
                        "python3", "support_agent.py"], cwd=work, check=True, capture_output=True,
                       env={**os.environ, "WOP_HOME": temp})
        script = work / "support_agent.py"
        script.write_text(script.read_text().replace("one sentence", "two sentences"))
        previous = Path.cwd()
        os.chdir(work)
        try:
            outcome = run_replay(work / "support", [], policy="strict", from_seq=None, branch=False, overrides={},
                                 allow_tools=[], out=work / "replay", name="screenshot", warn=lambda message: None,
                                 store_root=work, output_to_stderr=True)
        finally:
            os.chdir(previous)
    console = Console(record=True, width=100, theme=THEME, force_terminal=True, file=open("/dev/null", "w"))
    render_replay(console, outcome)
    path = HERE / "debugging.svg"
    console.save_svg(str(path), title="wop replay support   (after changing one line of support_agent.py)")
    return path


def report_png() -> Path | None:
    browser = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)
    if browser is None:
        print("no chromium: docs/report.png not regenerated", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory() as temp:
        page = Path(temp) / "report.html"
        subprocess.run([sys.executable, "-m", "openwop_cli", "report", "fixtures/support-agent", "--against",
                        "fixtures/support-agent-changed", "-o", str(page)], cwd=ROOT, check=True)
        path = HERE / "report.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--virtual-time-budget=5000", "--window-size=1400,800", f"--screenshot={path}",
                        page.as_uri()], check=True, capture_output=True)
    return path


if __name__ == "__main__":
    for made in (divergence_svg(), debugging_svg(), report_png()):
        if made is not None:
            print(f"wrote {made.relative_to(ROOT)}", file=sys.stderr)
