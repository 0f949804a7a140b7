"""A capture is data, never directions: hostile captures end in exit 3 (or 2) naming what is wrong — never a hang,
never exit 70 — through the real `wop` command line."""

import hashlib
import os
import subprocess
import sys
import zlib
from array import array

import orjson
import pytest

from openwop_cli.format.sink import checksums_to_bytes
from tests.conftest import run_wop, sample_events, write_capture

COMMANDS = {"verify": ("verify",), "show": ("show",), "show --json": ("show", "--json"), "state": ("state",),
            "diff": ("diff", "{other}"), "report": ("report", "-o", "{html}"), "replay": ("replay", "--json")}


@pytest.fixture
def capture(tmp_path):
    events = [*sample_events(2), ("tool_result", {"callId": "b", "ok": True, "result": "z" * 70_000})]
    return write_capture(tmp_path / "c", events, program={"argv": [sys.executable, "-c", "pass"], "cwd": str(tmp_path)})


def lines_of(capture):
    return (capture / "events.jsonl").read_bytes().splitlines(keepends=True)


def forge(capture, lines):
    """Write lines and recompute everything anyone can recompute: the sha256 in the manifest and the checksums
    (the signature, which only its writer's key makes, is dropped: the capture reads as unsigned)."""
    data = b"".join(lines)
    (capture / "events.jsonl").write_bytes(data)
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    manifest.pop("signature", None)
    manifest["integrity"]["eventsHash"] = hashlib.sha256(data).hexdigest()
    (capture / "manifest.json").write_bytes(orjson.dumps(manifest))
    (capture / "events.crc32").write_bytes(checksums_to_bytes(array("I", map(zlib.crc32, lines))))


def edit_manifest(capture, **fields):
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    manifest.update(fields)
    (capture / "manifest.json").write_bytes(orjson.dumps(manifest))


def run_everything(capture, tmp_path):
    """Every command that reads a capture, on this one: their exit codes and output."""
    other = write_capture(tmp_path / "other", sample_events(2))
    results = {}
    for name, command in COMMANDS.items():
        args = [part.format(other=other, html=tmp_path / "r.html") for part in command[1:]]
        results[name] = run_wop(command[0], str(capture), *args)
    for name, done in results.items():
        assert done.returncode in (0, 1, 2, 3), (name, done.stderr)
        assert "internal error" not in done.stderr, (name, done.stderr)
    return results


def test_a_manifest_pointing_its_checksums_at_dev_zero_is_damaged_not_followed(capture, tmp_path):
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    manifest["integrity"]["lineChecksums"]["path"] = "/dev/zero"
    (capture / "manifest.json").write_bytes(orjson.dumps(manifest))
    for name, done in run_everything(capture, tmp_path).items():
        assert done.returncode == 3, name
        assert "lineChecksums.path must be 'events.crc32'" in done.stderr + done.stdout, name


def test_a_blob_linked_to_dev_zero_is_refused(capture, tmp_path):
    [blob] = [path for path in (capture / "blobs").rglob("*") if path.is_file()]
    blob.unlink()
    blob.symlink_to("/dev/zero")
    results = run_everything(capture, tmp_path)
    assert results["verify"].returncode == 3 and "symbolic link" in results["verify"].stdout
    assert results["diff"].returncode == 3 and results["replay"].returncode in (1, 3)  # replay reads it only to serve it
    assert results["show"].returncode == 0 and "symbolic link" in results["show"].stderr


def test_a_missing_blob_is_named_and_the_events_after_it_are_still_read(tmp_path):
    events = [("run_start", {"argv": ["agent.py"]}), ("tool_result", {"callId": "b", "ok": True, "result": "z" * 70_000}),
              ("tool_call", {"name": "after", "args": {}, "callId": "c"})]
    capture = write_capture(tmp_path / "c", events)
    [blob] = [path for path in (capture / "blobs").rglob("*") if path.is_file()]
    blob.unlink()
    shown = run_wop("show", str(capture), "--json")
    assert shown.returncode == 0, shown.stderr
    assert [event["seq"] for event in orjson.loads(shown.stdout)["events"]] == [0, 1, 2]
    assert "read with the blob reference in place of the payload" in shown.stderr
    assert "showing the events before it" not in shown.stderr


def test_a_fifo_named_events_crc32_never_hangs_verify(capture):
    lines = lines_of(capture)
    lines[1] = lines[1].replace(b'"lookup"', b'"LOOKUP"')
    (capture / "events.jsonl").write_bytes(b"".join(lines))
    (capture / "events.crc32").unlink()
    os.mkfifo(capture / "events.crc32")
    done = run_wop("verify", str(capture))
    assert done.returncode == 3 and "does not match the sha256" in done.stdout


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_workflow_and_declarations_files_must_be_regular_files(tmp_path, special):
    if special == "fifo":
        special = tmp_path / "fifo.json"
        os.mkfifo(special)
    program = tmp_path / "p.py"
    program.write_text("print('hi')\n")
    captured = run_wop("capture", "--out", str(tmp_path / "c"), "--workflow", str(special), "--",
                       sys.executable, str(program))
    assert captured.returncode == 2 and "not a regular file" in captured.stderr
    capture = write_capture(tmp_path / "d", sample_events(1))
    state = run_wop("state", str(capture), "--declarations", str(special))
    assert state.returncode == 2 and "not a regular file" in state.stderr


def test_an_event_type_that_is_an_object_fails_verify_even_with_a_forged_hash(capture, tmp_path):
    lines = lines_of(capture)
    event = orjson.loads(lines[3])
    event["type"] = {}
    lines[3] = orjson.dumps(event) + b"\n"
    forge(capture, lines)
    verify = run_wop("verify", str(capture), "--json")
    assert verify.returncode == 3
    problem = orjson.loads(verify.stdout)["problems"][0]
    assert (problem["line"], problem["seq"], problem["kind"]) == (4, 3, "bad_event")
    assert "field type" in problem["message"]
    results = run_everything(capture, tmp_path)
    assert results["show"].returncode == 0 and "seq 3: field type is not an event type" in results["show"].stderr


@pytest.mark.parametrize(("seq", "field", "value", "named"), [
    (2, "callId", {"a": 1}, "data.callId"), (1, "name", ["x"], "data.name"), (2, "ok", "yes", "data.ok"),
    (2, "error", 1.5, "data.error"), (0, "argv", ["python", 3], "data.argv[1]"),
])
def test_a_wrong_type_in_a_data_field_is_exit_3_naming_seq_and_field(capture, tmp_path, seq, field, value, named):
    lines = lines_of(capture)
    event = orjson.loads(lines[seq])
    event["data"][field] = value
    lines[seq] = orjson.dumps(event) + b"\n"
    forge(capture, lines)
    verify = run_wop("verify", str(capture))
    assert verify.returncode == 3 and f"seq {seq}" in verify.stdout and named in verify.stdout
    results = run_everything(capture, tmp_path)
    assert results["diff"].returncode == 3 and named in results["diff"].stderr


def test_an_edited_pinned_source_fails_verify(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text("import openwop_cli as wop\nwop.tool(lambda: 1)()\n")
    out = tmp_path / "c"
    assert run_wop("capture", "--out", str(out), "--", sys.executable, str(program), cwd=tmp_path).returncode == 0
    assert run_wop("verify", str(out)).returncode == 0
    pin = orjson.loads((out / "manifest.json").read_bytes())["program"]["script"][0]
    digest = pin["blob"]["$blob"].split(":")[1]
    (out / "blobs" / "sha256" / digest[:2] / digest).write_text("import os; os.system('evil')\n")
    done = run_wop("verify", str(out))
    assert done.returncode == 3 and "pinned in the manifest" in done.stdout and "does not match" in done.stdout


@pytest.mark.parametrize("depth", [300, 1000])
def test_deep_nesting_is_refused_as_damage_without_a_recursion_error(capture, tmp_path, depth):
    """Past the 254 levels orjson writes (and wop's sink records), a value is damage; up to them, every command
    works (tests/format/test_mutated_captures.py nests 246 to 254 levels)."""
    lines = lines_of(capture)
    nested = b"[" * depth + b"1" + b"]" * depth
    lines[1] = lines[1].replace(b'"args":{', b'"args":{"deep":' + nested + b",", 1)
    forge(capture, lines)
    results = run_everything(capture, tmp_path)
    assert results["verify"].returncode == 3 and "nests deeper" in results["verify"].stdout
    assert results["diff"].returncode == 3


def test_a_manifest_whose_integrity_is_a_list_is_exit_3(capture, tmp_path):
    edit_manifest(capture, integrity=["sha256"])
    for name, done in run_everything(capture, tmp_path).items():
        assert done.returncode == 3, name
        assert "manifest.integrity must be an object" in done.stderr + done.stdout, name


def test_events_of_another_capture_are_not_this_captures(capture, tmp_path):
    lines = lines_of(capture)
    lines[4] = lines[4].replace(orjson.loads(lines[4])["captureId"].encode(), b"0000000000000000")
    forge(capture, lines)
    done = run_wop("verify", str(capture))
    assert done.returncode == 3 and "belongs to capture '0000000000000000'" in done.stdout


def test_a_huge_line_is_refused_before_it_is_held_in_memory(capture, tmp_path):
    from openwop_cli.format.files import MAX_LINE_BYTES

    with open(capture / "events.jsonl", "ab") as handle:
        handle.truncate(handle.tell() + MAX_LINE_BYTES + 10)  # a sparse run of zero bytes and no newline
    done = subprocess.run([sys.executable, "-m", "openwop_cli", "verify", str(capture)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 3 and "longer than" in done.stdout


@pytest.mark.parametrize("depth", [0, 252, 253, 1000])  # data > args > 252 lists: the 254 levels orjson writes
def test_nesting_is_refused_from_the_first_level_past_what_orjson_writes(capture, depth):
    from openwop_cli.format.verify import verify_capture

    lines = lines_of(capture)
    lines[1] = lines[1].replace(b'"args":{', b'"args":{"deep":' + b"[0," * depth + b"1" + b"]" * depth + b",", 1)
    forge(capture, lines)
    problems = [(problem.kind, problem.seq) for problem in verify_capture(capture).problems]
    assert problems == ([("bad_event", 1)] if depth > 252 else [])


@pytest.mark.parametrize("sequences, named", [([0, 0], "record 2"), ([3, 1], "record 2"), ([-1, 0], "record 1")])
def test_a_run_log_whose_sequence_goes_back_or_below_zero_is_exit_3(tmp_path, sequences, named):
    """Events fold and align by sequence: a run log whose sequences repeat, go back or start below 0 would fold (and
    `wop state --at` stop) at the wrong place, so it is damaged; gaps are fine."""
    log = tmp_path / "host.jsonl"
    log.write_bytes(b"".join(orjson.dumps({"sequence": sequence, "type": "channel.written",
                                           "payload": {"channel": "c", "value": index}}) + b"\n"
                             for index, sequence in enumerate(sequences)))
    for command in (("state", str(log)), ("diff", str(log), str(log)), ("show", str(log))):
        done = run_wop(*command)
        assert done.returncode == 3 and named in done.stderr and "sequence" in done.stderr, (command, done.stderr)
    log.write_bytes(b"".join(orjson.dumps({"sequence": sequence, "type": "channel.written",
                                           "payload": {"channel": "c", "value": sequence}}) + b"\n"
                             for sequence in (0, 4, 9)))
    assert orjson.loads(run_wop("state", str(log), "--at", "5", "--json").stdout)["channels"] == {"c": 4}
