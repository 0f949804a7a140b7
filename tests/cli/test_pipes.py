"""A reader that stops early (`wop show last | head`) ends wop quietly with exit 0, never 1 ("differences")."""

import os
import subprocess
import sys

import pytest

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from tests.conftest import ROOT


@pytest.fixture
def big_capture(tmp_path):
    sink = CaptureSink(tmp_path / "big", redactor=Redactor("none"))
    sink.start({})
    for index in range(5_000):
        sink.append("tool_call", {"name": "lookup", "args": {"order": f"A-{index}"}, "callId": f"t{index}"})
        sink.append("tool_result", {"callId": f"t{index}", "ok": True, "result": {"status": "shipped"}})
    sink.finalize("ok")
    return tmp_path / "big"


@pytest.mark.parametrize("args", [["show"], ["show", "--json"], ["show", "--jsonl"]])
def test_a_closed_pipe_ends_the_command_quietly_with_exit_0(big_capture, args):
    command = [sys.executable, "-m", "openwop_cli", args[0], str(big_capture), *args[1:]]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                               env={**os.environ, "NO_COLOR": "1"})
    assert process.stdout.readline()
    process.stdout.close()  # the reader goes away, like `| head -1`
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 0
    assert stderr == b""
