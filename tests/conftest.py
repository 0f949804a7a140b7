"""Shared test helpers: real captures written by the real sink, and the real `wop` entry point."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def write_capture(path: Path, events: list[tuple[str, dict]], *, redactor: Redactor | None = None,
                  finalize: bool = True, **seed) -> Path:
    """A capture made through CaptureSink with the given (type, data) events."""
    sink = CaptureSink(path, redactor=redactor or Redactor("default", ()))
    sink.start(seed)
    for event_type, data in events:
        sink.append(event_type, data)
    if finalize:
        sink.finalize("ok")
    else:
        sink.flush()
    return path


def sample_events(count: int = 6) -> list[tuple[str, dict]]:
    """A small, plausible run: start, a tool call and result, an llm pair, end."""
    events = [("run_start", {"argv": ["python", "agent.py"]})]
    for index in range(count):
        events.append(("tool_call", {"name": "lookup", "args": {"id": index}, "callId": f"c{index}"}))
        events.append(("tool_result", {"callId": f"c{index}", "ok": True, "result": {"id": index, "v": "x" * index}}))
    events.append(("run_end", {"exitCode": 0, "status": "ok"}))
    return events


@pytest.fixture
def wop_home(tmp_path, monkeypatch) -> Path:
    """An empty store for this test (WOP_HOME), also passed to subprocesses."""
    home = tmp_path / "wop-home"
    monkeypatch.setenv("WOP_HOME", str(home))
    return home


def run_wop(*args: str, input: str | None = None, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real `wop` command line in a subprocess (python -m openwop_cli), no colour."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "openwop_cli", *args],
        capture_output=True, text=True, input=input, env=full_env, cwd=cwd or ROOT, timeout=120,
    )
