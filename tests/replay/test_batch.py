"""Many captures at once: `wop replay -j/--shard/--json` and the pytest plugin's collected captures under
pytest-xdist, all giving the verdicts a serial run gives, on 30 real captures of which 3 diverge today."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from openwop_cli.host.replay_batch import shard_of
from tests.conftest import nested_pytest_env, run_wop

PROGRAM = """
import sys
from pathlib import Path
import openwop_cli as wop

@wop.tool
def lookup(order_id):
    return {"id": order_id, "status": "shipped"}

number = int(sys.argv[1])
changed = (Path(__file__).parent / f"diverge-{number}").exists()
print(lookup(f"A-{number}" + ("-changed" if changed else "")))
"""
COUNT = 30
DIVERGING = (4, 17, 28)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project with 30 `wop capture` captures under runs/ (run_00…run_29); 3 of them diverge today."""
    root = tmp_path_factory.mktemp("batch")
    program = root / "program.py"
    program.write_text(PROGRAM)
    env = {**os.environ, "WOP_HOME": str(root / "store")}
    running: list[subprocess.Popen] = []
    for number in range(COUNT):
        command = [sys.executable, "-m", "openwop_cli", "capture", "--name", f"run_{number:02d}",
                   "--out", str(root / "runs" / f"r{number:02d}"), "--", sys.executable, str(program), str(number)]
        running.append(subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        if len(running) >= 4 or number == COUNT - 1:
            for process in running:
                assert process.wait(timeout=120) == 0, process.stderr.read()
                process.stderr.close()
            running.clear()
    for number in DIVERGING:
        (root / f"diverge-{number}").touch()
    (root / "pyproject.toml").write_text('[tool.wop]\nreplay = ["runs"]\n')
    return root


def verdicts_of(report: list[dict]) -> dict[str, str]:
    return {Path(item["path"]).name: item["verdict"] for item in report}


def expected_verdicts() -> dict[str, str]:
    return {f"r{number:02d}": "diverged" if number in DIVERGING else "ok" for number in range(COUNT)}


def replay_json(project: Path, *options: str) -> tuple[int, list[dict]]:
    done = run_wop("replay", "runs", "--json", *options, cwd=project, env={"WOP_HOME": str(project / "store")})
    assert done.stdout.startswith("["), done.stderr
    return done.returncode, orjson.loads(done.stdout)


def pytest_verdicts(project: Path, *options: str) -> dict[str, str]:
    """Run pytest in the project; {capture directory: verdict} from its own JUnit XML."""
    junit = project / f"junit{'-'.join(options)}.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                           *options], cwd=project, capture_output=True, text=True, timeout=600,
                          env=nested_pytest_env(WOP_HOME=str(project / "store")))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    cases = ET.parse(junit).getroot().iter("testcase")
    return {case.get("classname").split(".")[-1]: "diverged" if case.find("failure") is not None else "ok"
            for case in cases}


def test_serial_parallel_and_sharded_replays_give_the_same_verdicts(project):
    code, serial = replay_json(project, "-j", "1")
    assert code == 1 and verdicts_of(serial) == expected_verdicts()
    for item in serial:
        assert item["name"] == f"run_{item['path'][-2:]}" and len(item["id"]) == 16 and item["seconds"] > 0
        assert (item["verdict"] == "diverged") == item["diverged"]

    shards = [replay_json(project, "-j", "2", "--shard", f"{index}/3") for index in (1, 2, 3)]
    paths = [[item["path"] for item in report] for _, report in shards]
    assert sorted(path for shard in paths for path in shard) == sorted(item["path"] for item in serial)
    assert all(paths), "30 captures over 3 shards: none is empty (all but 1 in 60,000 sets of random ids)"
    merged = {name: verdict for _, report in shards for name, verdict in verdicts_of(report).items()}
    assert merged == expected_verdicts()
    for code, report in shards:
        assert code == (1 if "diverged" in verdicts_of(report).values() else 0)
    by_id = [[item["path"] for item in serial if shard_of({"captureId": item["id"]}, Path("elsewhere"), 3) == index]
             for index in (1, 2, 3)]
    assert paths == by_id, "a capture's shard is its captureId's alone: it never changes"
    replays = [item["replay"]["captureId"] for _, report in [(0, serial), *shards] for item in report]
    assert len(set(replays)) == len(replays) == 2 * COUNT, "every replay wrote a capture of its own"


def test_pytest_collects_each_capture_and_xdist_gives_the_serial_verdicts(project):
    serial = pytest_verdicts(project, "-n", "0")
    assert serial == expected_verdicts()
    assert pytest_verdicts(project, "-n", "2") == serial


def test_k_selects_captures_by_name_and_a_failure_shows_the_divergence(project):
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--wop-replay", "runs",
                           "-k", "run_17 or run_05"], cwd=project, capture_output=True, text=True, timeout=300,
                          env=nested_pytest_env(WOP_HOME=str(project / "store")))
    assert done.returncode == 1
    assert "1 failed, 1 passed, 28 deselected" in done.stdout
    assert "runs/r17::run_17" in done.stdout and "event_payload_mismatch" in done.stdout
    assert "$.args.order_id" in done.stdout and "A-17-changed" in done.stdout


def test_a_capture_that_cannot_replay_is_an_error_verdict_with_exit_3(tmp_path):
    runs = tmp_path / "runs"
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    for number in (1, 2):
        assert run_wop("capture", "--out", str(runs / f"r{number}"), "--", sys.executable, str(program),
                       str(number), cwd=tmp_path).returncode == 0
    events = runs / "r2" / "events.jsonl"
    events.write_bytes(events.read_bytes()[:-20])
    done = run_wop("replay", str(runs), "--json", "-j", "2", cwd=tmp_path)
    report = orjson.loads(done.stdout)
    assert done.returncode == 3
    assert [item["verdict"] for item in report] == ["ok", "error"]
    assert report[1]["exitCode"] == 3 and report[1]["error"] and report[1]["name"] == "program"


def test_a_shard_depends_on_the_capture_id_alone():
    ids = [f"{number:016x}" for number in range(300)]
    shards = [shard_of({"captureId": capture_id}, Path("/anywhere"), 3) for capture_id in ids]
    assert shards[:6] == [shard_of({"captureId": capture_id}, Path("/elsewhere/x"), 3) for capture_id in ids[:6]]
    assert all(60 <= shards.count(index) <= 140 for index in (1, 2, 3)), "shards are roughly even"
    assert shard_of(None, Path("runs/r07"), 3) == shard_of({"captureId": "r07"}, Path("x"), 3)
    assert [shard_of({"captureId": "3f2a9c0d1e2b4a5c"}, Path("."), count) for count in (2, 3, 5)] == [2, 3, 2], \
        "the shard of a captureId never changes (CI matrices on several machines and wop versions agree)"


@pytest.mark.parametrize("shard", ["0/3", "4/3", "1/0", "x/2", "2"])
def test_a_bad_shard_is_exit_2(tmp_path, shard):
    done = run_wop("replay", str(tmp_path), "--shard", shard, cwd=tmp_path)
    assert done.returncode == 2 and "--shard" in done.stderr


def test_bad_replay_directories_in_tool_wop_are_a_usage_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\nreplay = "runs"\n')
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=nested_pytest_env())
    assert done.returncode == 4 and "[tool.wop] replay must be a list" in done.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\nreplay = ["runs"]\n')
    missing = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--wop-replay", "nowhere"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120, env=nested_pytest_env())
    assert missing.returncode == 4 and "--wop-replay" in missing.stderr and "nowhere" in missing.stderr
