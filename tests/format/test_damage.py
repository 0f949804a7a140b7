"""Damaged captures: verify names the line and seq, show keeps the intact prefix."""

import orjson
import pytest

from openwop_cli.format.reader import CaptureReader
from openwop_cli.format.verify import verify_capture
from tests.conftest import run_wop, sample_events, write_capture


@pytest.fixture
def capture(tmp_path):
    return write_capture(tmp_path / "c", sample_events(4))  # 10 events


def lines_of(capture):
    return (capture / "events.jsonl").read_bytes().splitlines(keepends=True)


def test_torn_last_line_is_named_and_the_prefix_still_shows(capture):
    lines = lines_of(capture)
    (capture / "events.jsonl").write_bytes(b"".join(lines[:-1]) + lines[-1][:25])
    verify = run_wop("verify", str(capture))
    assert verify.returncode == 3
    assert "line 10" in verify.stdout and "torn" in verify.stdout
    show = run_wop("show", str(capture))
    assert show.returncode == 0
    assert "line 10" in show.stderr and "warning" in show.stderr
    assert sum(" tool " in line for line in show.stdout.splitlines()) == 4 and "run_end" not in show.stdout


def test_seq_jump_is_named_with_line_and_seq(capture):
    lines = lines_of(capture)
    del lines[4]
    (capture / "events.jsonl").write_bytes(b"".join(lines))
    report = verify_capture(capture)
    assert not report.ok
    gap = next(p for p in report.problems if p.kind == "seq_gap")
    assert (gap.line, gap.seq) == (5, 5)
    assert "seq jumps from 3 to 5" in gap.message
    reader = CaptureReader(capture)
    assert [e["seq"] for e in reader] == [0, 1, 2, 3]
    verify = run_wop("verify", str(capture))
    assert verify.returncode == 3 and "line 5" in verify.stdout


def test_an_edited_value_is_pinned_to_its_line(capture):
    lines = lines_of(capture)
    lines[6] = lines[6].replace(b'"ok":true', b'"ok":false')
    (capture / "events.jsonl").write_bytes(b"".join(lines))
    report = verify_capture(capture)
    assert [(p.kind, p.line, p.seq) for p in report.problems] == [("changed_line", 7, 6)]
    verify = run_wop("verify", str(capture), "--json")
    assert verify.returncode == 3
    assert orjson.loads(verify.stdout)["problems"][0]["line"] == 7
    show = run_wop("show", str(capture))
    assert "line 7" in show.stderr


def test_an_incomplete_capture_is_explained(tmp_path):
    capture = write_capture(tmp_path / "c", sample_events(2), finalize=False)
    verify = run_wop("verify", str(capture))
    assert verify.returncode == 3
    assert "never finalized" in verify.stdout


def test_a_fixture_verifies_clean():
    from tests.conftest import FIXTURES

    for name in ("support-agent", "support-agent-changed"):
        done = run_wop("verify", str(FIXTURES / name))
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith("ok capture")


def test_an_edited_line_with_a_bad_envelope_is_named_even_though_intact_lines_skip_envelope_checks(capture):
    lines = lines_of(capture)
    lines[3] = lines[3].replace(b'"type":"tool_call"', b'"type":"nonsense"')
    (capture / "events.jsonl").write_bytes(b"".join(lines))
    report = verify_capture(capture)
    kinds = {(problem.kind, problem.line) for problem in report.problems}
    assert ("changed_line", 4) in kinds and ("bad_event", 4) in kinds
    (capture / "events.crc32").unlink()
    kinds = {(problem.kind, problem.line) for problem in verify_capture(capture).problems}
    assert ("bad_event", 4) in kinds and any(kind == "hash_mismatch" for kind, _ in kinds)
