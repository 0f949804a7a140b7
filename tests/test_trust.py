"""A capture is data: `wop replay`/`wop fork` run the command it recorded only when the capture is trusted here —
signed with this user's key, a Python script of the current tree, or --trust / WOP_TRUST=1 — and `wop verify`
says whose it is."""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_cli.format.signature import BAD_SIGNATURE, SIGNED_HERE, UNSIGNED, check_signature, key_path
from openwop_cli.trust import script_problem, shown_command
from tests.conftest import nested_pytest_env, run_wop

AGENT = "import random\nprint('agent says', random.random())\n"


def elsewhere(tmp_path: Path) -> dict[str, str]:
    """The environment of another user on another machine: a HOME and config directory of their own (another key)."""
    home = tmp_path / "other-machine"
    (home / "config").mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"), "WOP_HOME": str(home / "store")}


def received(tmp_path: Path, *command: str, name: str = "received") -> Path:
    """A capture of command made by someone else (their key), as it arrives: a directory of files."""
    out = tmp_path / name
    done = run_wop("capture", "--out", str(out), "--", *command, env=elsewhere(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return out


def test_a_received_shell_capture_is_refused_with_its_command_and_how_to_run_it(tmp_path):
    marker = tmp_path / "PWNED"
    capture = received(tmp_path, "sh", "-c", f"echo recorded; touch {marker}")
    marker.unlink()
    done = run_wop("replay", str(capture), "--out", str(tmp_path / "r"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert not marker.exists() and "recorded" not in done.stdout
    assert f"recorded command: sh -c 'echo recorded; touch {marker}'" in done.stderr
    assert "--trust" in done.stderr and "-- python agent.py" in done.stderr and "unsigned" in done.stderr
    assert not (tmp_path / "r").exists()
    forked = run_wop("fork", str(capture), "--from-seq", "1", "--out", str(tmp_path / "f"), cwd=tmp_path)
    assert forked.returncode == 2 and not marker.exists() and "wop fork" in forked.stderr


def test_a_received_python_capture_is_refused_before_its_program_runs_though_its_interpreter_started(tmp_path):
    # wop's own Python given no option may start before the replay has checked the capture (waiting for a go that
    # only a trusted capture gets): refused, the interpreter ends without running a line of the recorded code.
    marker = tmp_path / "PWNED"
    code = f"import pathlib; pathlib.Path({str(marker)!r}).touch(); print('recorded')"
    capture = received(tmp_path, sys.executable, "-c", code)
    marker.unlink()
    done = run_wop("replay", str(capture), "--out", str(tmp_path / "r"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert not marker.exists() and "recorded" not in done.stdout and "unsigned" in done.stderr
    assert not (tmp_path / "r").exists()


def test_trust_flag_environment_and_a_command_of_your_own_run_it(tmp_path):
    marker = tmp_path / "ran"
    capture = received(tmp_path, "sh", "-c", f"touch {marker}")
    marker.unlink()
    assert run_wop("replay", str(capture), "--trust", "--out", str(tmp_path / "r1"), cwd=tmp_path).returncode == 0
    assert marker.exists()
    marker.unlink()
    assert run_wop("replay", str(capture), "--out", str(tmp_path / "r2"), env={"WOP_TRUST": "1"},
                   cwd=tmp_path).returncode == 0
    assert marker.exists()
    marker.unlink()
    own = run_wop("replay", str(capture), "--out", str(tmp_path / "r3"), "--", "sh", "-c", "echo mine", cwd=tmp_path)
    assert "mine" in own.stdout and not marker.exists()


def test_a_capture_of_python_agent_py_made_on_another_machine_replays_in_its_project_with_no_flag(tmp_path):
    """The CI case: `python agent.py` recorded by a developer (their key), committed with the project, and replayed
    in a checkout of that project on another machine with no flag."""
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    (laptop / "agent.py").write_text(AGENT)
    done = run_wop("capture", "--out", str(laptop / "tests" / "runs" / "agent"), "--", "python", "agent.py",
                   env=elsewhere(tmp_path), cwd=laptop)
    assert done.returncode == 0, done.stderr
    checkout = tmp_path / "ci-checkout"
    shutil.copytree(laptop, checkout)
    verdict = run_wop("verify", "tests/runs/agent", "--json", cwd=checkout)
    assert orjson.loads(verdict.stdout)["signature"] == UNSIGNED
    replayed = run_wop("replay", "tests/runs/agent", "--out", str(tmp_path / "replay"), cwd=checkout)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert done.stdout == replayed.stdout.splitlines(keepends=True)[0]
    batch = run_wop("replay", "tests/runs", "-j", "2", "--json", cwd=checkout)
    assert batch.returncode == 0 and [entry["verdict"] for entry in orjson.loads(batch.stdout)] == ["ok"]
    (checkout / "agent.py").unlink()  # the script is no file of this tree any more
    refused = run_wop("replay", "tests/runs/agent", "--out", str(tmp_path / "replay2"), cwd=checkout)
    assert refused.returncode == 2 and "agent.py" in refused.stderr and "not a file here" in refused.stderr


def test_a_capture_signed_here_replays_any_command_and_a_changed_one_is_a_bad_signature(tmp_path):
    marker = tmp_path / "ran"
    capture = tmp_path / "mine"
    assert run_wop("capture", "--out", str(capture), "--", "sh", "-c", f"touch {marker}", cwd=tmp_path).returncode == 0
    marker.unlink()
    assert orjson.loads(run_wop("verify", str(capture), "--json").stdout)["signature"] == SIGNED_HERE
    replayed = run_wop("replay", str(capture), "--out", str(tmp_path / "replay"), cwd=tmp_path)
    assert replayed.returncode == 0 and marker.exists()
    replay_capture = orjson.loads((tmp_path / "replay" / "manifest.json").read_bytes())
    assert check_signature(replay_capture).status == SIGNED_HERE  # a replay's own capture is signed too
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    manifest["program"]["argv"] = ["sh", "-c", f"touch {tmp_path / 'evil'}"]
    (capture / "manifest.json").write_bytes(orjson.dumps(manifest))
    verified = run_wop("verify", str(capture), "--json")
    assert verified.returncode == 3
    report = orjson.loads(verified.stdout)
    assert report["signature"] == BAD_SIGNATURE and report["problems"][-1]["kind"] == "bad_signature"
    assert "bad signature" in run_wop("verify", str(capture)).stdout
    refused = run_wop("replay", str(capture), "--out", str(tmp_path / "r2"), cwd=tmp_path)
    assert refused.returncode == 2 and "bad signature" in refused.stderr and not (tmp_path / "evil").exists()


def test_a_batch_skips_the_untrusted_captures_and_lists_them(tmp_path):
    project = tmp_path / "project"
    runs = project / "runs"
    project.mkdir()
    (project / "agent.py").write_text(AGENT)
    done = run_wop("capture", "--out", str(runs / "agent"), "--", "python", "agent.py", env=elsewhere(tmp_path),
                   cwd=project)
    assert done.returncode == 0
    marker = tmp_path / "PWNED"
    shell = received(tmp_path, "sh", "-c", f"touch {marker}", name="shell")
    shutil.move(str(shell), str(runs / "shell"))
    marker.unlink()
    for options in ([], ["-j", "2"], ["--shard", "1/1"]):
        listed = run_wop("replay", "runs", *options, cwd=project)
        assert listed.returncode == 2 and not marker.exists()
        assert "skipped 1 capture(s) whose recorded command is not trusted here" in listed.stdout
        assert f"touch {marker}" in listed.stdout and "1 ok" in listed.stdout
        as_json = run_wop("replay", "runs", *options, "--json", cwd=project)
        assert as_json.stdout.startswith("["), (as_json.returncode, as_json.stderr)  # (empty once, under load)
        report = {entry["path"]: entry for entry in orjson.loads(as_json.stdout)}
        assert report["runs/agent"]["verdict"] == "ok"
        assert report["runs/shell"]["verdict"] == "skipped"
        assert report["runs/shell"]["skipped"]["command"] == ["sh", "-c", f"touch {marker}"]
    junit = tmp_path / "junit.xml"
    run_wop("replay", "runs", "--junit", str(junit), cwd=project)
    assert 'skipped="1"' in junit.read_text() and "<skipped" in junit.read_text()


def test_pytest_fails_an_untrusted_collected_capture_with_the_refusal_and_runs_it_under_wop_trust(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.wop]\nreplay = ["runs"]\n')
    marker = tmp_path / "PWNED"
    shell = received(tmp_path, "sh", "-c", f"touch {marker}", name="shell")
    (project / "runs").mkdir()
    shutil.move(str(shell), str(project / "runs" / "shell"))
    marker.unlink()
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    refused = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=300, env=nested_pytest_env())
    assert refused.returncode == 1 and not marker.exists()
    assert "not running the command recorded in" in refused.stdout and "--trust" in refused.stdout
    trusted = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=300,
                             env=nested_pytest_env(WOP_TRUST="1"))
    assert trusted.returncode == 0 and marker.exists(), trusted.stdout


def test_a_received_capture_recorded_without_redaction_does_not_make_your_replay_record_your_secrets(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "agent.py").write_text(
        "import os\nimport openwop_cli as wop\n\n@wop.tool\ndef call(token):\n    return 'ok'\n\n"
        "print(call(os.environ.get('SERVICE_TOKEN', 'nothing-secret')))\n")
    capture = project / "received"
    done = run_wop("capture", "--redact", "none", "--out", str(capture), "--", "python", "agent.py",
                   env=elsewhere(tmp_path), cwd=project)
    assert done.returncode == 0
    secret = "my-own-service-token-0123456789"
    for command in (["replay", "--lenient"], ["fork", "--from-seq", "1"]):
        out = tmp_path / command[0]
        run_wop(*command[:1], str(capture), *command[1:], "--out", str(out), env={"SERVICE_TOKEN": secret},
                cwd=project)
        manifest = orjson.loads((out / "manifest.json").read_bytes())
        assert manifest["redaction"]["profile"] == "default"
        assert secret.encode() not in b"".join(path.read_bytes() for path in out.rglob("*") if path.is_file())


def test_the_signing_key_is_made_once_private_and_one_others_can_read_is_not_used(tmp_path):
    children = [subprocess.Popen([sys.executable, "-c", "from openwop_cli.format.signature import user_key; "
                                  "print(user_key().hex())"], stdout=subprocess.PIPE, text=True) for _ in range(6)]
    keys = {child.communicate(timeout=60)[0] for child in children}
    assert len(keys) == 1  # made at the same moment by six processes: one key, whole
    path = key_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [entry.name for entry in path.parent.iterdir()] == ["signing.key"]
    os.chmod(path, 0o644)
    done = run_wop("capture", "--out", str(tmp_path / "c"), "--", "sh", "-c", "true", cwd=tmp_path)
    assert done.returncode == 0 and "not signed" in done.stderr and "chmod 600" in done.stderr
    assert "signature" not in orjson.loads((tmp_path / "c" / "manifest.json").read_bytes())


def script_tree(tmp_path: Path) -> Path:
    """A project with a script, a package with a module and a __main__, a capture holding a .py file, a link to a
    script outside, and one into the capture."""
    project = tmp_path / "project"
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "agent.py").write_text("print(1)\n")
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "tool.py").write_text("print(1)\n")
    (project / "pkg" / "sub" / "__init__.py").write_text("")
    (project / "pkg" / "sub" / "__main__.py").write_text("print(1)\n")
    capture = project / "runs" / "c"
    capture.mkdir(parents=True)
    for name in ("manifest.json", "events.jsonl", "evil.py"):
        (capture / name).write_text("{}\n")
    (tmp_path / "outside.py").write_text("print(1)\n")
    (project / "link_out.py").symlink_to(tmp_path / "outside.py")
    (project / "link_in.py").symlink_to(capture / "evil.py")
    fake = project / "bin" / "python3"
    fake.parent.mkdir()
    fake.symlink_to("/bin/sh")
    return project


@pytest.mark.parametrize("argv, trusted", [
    (["python", "agent.py"], True),
    (["python3", "-u", "agent.py", "--order", "A-1"], True),
    (["python3", "-X", "dev", "-W", "error", "--", "agent.py"], True),
    ([sys.executable, "-uB", "./agent.py"], True),
    (["python3", "-m", "pkg.tool"], True),
    (["python3", "-mpkg.sub"], True),
    (["python3", "-m", "http.server"], False),
    (["python3", "-m", "pkg.missing"], False),
    (["python3", "-c", "import os"], False),
    (["python3", "-uc", "import os"], False),
    (["python3", "-"], False),
    (["python3"], False),
    (["python3", "../outside.py"], False),
    (["python3", "link_out.py"], False),
    (["python3", "link_in.py"], False),
    (["python3", "runs/c/evil.py"], False),
    (["python3", "missing.py"], False),
    (["sh", "agent.py"], False),
    (["bin/python3", "agent.py"], False),  # named python, but a link to a shell
    (["./agent.py"], False),
    (["python3", "--version"], False),
])
def test_only_a_python_interpreter_running_a_file_of_this_tree_outside_captures_qualifies(tmp_path, argv, trusted):
    project = script_tree(tmp_path)
    problem = script_problem(argv, project, project / "runs" / "c")
    assert (problem is None) == trusted, problem


def test_the_capture_being_replayed_and_the_store_hold_no_trusted_script(tmp_path, wop_home):
    project = script_tree(tmp_path)
    assert script_problem(["python3", "agent.py"], project, project) is not None  # cwd is the capture itself
    stored = wop_home / "captures" / "abc"
    stored.mkdir(parents=True)
    (stored / "agent.py").write_text("print(1)\n")
    assert "inside a capture" in script_problem(["python3", "agent.py"], stored, None)


TOKENS = ["-", "c", "m", "X", "W", "u", ".", "/", "agent", "agent.py", "python3", "--", "sh", "dev"]
words = st.lists(st.sampled_from(TOKENS), max_size=4).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(words, max_size=6))
def test_any_command_line_is_judged_without_error_and_only_trusted_with_a_python_and_a_file_of_the_tree(tmp_path,
                                                                                                      argv):
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    (project / "agent.py").write_text("print(1)\n")
    problem = script_problem(argv, project, None)
    if problem is None:
        script = os.path.realpath(project / "agent.py")
        assert os.path.basename(argv[0]).startswith("python")
        assert any(word == "agent" or word.endswith("agent") or os.path.realpath(project / word) == script
                   for word in argv[1:] if word)
        assert "-c" not in argv and "-" not in argv


@given(argv=st.lists(st.text(max_size=8), max_size=4))
def test_a_shown_command_is_one_printable_line(argv):
    shown = shown_command(argv)
    assert shown.isprintable() and shown.isascii()
