"""`wop ls` and the summary of `wop replay DIR` stay readable: at an 80-column terminal no line is wider than the
terminal, no name is cut and a long command or path keeps its head and tail; to a pipe each capture is one whole
line, whatever COLUMNS says."""

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from openwop_cli.report.fitted import shortened_command, shortened_path
from tests.conftest import ROOT, run_wop, sample_events
from tests.programs import read_terminal

MODULE_COMMAND = ["python", "-m", "my_package.agents.customer_support", "--config", "configs/prod.yaml"]
NIGHTLY_COMMAND = ["/home/alice/projects/support/repository/scripts/run_the_nightly_evaluation_agent.py",
                   "--dataset", "/data/evals/2024/june/customer_support_golden_set.jsonl"]
CAPTURES = [  # id, name, command
    ("1a2b3c4d5e6f0001", "my_package.agents.customer_support", MODULE_COMMAND),
    ("2a2b3c4d5e6f0002", "customer-support-prod-2024-06", MODULE_COMMAND),
    ("3a2b3c4d5e6f0003", "checkout", ["python3", "examples/support_agent.py"]),
    ("4a2b3c4d5e6f0004", "run_the_nightly_evaluation_agent", NIGHTLY_COMMAND),
    *((f"{number:04d}b0b0c0c0d0d0", f"support-case-{number:02d}", MODULE_COMMAND) for number in range(10)),
]
CUT_WORD = re.compile(r"\w…")  # "com…", "a1…": a word cut short
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def in_terminal(args: list[str], columns: int, cwd=ROOT) -> str:
    """What `wop ARGS` shows on a pseudo-terminal `columns` wide (COLUMNS unset, no colour), as lines of text."""
    ours, theirs = pty.openpty()
    fcntl.ioctl(theirs, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}
    process = subprocess.Popen([sys.executable, "-m", "openwop_cli", *args], stdin=theirs, stdout=theirs,
                               stderr=theirs, cwd=cwd, env={**env, "NO_COLOR": "1", "PAGER": "cat",
                                                            "PYTHONPATH": str(ROOT)}, start_new_session=True)
    os.close(theirs)
    text = CONTROL.sub("", read_terminal(ours, process).decode()).replace("\r\n", "\n")
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def store_captures(home) -> None:
    now = int(time.time() * 1000)
    for age, (capture_id, name, argv) in enumerate(reversed(CAPTURES)):
        sink = CaptureSink(home / "captures" / capture_id, redactor=Redactor("default", ()))
        sink.start({"captureId": capture_id, "name": name, "createdAt": now - age * 1000, "program": {"argv": argv}})
        for event_type, data in sample_events(1):
            sink.append(event_type, data)
        sink.finalize("ok")


def assert_readable_at(output: str, columns: int) -> None:
    lines = output.splitlines()
    assert lines and max(len(line) for line in lines) <= columns, "\n".join(line for line in lines if len(line) > columns)
    assert not CUT_WORD.search(output), CUT_WORD.findall(output)


def test_ls_at_an_80_column_terminal_cuts_no_name_and_keeps_each_commands_script(wop_home):
    store_captures(wop_home)
    shown = in_terminal(["ls"], 80)
    assert_readable_at(shown, 80)
    lines = shown.splitlines()
    for capture_id, name, _argv in CAPTURES:
        row = next(line for line in lines if line.startswith(capture_id[:12]))
        assert f"  {name}  " in row, row
    assert "python3 examples/support_agent.py" in shown
    # the commands, on a line of their own under the name, keep their program and script, and what else fits
    assert "\n              python -m my_package.agents.customer_support --config …/prod.yaml\n" in shown
    assert "\n              …/run_the_nightly_evaluation_agent.py --dataset …\n" in shown


def test_ls_at_a_wide_terminal_is_one_line_a_capture_with_the_whole_command(wop_home):
    store_captures(wop_home)
    lines = in_terminal(["ls"], 200).splitlines()
    assert_readable_at("\n".join(lines), 200)
    assert len(lines) == len(CAPTURES) + 2  # the header, the captures, the count
    for capture_id, name, argv in CAPTURES:
        row = next(line for line in lines if line.startswith(capture_id[:12]))
        shown = " ".join(argv) if argv is not NIGHTLY_COMMAND else \
            "…/run_the_nightly_evaluation_agent.py --dataset …/customer_support_golden_set.jsonl"
        assert f"  {name}  " in row and row.endswith(f"  {shown}"), row


def test_ls_to_a_pipe_is_one_whole_tab_separated_line_a_capture_whatever_columns_says(wop_home):
    store_captures(wop_home)
    for columns in ("80", None):
        done = run_wop("ls", env={"COLUMNS": columns})
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == len(CAPTURES)
        by_id = {fields[0]: fields for fields in (line.split("\t") for line in lines)}
        for capture_id, name, argv in CAPTURES:
            listed_id, listed_name, created, status, events, _duration, command = by_id[capture_id]
            assert (listed_name, status, events, command) == (name, "ok", "4", " ".join(argv))
            assert datetime.fromisoformat(created).tzinfo is not None


PROGRAM = """
import sys
import openwop_cli as wop

@wop.tool
def lookup(order_id):
    return {"id": order_id}

print(lookup(sys.argv[1]))
"""
DEEP = "runs/customer_support/regression_suite_2024_06/production_traffic_samples"


def test_the_batch_summary_fits_80_columns_at_a_terminal_and_is_whole_to_a_pipe(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    names = [f"customer-support-regression-case-{number:02d}" for number in range(3)]
    for number, name in enumerate(names):
        done = run_wop("capture", "--name", name, "--out", str(tmp_path / DEEP / f"refund_request_{number:02d}"),
                       "--", sys.executable, str(program), str(number), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    shown = in_terminal(["replay", "runs"], 80, cwd=tmp_path)
    summary = shown[shown.index("wop replay: 3 captures"):]
    assert_readable_at(summary, 80)
    for number, name in enumerate(names):
        assert re.search(rf"^{name}  +ok ", summary, re.MULTILINE), summary
        assert re.search(rf"^  [0-9a-f]{{12}}  runs/\S+/refund_request_{number:02d}$", summary, re.MULTILINE), summary
    piped = run_wop("replay", "runs", env={"COLUMNS": "80", "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    for number, name in enumerate(names):
        row = next(line for line in piped.stdout.splitlines() if line.startswith(name))
        assert row.endswith(f"{DEEP}/refund_request_{number:02d}") and " ok " in row, row


words = st.text(st.sampled_from("abcxyz019._-"), min_size=1, max_size=30)


@given(st.lists(words, min_size=1, max_size=8), st.integers(min_value=1, max_value=120))
def test_a_shortened_command_fits_and_keeps_its_script_when_the_script_fits(parts, width):
    command = " ".join(parts)
    shown = shortened_command(command, width)
    assert len(shown) <= width
    if len(command) <= width:
        assert shown == command
    elif len(" ".join(parts[:1])) + 2 <= width and not any(part.endswith(".py") for part in parts) \
            and "-m" not in parts:
        assert shown.startswith(parts[0] + " …") or shown.startswith(parts[0] + " ")


@given(st.lists(words, min_size=1, max_size=8), st.integers(min_value=1, max_value=120))
def test_a_shortened_path_fits_and_keeps_its_last_part_when_it_fits(parts, width):
    path = "/".join(parts)
    shown = shortened_path(path, width)
    assert len(shown) <= width
    if len(path) <= width:
        assert shown == path
    elif len(parts[-1]) + 2 <= width:
        assert shown.endswith("/" + parts[-1]) and "…" in shown


def test_a_long_command_keeps_its_program_script_and_last_argument():
    command = "python -m my_package.agents.customer_support --config configs/prod.yaml --verbose"
    assert shortened_command(command, 60) == "python -m my_package.agents.customer_support … --verbose"
    assert shortened_command(" ".join(NIGHTLY_COMMAND), 90) == \
        "…/run_the_nightly_evaluation_agent.py --dataset …/customer_support_golden_set.jsonl"
    assert shortened_path("tests/runs/a/b/c/refund_request_07", 28) == "tests/…/c/refund_request_07"
