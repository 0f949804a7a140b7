"""`wop report`: one self-contained HTML file, exercised in a real browser when one is installed and
through the page's own script under node (tests/report/dom_harness.js) otherwise."""

import base64
import gzip
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from openwop_cli.report.html import MAX_PAGE_EVENTS
from tests.conftest import FIXTURES, run_wop

HARNESS = Path(__file__).resolve().parent / "dom_harness.js"


def report(tmp_path, *args):
    out = tmp_path / "report.html"
    done = run_wop("report", *args, "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def payload(page: Path) -> dict:
    """The page's data as the page's script assembles it: header, events, rows, state points, final state."""
    blob = re.search(r'<script id="wop-data" type="application/octet-stream">([^<]*)</script>', page.read_text()).group(1)
    data = {"events": [], "rows": [], "state": []}
    for line in gzip.decompress(base64.b64decode(blob)).splitlines():
        record = json.loads(line)
        for key, items in (("e", "events"), ("r", "rows"), ("s", "state")):
            if key in record:
                data[items].append(record[key])
                break
        else:
            data.update(record)
    return data


def run_page(page: Path) -> dict:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the page's script cannot be exercised without a browser")
    done = subprocess.run(["node", str(HARNESS), str(page)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class _Resources(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith(("#", "data:")):
                self.external.append(value)


def test_the_report_is_self_contained_and_carries_the_run(tmp_path):
    page = report(tmp_path, str(FIXTURES / "support-agent"))
    parser = _Resources()
    parser.feed(page.read_text())
    assert parser.external == []
    assert "http://" not in page.read_text() and "https://" not in page.read_text()
    data = payload(page)
    assert len(data["events"]) == 12 and data["manifest"]["name"] == "support-agent"
    assert [row["type"] for row in data["rows"]][:3] == ["run_start", "nondeterministic", "tool_call"]
    assert data["final"]["channels"]["ticket"]["order"] == "A-1001"


def test_clicking_an_event_shows_its_tree_and_the_diff_highlights_the_first_divergence(tmp_path):
    page = report(tmp_path, str(FIXTURES / "support-agent"), "--against", str(FIXTURES / "support-agent-changed"))
    seen = run_page(page)
    assert seen["rows"] == 9 and seen["firstDivergence"] == 0
    assert seen["diffinfo"].startswith("diverged at seq 0") and "aligned by seq" in seen["diffinfo"]
    assert any("--warm" in text for text in seen["highlighted"])
    assert seen["clickedSeq"] == 2 and seen["detailHeadings"][0] == "events 2–3" and seen["trees"] > 2
    assert seen["sites"] == ["called from examples/support_agent.py:48 in answer()"]
    assert "state after seq 3" in seen["detailHeadings"]


SWAPPABLE = """
import os
import openwop_cli as wop

@wop.tool
def step(name):
    return name.upper()

wop.nondeterministic("clock", "start", lambda: 1)
order = ["a", "b"] if not os.environ.get("SWAP") else ["b", "a"]
print([step(name) for name in order])
wop.nondeterministic("clock", "end", lambda: 2)
"""


@pytest.mark.parametrize("align, marked", [("content", [4]), ("seq", [2, 4])])
def test_report_align_content_marks_only_the_swapped_calls(tmp_path, align, marked):
    program = tmp_path / "agent.py"
    program.write_text(SWAPPABLE)
    for name, env in (("a", {"SWAP": ""}), ("b", {"SWAP": "1"})):
        done = run_wop("capture", "--out", str(tmp_path / name), "--", sys.executable, str(program), env=env,
                       cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    page = report(tmp_path, str(tmp_path / "a"), "--against", str(tmp_path / "b"), "--align", align)
    seen = run_page(page)
    assert seen["diverged"] == marked
    assert f"aligned by {align}" in seen["diffinfo"]


def test_secrets_stay_redacted_in_the_report(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text("import os, openwop_cli as wop\nwop.nondeterministic('network', 'k', lambda: os.environ['SERVICE_TOKEN'])\n")
    out = tmp_path / "capture"
    assert run_wop("capture", "--out", str(out), "--", sys.executable, str(program),
                   env={"SERVICE_TOKEN": "tok-very-secret-998877"}, cwd=tmp_path).returncode == 0
    page = report(tmp_path, str(out))
    assert "tok-very-secret-998877" not in json.dumps(payload(page))


def test_a_100k_event_capture_is_paged_in_the_page_and_stays_small(tmp_path):
    """Past the events the page embeds whole, every event still has its row, and selecting one says how to see it."""
    capture = tmp_path / "big"
    sink = CaptureSink(capture, redactor=Redactor("none"))
    sink.start({})
    for index in range(50_001):
        sink.append("tool_call", {"name": "lookup", "args": {"order": f"A-{index}"}, "callId": f"t{index}"})
        sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": {"status": "shipped", "n": index}})
    sink.finalize("ok")
    page = report(tmp_path, str(capture))
    assert page.stat().st_size < 20_000_000
    data = payload(page)
    assert len(data["events"]) == MAX_PAGE_EVENTS == 100_000 and data["eventCount"] == 100_002
    assert len(data["rows"]) == 50_001 and data["rows"][-1]["text"] == 'lookup({"order":"A-50000"})  →  ok {"status":"shipped","n":50000}'
    seen = run_page(page)
    assert seen["rows"] == 500 and seen["pager"] == "page 1 of 101 · 50001 rows"
    assert "(the first 100000 embedded whole, every one in the timeline)" in seen["meta"]
    browser = _browser()
    if browser is not None:
        dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
                              "--dump-dom", page.as_uri() + "#seq=100000"], capture_output=True, text=True, timeout=300)
        assert 'data-ready="true"' in dom.stdout and "page 101 of 101" in dom.stdout
        assert f"run `wop show {data['manifest']['captureId']} --seq 100001` for its JSON" in dom.stdout


def _browser() -> str | None:
    return next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)


def test_in_a_real_headless_browser(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium on PATH (CI installs Debian's chromium); the node harness covers the page's script")
    page = report(tmp_path, str(FIXTURES / "support-agent"), "--against", str(FIXTURES / "support-agent-changed"))
    shot = tmp_path / "report.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert 'data-ready="true"' in dom.stdout and "first-divergence" in dom.stdout and "path-hl" in dom.stdout
    clicked = subprocess.run([browser, *flags, "--dump-dom", page.as_uri() + "#seq=6"], capture_output=True, text=True,
                             timeout=120)
    assert 'class="selected"' in clicked.stdout or "selected" in clicked.stdout
    assert "events 6–7" in clicked.stdout and "<details" in clicked.stdout and "cacheKey" in clicked.stdout
    subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1400,900", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 0
