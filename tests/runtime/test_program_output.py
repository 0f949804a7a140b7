"""The program's stdout and stderr under `wop capture`: passed through as they come, kept, and split at the marks
recorded calls write (host.output, runtime.outputmarks, format.output)."""

import os
import pty
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.format.blobs import BlobStore
from openwop_cli.format.output import KeptStream, output_problem, output_record, recorded_text
from openwop_cli.format.redact import Redactor
from openwop_cli.host.output import ProgramOutput, _MarkedStream
from openwop_cli.replay.output import normalized, output_divergence
from openwop_cli.runtime.outputmarks import BEGIN, END, MARK_PREFIX
from tests.conftest import ROOT
from tests.programs import read_terminal

pieces = st.lists(st.tuples(st.booleans(), st.binary(max_size=40)), max_size=12)


def _stream_of(parts: list[tuple[bool, bytes]]) -> bytes:
    """The bytes a program writes: each part, with BEGIN/END where it goes into or out of a recorded call."""
    written, inside = b"", False
    for in_call, data in parts:
        if in_call != inside:
            written += BEGIN if in_call else END
            inside = in_call
        written += data
    return written


def _joined(pieces_out: list[tuple[bool, bytes]]) -> list[tuple[bool, bytes]]:
    merged: list[tuple[bool, bytes]] = []
    for in_call, data in pieces_out:
        if not data:
            continue
        if merged and merged[-1][0] == in_call:
            merged[-1] = (in_call, merged[-1][1] + data)
        else:
            merged.append((in_call, data))
    return merged


@settings(max_examples=300, deadline=None)
@given(pieces, st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=30))
def test_marks_are_taken_out_wherever_reads_cut_the_stream(parts, sizes):
    """Whatever the program writes between marks (its own bytes that look like a mark's start included), and
    however the pipe's reads cut it, the pieces come out whole and in order, attributed to calls as written."""
    parts = [(in_call, data) for in_call, data in parts if data]
    stream = _stream_of(parts)
    marked, out, position, index = _MarkedStream(), [], 0, 0
    while position < len(stream):
        size = sizes[index % len(sizes)]
        out.extend(marked.feed(stream[position:position + size]))
        position, index = position + size, index + 1
    out.extend(marked.feed(b"", end=True))
    assert _joined(out) == _joined(parts)


def test_bytes_that_begin_like_a_mark_are_the_programs():
    marked = _MarkedStream()
    out = marked.feed(MARK_PREFIX + b"xy" + b"tail") + marked.feed(b"", end=True)
    assert b"".join(data for _, data in out) == MARK_PREFIX + b"xytail"
    assert not any(in_call for in_call, _ in out)


def test_the_manifest_entry_says_where_calls_printed_and_a_replay_leaves_them_out(tmp_path):
    segments = [(False, b"before\n"), (True, b"inside a tool\n"), (False, b"after sk-proj-" + b"A1b2" * 12 + b"\n")]
    record = output_record(segments, 80, False, BlobStore(tmp_path), Redactor("default", ()))
    assert output_problem(record, "stdout") is None and record["lines"] == 3
    manifest = {"output": {"stdout": record}}
    assert "inside a tool" in recorded_text(manifest, BlobStore(tmp_path), "stdout")
    kept = recorded_text(manifest, BlobStore(tmp_path), "stdout", outside_calls=True)
    assert kept.startswith("before\nafter ") and "inside" not in kept and "A1b2A1b2" not in kept
    strict = output_record(segments, 80, False, BlobStore(tmp_path), Redactor("strict", ()))
    assert strict == {"bytes": 80, "lines": 3, "redacted": True}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["bytes", "lines", "text", "blob", "truncated", "redacted", "calls"]),
                       st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none(),
                                 st.lists(st.lists(st.integers(), max_size=3), max_size=3))))
def test_a_damaged_output_entry_is_named_never_a_crash(entry):
    problem = output_problem(entry, "stdout")
    assert problem is None or problem.startswith("field output.stdout")


def test_normalization_keeps_what_means_something():
    assert normalized("2026-11-28 07:01:48,399 INFO done in 12.5 ms") == "<time> INFO done in <duration>"
    assert normalized("<Foo object at 0x7fb24c798a90> 140403763939984") == "<Foo object at <address>> <number>"
    assert normalized("pid 5692 wrote /tmp/tmpab12cd/x.txt", ("5692",)) == "pid <pid> wrote <temp>"
    assert normalized("the answer is 42 of 1000 orders") == "the answer is 42 of 1000 orders"
    assert output_divergence({"stdout": "took 0.5s\n"}, {"stdout": "took 1.25s\n"}) is None
    assert output_divergence({"stdout": "total 41\n"}, {"stdout": "total 42\n"}).json_path == "$.output.stdout[0]"


COLLECTED_GENERATOR = """an error occurred during closing of asynchronous generator <async_generator object Response.aiter_bytes at 0x7f>
asyncgen: <async_generator object Response.aiter_bytes at 0x7f>
Traceback (most recent call last):
  File "/x/httpx2/_models.py", line 1010, in aiter_bytes
    yield chunk
GeneratorExit

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/x/contextlib.py", line 386, in __aexit__
    await self.thing.aclose()
RuntimeError: aclose(): asynchronous generator is already running
"""
# the chained exception was raised by aclose() itself, in C: its line has no traceback above it
UNTRACED_CHAIN = """an error occurred during closing of asynchronous generator <async_generator object A.__aiter__ at 0x7f>
asyncgen: <async_generator object A.__aiter__ at 0x7f>
Traceback (most recent call last):
  File "agent.py", line 12, in main
    raise RuntimeError("the agent's handler failed on a chunk")
RuntimeError: the agent's handler failed on a chunk

During handling of the above exception, another exception occurred:

RuntimeError: aclose(): asynchronous generator is already running
"""
PROGRAM_DIED = """Traceback (most recent call last):
  File "agent.py", line 12, in <module>
    asyncio.run(main())
RuntimeError: the agent's handler failed on a chunk
"""


def test_a_collected_generators_report_is_not_the_programs_output():
    """asyncio prints it in a capture (a live stream stood under the generator) and not in the replay: an unchanged
    program. What follows the report is still compared, and a report in the middle is taken out as a whole."""
    assert output_divergence({"stderr": COLLECTED_GENERATOR + PROGRAM_DIED}, {"stderr": PROGRAM_DIED}) is None
    assert output_divergence({"stderr": PROGRAM_DIED + COLLECTED_GENERATOR}, {"stderr": PROGRAM_DIED}) is None
    other = PROGRAM_DIED.replace("on a chunk", "on a header")
    found = output_divergence({"stderr": COLLECTED_GENERATOR + PROGRAM_DIED}, {"stderr": other})
    assert found is not None and found.json_path == "$.output.stderr[3]"
    unraisable = "Exception ignored in: <async_generator object gen at 0x7f>\nTraceback (most recent call last):\n" \
                 "  File \"a.py\", line 3, in gen\nRuntimeError: boom\n"
    assert output_divergence({"stderr": "start\n" + unraisable + "end\n"}, {"stderr": "start\nend\n"}) is None
    assert output_divergence({"stderr": UNTRACED_CHAIN + PROGRAM_DIED}, {"stderr": PROGRAM_DIED}) is None
    assert output_divergence({"stderr": UNTRACED_CHAIN + "left\n"}, {"stderr": "right\n"}).expected_value == "left"


def test_a_program_still_sees_a_terminal_and_its_output_is_kept(tmp_path):
    """wop capture at a terminal gives the program a pseudo-terminal: isatty() is true, colours and line buffering
    stay as without wop, and what it printed is kept without the terminal's line endings."""
    program = "import sys; print('tty', sys.stdout.isatty(), sys.stderr.isatty()); print('warn', file=sys.stderr)"
    ours, theirs = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "openwop_cli", "capture", "--out", str(tmp_path / "run"), "--",
                                sys.executable, "-c", program], stdout=theirs, stderr=subprocess.PIPE, cwd=ROOT)
    os.close(theirs)
    seen = read_terminal(ours, process, 30)
    assert b"tty True False" in seen  # stdout a terminal (ours was), stderr a pipe (ours was)
    import json

    output = json.loads((tmp_path / "run" / "manifest.json").read_text())["output"]
    assert output["stdout"]["text"] == "tty True False\n" and output["stderr"]["text"] == "warn\n"


PRIVATE_KEY = (b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq2" + b"x9Zq" * 40 + b"\n" + b"Qk3p" * 16
               + b"\n-----END RSA PRIVATE KEY-----\n")
written_lines = st.lists(st.one_of(
    st.binary(max_size=30),
    st.text(max_size=20).map(lambda text: (text + "\n").encode()),
    st.sampled_from([b"token sk-proj-" + b"A1b2" * 12 + b"\n", PRIVATE_KEY, "naïve café ✓\n".encode(),
                     b"\n", b"\xc3", b"\xff\xfe"])), max_size=25)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), written_lines.map(b"".join)), max_size=8),
       st.integers(min_value=1, max_value=300), st.lists(st.integers(min_value=1, max_value=80), min_size=1))
def test_output_kept_a_step_at_a_time_is_the_output_kept_at_once(tmp_path_factory, parts, step, reads):
    """Redacting and storing while the program runs (steps of whole lines, a private key's lines together), from
    reads cut anywhere, gives the entry redacting it all at the end gives: the same text, calls and counts."""
    blobs = BlobStore(tmp_path_factory.mktemp("blobs"))
    redactor = Redactor("default", ())
    at_once = output_record(parts, 999, False, blobs, redactor)
    stepwise = KeptStream(blobs, redactor, step_bytes=step)
    for in_call, data in parts:
        start = 0
        while start < len(data):
            size = reads[start % len(reads)]
            stepwise.add(in_call, data[start:start + size])
            start += size
    assert stepwise.record(999, False) == at_once
    assert "A1b2A1b2" not in at_once.get("text", "") and "x9Zqx9Zq" not in at_once.get("text", "")


def test_output_past_the_threshold_is_one_blob_written_as_it_came(tmp_path):
    blobs = BlobStore(tmp_path)
    kept = KeptStream(blobs, Redactor("default", ()), step_bytes=4096)
    lines = [f"line {number}: the agent wrote a sentence\n".encode() for number in range(20_000)]
    for number, line in enumerate(lines):
        kept.add(number % 1000 == 7, line)
    record = kept.record(sum(map(len, lines)), False)
    assert blobs.get(record["blob"]) == b"".join(lines) and record["lines"] == 20_000
    assert record["calls"][0] == [len(b"".join(lines[:7])), len(b"".join(lines[:8]))] and len(record["calls"]) == 20
    assert sorted(path.name for path in (tmp_path / "blobs").rglob("*") if path.is_file()) == [record["blob"][7:]]


def test_a_failure_to_store_the_output_stops_keeping_it_not_copying_it(tmp_path):
    """A full disk (here: the blobs folder cannot be made) while the program writes: the copying goes on to the
    end, so the program never blocks on a full pipe, and the capture says the output was not kept."""
    (tmp_path / "blobs").write_text("not a folder")
    output = ProgramOutput(None, None, keep=True)
    stdout, _stderr = output.child_streams()
    program_end = os.dup(stdout)
    output.start()
    output.keep_into(BlobStore(tmp_path), Redactor("default", ()))
    for _ in range(40):
        os.write(program_end, b"a line of the program's output\n" * 1000)
    os.close(program_end)
    output.join(30)
    assert output.sizes["stdout"] == 40 * 31 * 1000
    assert output.records(BlobStore(tmp_path), Redactor("default", ())) is None
    assert output.keep_failure is not None and output.keep_failure.startswith("stdout: ")
