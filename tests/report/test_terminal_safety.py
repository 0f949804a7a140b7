"""Recorded data can never drive the terminal: control sequences in names, models and values reach every human
output of wop as visible escapes, never as raw ESC or BEL, and rich markup in them is shown, not obeyed."""

import sys
import textwrap

from hypothesis import given
from hypothesis import strategies as st

from openwop_cli.report.escape import clean, clean_inline
from tests.conftest import run_wop, write_capture

CLEAR = "\x1b[2J"
TITLE = "\x1b]0;pwned\x07"
CSI = "\x9b31m"
MARKUP = "[/][bold red]"
HOSTILE = f"{CLEAR}{TITLE}{CSI}{MARKUP}"
HOSTILE_EVENTS = [
    ("run_start", {"argv": ["agent.py", HOSTILE], "cwd": HOSTILE}),
    ("llm_request", {"provider": HOSTILE, "model": HOSTILE, "callId": "l1", "request": {"messages": [
        {"role": "user", "content": HOSTILE}]}}),
    ("llm_response", {"provider": HOSTILE, "model": HOSTILE, "callId": "l1", "ok": False,
                      "error": {"type": HOSTILE, "message": HOSTILE}}),
    ("tool_call", {"name": HOSTILE, "args": {HOSTILE: HOSTILE}, "callId": "t1"}),
    ("tool_result", {"callId": "t1", "ok": False, "error": HOSTILE}),
    ("state_mutation", {"kind": "channel", "channel": HOSTILE, "value": HOSTILE, "reducer": HOSTILE}),
    ("state_mutation", {"kind": "variable", "key": HOSTILE, "value": {HOSTILE: [HOSTILE]}}),
    ("nondeterministic", {"source": HOSTILE, "key": HOSTILE, "value": HOSTILE}),
    ("run_end", {"exitCode": 1, "status": "error", "error": HOSTILE}),
]


def assert_safe(done, name):
    assert done.returncode in (0, 1, 2, 3), (name, done.stderr)
    for stream in (done.stdout, done.stderr):
        for raw in ("\x1b", "\x07", "\x9b"):
            assert raw not in stream, (name, raw, stream[:300])


def test_show_state_diff_ls_and_verify_print_control_characters_as_escapes(tmp_path, wop_home):
    hostile = write_capture(wop_home / "captures" / "aaaa1111bbbb2222", HOSTILE_EVENTS, name=HOSTILE)
    plain = write_capture(tmp_path / "plain", [("run_start", {"argv": ["agent.py"]})])
    outputs = {
        "show": run_wop("show", str(hostile)),
        "show --seq": run_wop("show", str(hostile), "--seq", "3"),
        "show --seq state": run_wop("show", str(hostile), "--seq", "6"),
        "state": run_wop("state", str(hostile)),
        "diff": run_wop("diff", str(hostile), str(plain)),
        "ls": run_wop("ls"),
    }
    for name, done in outputs.items():
        assert_safe(done, name)
    assert "\\x1b[2J" in outputs["show"].stdout and "\\x9b31m" in outputs["show"].stdout
    assert MARKUP in outputs["show"].stdout and MARKUP in outputs["ls"].stdout
    assert "\\x1b]0;pwned\\x07" in outputs["state"].stdout
    (hostile / "events.jsonl").write_bytes((hostile / "events.jsonl").read_bytes().replace(b'"seq":4', b'"seq":9'))
    damaged = run_wop("verify", str(hostile))
    assert damaged.returncode == 3
    assert_safe(damaged, "verify")


REPLAYED = """
    import os
    import openwop_cli as wop

    @wop.tool
    def lookup(order):
        return order

    lookup(os.environ.get("ORDER", {order!r}))
"""


def test_a_replay_report_prints_recorded_values_as_escapes(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(REPLAYED.format(order=HOSTILE)))
    source = tmp_path / "source"
    assert run_wop("capture", "--out", str(source), "--", sys.executable, str(program), cwd=tmp_path).returncode == 0
    done = run_wop("replay", str(source), "--out", str(tmp_path / "replay"), env={"ORDER": "A-1"}, cwd=tmp_path)
    assert done.returncode == 1 and "event_payload_mismatch" in done.stdout + done.stderr
    assert_safe(done, "replay")
    assert "\\x1b[2J" in done.stdout + done.stderr


UNSAFE = [*map(chr, [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0), *range(0x200b, 0x2010),
                     *range(0x2028, 0x202f), *range(0x2066, 0x206a), 0xfeff])]


@given(st.text(alphabet=st.one_of(st.characters(), st.sampled_from([*UNSAFE, "\n", "\t"]))))
def test_clean_escapes_exactly_the_unsafe_characters(text):
    # Every unsafe character becomes its visible escape, everything else stays as it was: printable text, which
    # cannot hold one, passes untouched; clean_inline escapes newline and tab too.
    expected = "".join(ascii(char)[1:-1] if char in UNSAFE else char for char in text)
    assert clean(text) == expected
    assert clean_inline(text) == "".join(ascii(char)[1:-1] if char in [*UNSAFE, "\n", "\t"] else char for char in text)
