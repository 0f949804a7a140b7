"""pin-at-run-start.md, requirement by requirement: a run walks the workflow JSON snapshotted when it started,
carries it content-addressed, survives the file's edit or deletion, and a replay serves the pinned copy."""

import hashlib
import json
import sys

from openwop_cli.format.blobs import BlobStore
from tests.conformance.runs import manifest, program, replay
from tests.conformance.spec import requirement
from tests.conftest import run_wop

SPEC = "pin-at-run-start.md"

WORKFLOW = {"id": "support", "version": "1.0.0", "nodes": [{"id": "triage"}, {"id": "reply"}],
            "channels": {"tickets": {"reducer": "append", "maxSize": 2}}}

WALKER = """
    import json, os, sys
    import openwop_cli as wop

    first = wop.workflow()
    if os.environ.get("EDIT"):
        with open("workflow.json", "w") as patched:
            json.dump({"id": "support", "version": "2.0.0", "nodes": [{"id": "patched"}]}, patched)
    if os.environ.get("DELETE"):
        os.remove("workflow.json")
    second = wop.workflow()
    for node in second["nodes"]:
        wop.state.write("tickets", node["id"])
    print(first == second, second["version"], [node["id"] for node in second["nodes"]], wop.state.get("tickets"))
"""


def pinned_run(tmp_path, **env):
    """The walker captured with workflow.json pinned: (the capture, the workflow's bytes, the capture's process)."""
    workflow = tmp_path / "workflow.json"
    workflow.write_text(json.dumps(WORKFLOW, indent=2))
    raw = workflow.read_bytes()
    done = run_wop("capture", "--out", str(tmp_path / "source"), "--workflow", str(workflow), "--", sys.executable,
                   str(program(tmp_path, WALKER)), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "source", raw, done


@requirement(SPEC, "The fix",
             "the run walks the workflow JSON snapshotted when it was dispatched: a patch made while it runs is "
             "invisible to it")
def test_pin_the_fix_a_patch_during_the_run_is_invisible(tmp_path):
    _, _, done = pinned_run(tmp_path, EDIT="1")
    assert done.stdout.strip() == "True 1.0.0 ['triage', 'reply'] ['triage', 'reply']"
    assert json.loads((tmp_path / "workflow.json").read_text())["version"] == "2.0.0", "the file itself was patched"


@requirement(SPEC, "The fix",
             "each run carries its workflow JSON, content-addressed (a hash in the run, the document stored by it)")
def test_pin_the_fix_each_run_carries_its_workflow(tmp_path):
    source, raw, _ = pinned_run(tmp_path)
    pin = manifest(source)["program"]["workflow"]
    assert pin["sha256"] == hashlib.sha256(raw).hexdigest()
    assert BlobStore(source).resolve(pin["blob"]) == WORKFLOW


@requirement(SPEC, "The fix",
             "the workflow's declared channels govern the run's state (the pinned copy, not the file on disk)")
def test_pin_the_fix_pinned_channels_govern_state(tmp_path):
    source, _, _ = pinned_run(tmp_path)
    folded = json.loads(run_wop("state", str(source), "--json").stdout)
    assert folded["channels"]["tickets"] == ["triage", "reply"]
    done, report = replay(tmp_path, source, env={"EDIT": ""})
    assert done.returncode == 0 and "['triage', 'reply'] ['triage', 'reply']" in done.stderr


@requirement(SPEC, "The fix",
             "a replay serves the pinned workflow even after the file changed, and names the file as changed")
def test_pin_the_fix_replay_serves_the_pinned_copy(tmp_path):
    source, _, _ = pinned_run(tmp_path)
    (tmp_path / "workflow.json").write_text(json.dumps({**WORKFLOW, "version": "9.9.9", "nodes": [{"id": "new"}]}))
    done, report = replay(tmp_path, source)
    assert done.returncode == 0, report and report["divergences"]
    assert "True 1.0.0 ['triage', 'reply']" in done.stderr
    assert [changed["path"] for changed in report["changedFiles"]] == [str(tmp_path / "workflow.json")]


@requirement(SPEC, "What about workflow ROW deletion?",
             "in-flight runs that already snapshotted the JSON keep running after the workflow is deleted; a replay "
             "still has it")
def test_pin_deletion_in_flight_runs_keep_running(tmp_path):
    source, _, _ = pinned_run(tmp_path, DELETE="1")
    assert not (tmp_path / "workflow.json").exists()
    done, report = replay(tmp_path, source, env={"DELETE": ""})
    assert done.returncode == 0 and "True 1.0.0" in done.stderr


@requirement(SPEC, "The problem",
             "replay knows when the code it re-runs is not the code that ran: the program files changed since the "
             "capture are named")
def test_pin_the_problem_changed_program_files_are_named(tmp_path):
    source, _, _ = pinned_run(tmp_path)
    agent = tmp_path / "agent.py"
    agent.write_text(agent.read_text() + "\n# a later edit\n")
    done, report = replay(tmp_path, source)
    assert done.returncode == 0 and "agent.py" in [changed["path"] for changed in report["changedFiles"]]

