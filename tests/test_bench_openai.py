"""bench/openai_calls.py, the program bench_openai_2000.py times, works at a tiny size: plain, captured, replayed
strictly offline, and inside VCR.py cassettes (no timing is asserted)."""

import os
import subprocess
import sys

import orjson

from openwop_cli.format.reader import CaptureReader
from tests.conftest import ROOT, requires, run_wop
from tests.fake_provider import FakeProvider

PROGRAM = ROOT / "bench" / "openai_calls.py"


def figures_of(path) -> dict:
    figures = orjson.loads(path.read_text())
    assert figures["calls"] == 5 and figures["us"] > 0 and figures["seconds"] > 0
    return figures


def test_the_program_runs_plain_captured_and_replayed_strictly(tmp_path):
    figures = tmp_path / "figures.json"
    with FakeProvider() as provider:
        plain = subprocess.run([sys.executable, str(PROGRAM), provider.url, "5"], capture_output=True, text=True,
                               env={**os.environ, "BENCH_FIGURES": str(figures)}, timeout=120)
        assert plain.returncode == 0, plain.stderr
        figures_of(figures)
        figures.unlink()
        captured = run_wop("capture", "--out", str(tmp_path / "capture"), "--", sys.executable, str(PROGRAM),
                           provider.url, "5", env={"BENCH_FIGURES": str(figures)})
        assert captured.returncode == 0, captured.stderr
        assert len(provider.requests) == 10
    figures_of(figures)
    events = [event["type"] for event in CaptureReader(tmp_path / "capture")]
    assert events.count("llm_request") == 5 and events.count("llm_response") == 5
    figures.unlink()
    replayed = run_wop("replay", "--strict", str(tmp_path / "capture"), "--out", str(tmp_path / "replay"),
                       env={"BENCH_FIGURES": str(figures)})
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    figures_of(figures)


def test_the_program_records_and_plays_vcr_cassettes(tmp_path):
    requires("vcr")
    figures = tmp_path / "figures.json"
    for matching in ("default", "strict"):
        cassette = tmp_path / f"{matching}.yaml"
        with FakeProvider() as provider:
            for mode in ("record", "play"):
                done = subprocess.run([sys.executable, str(PROGRAM), provider.url, "5"], capture_output=True,
                                      text=True, timeout=120, env={**os.environ, "BENCH_FIGURES": str(figures),
                                                                   "BENCH_VCR": f"{mode}:{matching}:{cassette}"})
                assert done.returncode == 0, done.stderr
                figures_of(figures)
            assert len(provider.requests) == 5  # the playback sent none
        assert cassette.read_text().count("chat/completions") == 5
