"""Property: whatever a stranger does to a real capture — bytes flipped, fields retyped, the manifest rewritten, blobs
swapped for links, FIFOs or other bytes, hashes re-forged, values nested a thousand deep — reading it, verifying it,
showing it, diffing it and folding its state in-process raise nothing but wop's own errors (never an exit 70).

The commands are called as the CLI calls them (their functions, in this process); 1,000 examples in all
(WOP_FUZZ_EXAMPLES per test sets more, or fewer).
"""

import hashlib
import os
import shutil
import zlib
from array import array
from collections import deque
from pathlib import Path

import orjson
import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_cli.cli import diff as diff_command
from openwop_cli.cli import report as report_command
from openwop_cli.cli import show as show_command
from openwop_cli.cli import state as state_command
from openwop_cli.cli import verify as verify_command
from openwop_cli.cli.diff import AlignBy
from openwop_cli.errors import WopError
from openwop_cli.format.reader import CaptureReader
from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink, checksums_to_bytes
from openwop_cli.format.verify import verify_capture
from openwop_cli.replay.source import ReplaySource

EXAMPLES = int(os.environ.get("WOP_FUZZ_EXAMPLES", 250))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
EVENTS = [
    ("run_start", {"argv": ["python", "agent.py"], "cwd": "/w", "python": "3.11", "env": ["HOME"],
                   "channels": {"ticket": {"reducer": "merge"}}}),
    ("llm_request", {"provider": "openai", "model": "m", "callId": "l1", "cacheKey": "ab" * 32,
                     "request": {"messages": [{"role": "user", "content": "where is my order?"}]}}),
    ("llm_response", {"provider": "openai", "model": "m", "callId": "l1", "ok": True, "stopReason": "stop",
                      "usage": {"prompt_tokens": 3}, "response": {"choices": [{"message": {"content": "shipped"}}]}}),
    ("tool_call", {"name": "lookup", "args": {"id": "A-1"}, "callId": "t1"}),
    ("tool_result", {"callId": "t1", "ok": True, "result": {"page": "x" * 2_000}}),  # a blob (threshold 1 KiB)
    ("state_mutation", {"kind": "declare", "channel": "notes", "declaration": {"reducer": "append"}}),
    ("state_mutation", {"kind": "channel", "channel": "notes", "value": ["a"], "reducer": "append", "nodeId": "n1"}),
    ("state_mutation", {"kind": "channel", "channel": "ticket", "value": {"id": 1}, "reducer": "merge"}),
    ("state_mutation", {"kind": "variable", "key": "_loopbackCount:x", "value": 1}),
    ("nondeterministic", {"source": "clock", "key": "now", "value": "2025-01-01T00:00:00Z"}),
    ("tool_call", {"name": "refund", "args": {}, "callId": "t2"}),
    ("tool_result", {"callId": "t2", "ok": False, "error": {"type": "ValueError", "message": "no"}}),
    ("run_end", {"exitCode": 0, "status": "ok", "durationMs": 12}),
]
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
                         st.floats(allow_nan=False, allow_infinity=False),
                         st.text(alphabet=st.sampled_from("ab$:/.\\\"\x1b\x07\u202e[]{}0"), max_size=8),
                         st.sampled_from(["sha256:" + "0" * 64, "/dev/zero", "events.crc32", "../x"]))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["$blob", "seq", "type", "data", "callId", "path",
                                                                  "size", "encoding", "x"]), inner, max_size=3)),
    max_leaves=6)


def build(path: Path, events: list) -> Path:
    sink = CaptureSink(path, redactor=Redactor("default", ()), blob_threshold=1024)
    sink.start({"program": {"argv": ["python", "agent.py"], "cwd": "/w"}})
    pin = {"path": "agent.py", "sha256": "0" * 64, "blob": sink.blobs.put_ref(b"print('agent')\n", "utf-8")}
    for event_type, data in events:
        sink.append(event_type, data)
    sink.finalize("ok", program={"argv": ["python", "agent.py"], "cwd": "/w", "script": [pin]})
    return path


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    root = tmp_path_factory.mktemp("originals")
    return build(root / "base", EVENTS), build(root / "other", EVENTS[:4] + EVENTS[6:])


def forge(capture: Path) -> None:
    """Recompute what anyone can: the manifest's sha256 and the per-line checksums."""
    data = (capture / "events.jsonl").read_bytes()
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    if isinstance(manifest, dict) and isinstance(manifest.get("integrity"), dict):
        manifest["integrity"]["eventsHash"] = hashlib.sha256(data).hexdigest()
        (capture / "manifest.json").write_bytes(orjson.dumps(manifest))
    lines = data.splitlines(keepends=True)
    (capture / "events.crc32").write_bytes(checksums_to_bytes(array("I", map(zlib.crc32, lines))))


def replace_at(value, steps: list[int], new):
    """value with the node reached by steps (indices into keys or items, wrapping) replaced by new."""
    if not steps or not isinstance(value, (dict, list)) or not value:
        return new
    if isinstance(value, dict):
        key = list(value)[steps[0] % len(value)]
        return {**value, key: replace_at(value[key], steps[1:], new)}
    index = steps[0] % len(value)
    return [*value[:index], replace_at(value[index], steps[1:], new), *value[index + 1:]]


def blobs_of(capture: Path) -> list[Path]:
    return sorted(path for path in (capture / "blobs").rglob("*") if path.is_file() and not path.is_symlink())


def exercise(capture: Path, other: Path, command: str) -> None:
    """Read and verify the capture, show it, fold its state, index it for replay, then one more command (diff,
    report, one event, JSON outputs), each as the CLI runs it: only WopError (or a typer exit) may come out."""
    calls = {
        "show": lambda: show_command.command(str(capture), None, None, None, None, None, None, False, True, False,
                                             json_output=False, json_lines=False),
        "show --json": lambda: show_command.command(str(capture), ["llm,tool"], None, "a", 1, None, None, False, True,
                                                    True, json_output=True, json_lines=False),
        "show --jsonl": lambda: show_command.command(str(capture), None, None, None, None, None, None, False, False,
                                                     True, json_output=False, json_lines=True),
        "show --seq": lambda: show_command.command(str(capture), None, None, None, None, None, 4, False, True, False,
                                                   json_output=False, json_lines=False),
        "diff": lambda: diff_command.command(str(capture), str(other), ignore=None, max_diffs=None, align=AlignBy.seq,
                                             run_metadata=None, json_output=False, detail=False),
        "diff --json": lambda: diff_command.command(str(other), str(capture), ignore=None, max_diffs=3,
                                                    align=AlignBy.content, run_metadata=None, json_output=True,
                                                    detail=True),
        "state": lambda: state_command.command(str(capture), None, None, None, False),
        "state --json": lambda: state_command.command(str(capture), 7, None, None, True),
        "verify": lambda: verify_command.command(str(capture), False),
        "report": lambda: report_command.command(str(capture), str(other), capture.parent / "report.html",
                                                 AlignBy.content),
        "replay source": lambda: ReplaySource(capture).close(),
    }
    steps = [lambda: verify_capture(capture), lambda: deque(CaptureReader(capture, resolve_blobs=True), 0),
             *(calls[name] for name in ALWAYS), calls[command]]
    for step in steps:
        try:
            step()
        except (WopError, typer.Exit):
            pass


ALWAYS = ("show", "state", "show --json", "show --jsonl", "replay source")


@pytest.fixture(scope="module")
def original_files(originals) -> dict[Path, tuple[bytes, int]]:
    """The original capture's files (all regular: the sink makes no links), their bytes and modes."""
    return {path.relative_to(originals[0]): (path.read_bytes(), path.stat().st_mode)
            for path in sorted(originals[0].rglob("*")) if path.is_file()}


@pytest.fixture
def copy_of(original_files, tmp_path):
    """A fresh copy of the original capture for each example (hypothesis calls the test many times), written from
    memory: copytree's walk and copying of metadata was a third of an example's time."""
    work = tmp_path / "mutant"

    def copy() -> Path:
        shutil.rmtree(work, ignore_errors=True)
        capture = work / "capture"
        for relative, (data, mode) in original_files.items():
            path = capture / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(mode)
        return capture

    return copy


COMMANDS = st.sampled_from(["show --seq", "diff", "diff --json", "state --json", "verify", "report"])
FIELDS = st.sampled_from(["callId", "name", "ok", "error", "kind", "channel", "key", "reducer", "source", "provider",
                          "model", "usage", "stopReason", "argv", "cwd", "exitCode", "status", "durationMs", "value",
                          "args", "result", "request", "response", "declaration", "channels", "nodeId", "schemaVersion",
                          "cacheKey", "code", "divergencePoint", "jsonPath", "min", "max"])
ENVELOPE = st.sampled_from(["version", "seq", "ts", "type", "data", "captureId", "runId", "origin", "sourceSeq"])


@SETTINGS
@given(target=st.sampled_from(["events.jsonl", "manifest.json", "events.crc32", "blob"]),
       edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.sampled_from(["set", "delete", "insert"]),
                                st.sampled_from(b'{}[]",:\n0a\\\x00\xff')), min_size=1, max_size=4),
       reforge=st.booleans(), command=COMMANDS)
def test_flipped_bytes(copy_of, originals, target, edits, reforge, command):
    capture = copy_of()
    path = blobs_of(capture)[0] if target == "blob" else capture / target
    data = bytearray(path.read_bytes())
    for where, operation, byte in edits:
        index = int(where * len(data))
        if operation == "set" and data:
            data[index] = byte
        elif operation == "delete" and data:
            del data[index]
        else:
            data.insert(index, byte)
    path.write_bytes(bytes(data))
    if reforge:
        try:
            forge(capture)
        except (orjson.JSONDecodeError, TypeError):
            pass
    exercise(capture, originals[1], command)


@SETTINGS
@given(edits=st.lists(st.tuples(st.integers(0, len(EVENTS) - 1), st.sampled_from(["envelope", "data", "anywhere"]),
                                ENVELOPE, FIELDS, st.lists(st.integers(0, 20), max_size=5), JSON_VALUES),
                      min_size=1, max_size=4),
       reforge=st.booleans(), command=COMMANDS)
def test_retyped_fields(copy_of, originals, edits, reforge, command):
    capture = copy_of()
    lines = (capture / "events.jsonl").read_bytes().splitlines(keepends=True)
    for line, where, envelope_key, data_key, steps, value in edits:
        event = orjson.loads(lines[line])
        if where == "envelope" and isinstance(event, dict):
            event[envelope_key] = value
        elif where == "data" and isinstance(event, dict) and isinstance(event.get("data"), dict):
            event["data"][data_key] = value
        else:
            event = replace_at(event, steps, value)
        lines[line] = orjson.dumps(event) + b"\n"
    (capture / "events.jsonl").write_bytes(b"".join(lines))
    if reforge:
        forge(capture)
    exercise(capture, originals[1], command)


@SETTINGS
@given(blob=st.sampled_from(["link to /dev/zero", "fifo", "directory", "edited", "missing", "other json", "none"]),
       checksums=st.sampled_from(["fifo", "missing", "short", "link to /dev/zero", "kept"]),
       depth=st.sampled_from([0, 120, 251, 252, 253, 300, 1000]), line=st.integers(0, len(EVENTS) - 1),
       reforge=st.booleans(), command=COMMANDS)
def test_swapped_files_and_deep_values(copy_of, originals, blob, checksums, depth, line, reforge, command):
    capture = copy_of()
    if depth:
        lines = (capture / "events.jsonl").read_bytes().splitlines(keepends=True)
        nested = b"[" * depth + b"1" + b"]" * depth
        lines[line] = lines[line].replace(b'"data":{', b'"data":{"deep":' + nested + b",", 1)
        (capture / "events.jsonl").write_bytes(b"".join(lines))
    if reforge:
        forge(capture)
    for path, how in [(blobs_of(capture)[blob != "edited"], blob), (capture / "events.crc32", checksums)]:
        swap(path, how)
    exercise(capture, originals[1], command)


def swap(path: Path, how: str) -> None:
    """Replace a file of the capture the way a stranger might."""
    if how in ("kept", "none"):
        return
    if how == "edited":
        path.write_bytes(path.read_bytes()[:-1] + b"!")
    elif how == "short":
        path.write_bytes(path.read_bytes()[:3])
    elif how == "other json":
        path.write_bytes(orjson.dumps({"$blob": "sha256:" + "0" * 64}))
    else:
        path.unlink()
        if how == "link to /dev/zero":
            path.symlink_to("/dev/zero")
        elif how == "fifo":
            os.mkfifo(path)
        elif how == "directory":
            path.mkdir()


@SETTINGS
@given(edits=st.lists(st.tuples(st.lists(st.integers(0, 20), min_size=1, max_size=4), JSON_VALUES), min_size=1,
                      max_size=3), command=COMMANDS)
def test_retyped_manifests(copy_of, originals, edits, command):
    capture = copy_of()
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    for section in ("integrity", "program", "lost", "source", "redaction", "score", "model", "tool"):
        manifest.setdefault(section, {})
    for steps, value in edits:
        manifest = replace_at(manifest, steps, value)
    (capture / "manifest.json").write_bytes(orjson.dumps(manifest))
    exercise(capture, originals[1], command)
