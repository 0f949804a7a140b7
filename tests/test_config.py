"""[tool.wop] in pyproject.toml: every way TOML can spell the table is read; a file without it is not parsed."""

import subprocess
import sys

import pytest

from openwop_cli.config import load_settings
from openwop_cli.errors import UsageError


@pytest.mark.parametrize("text", [
    '[tool.wop]\nredact = "strict"\n',
    '[tool . "wop"]\nredact = "strict"\n',
    "[tool.'wop']\nredact = 'strict'\n",
    'tool.wop.redact = "strict"\n',
    '[tool]\nwop = {redact = "strict"}\n',
    '[tool]\nwop.redact = "strict"\n',
    'tool = {wop = {redact = "strict"}}\n',
    '[project]\nname = "x"\n\n[tool.other]\na = 1\n[tool.wop]\n\tredact = "strict"\n',
])
def test_every_spelling_of_the_tool_wop_table_is_read(tmp_path, text):
    (tmp_path / "pyproject.toml").write_text(text)
    assert load_settings(tmp_path).redact == "strict"


def test_a_pyproject_without_a_wop_table_gives_the_defaults_and_a_broken_wop_table_is_a_usage_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "openwop-app"\nkeywords = ["wopper"]\n')
    assert load_settings(tmp_path).redact == "default"
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\nredact = "strict\n')
    with pytest.raises(UsageError, match=r"cannot read \[tool.wop\]"):
        load_settings(tmp_path)
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.wop]\nredact = "\xff"\n')
    with pytest.raises(UsageError, match=r"cannot read \[tool.wop\]"):
        load_settings(tmp_path)


NO_TOMLLIB_WITHOUT_THE_KEY = """
import sys
from pathlib import Path
from openwop_cli.config import load_settings
assert load_settings(Path(sys.argv[1])).redact == "default"
print("tomllib" in sys.modules)
"""


def test_a_pyproject_that_does_not_name_wop_costs_no_tomllib_import(tmp_path):
    # Most projects have a pyproject.toml and no [tool.wop]: `wop capture` reads it before it starts the program, and
    # importing tomllib would be most of what that reading costs.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n\n[tool.ruff]\nline-length = 100\n')
    done = subprocess.run([sys.executable, "-c", NO_TOMLLIB_WITHOUT_THE_KEY, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_settings_read_again_follow_the_file(tmp_path):
    # Read once per process while the file stays the same, and anew once it changes (a `tool = 1` naming wop
    # elsewhere is no [tool.wop], not a crash).
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.wop]\nredact = "strict"\n')
    assert load_settings(tmp_path).redact == load_settings(tmp_path).redact == "strict"
    pyproject.write_text('[tool.wop]\nredact = "none"\nambient = false\n')
    assert (load_settings(tmp_path).redact, load_settings(tmp_path).ambient) == ("none", False)
    pyproject.write_text('tool = 1\n[project]\nname = "wop"\n')
    assert load_settings(tmp_path).redact == "default"


@pytest.mark.parametrize("value", ["5", "[\"a\"]", "true", "{a = 1}", "\"\""])
def test_a_capture_dir_that_is_not_a_directory_name_is_one_line_exit_2_and_a_pytest_usage_error(tmp_path, value):
    import subprocess
    import sys

    from tests.conftest import nested_pytest_env, run_wop

    (tmp_path / "pyproject.toml").write_text(f"[tool.wop]\ncapture_dir = {value}\n")
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    done = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, "-c", "pass", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"wop: error: [tool.wop] capture_dir = {load_value(value)!r}: use a "
                                                "directory, e.g. capture_dir = \"tests/captures\""]
    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120, env=nested_pytest_env())
    assert tested.returncode == 4 and "INTERNALERROR" not in tested.stdout + tested.stderr
    assert "[tool.wop] capture_dir" in tested.stderr


def load_value(text):
    import tomllib

    return tomllib.loads(f"v = {text}")["v"]


def test_redaction_turned_off_by_a_parent_pyproject_is_a_one_line_warning_naming_it(tmp_path):
    from tests.conftest import run_wop

    (tmp_path / "pyproject.toml").write_text('[tool.wop]\nredact = "none"\n')
    project = tmp_path / "project" / "src"
    project.mkdir(parents=True)
    done = run_wop("capture", "--out", str(tmp_path / "c"), "--", "sh", "-c", "true", cwd=project)
    warnings = [line for line in done.stderr.splitlines() if "redaction is off" in line]
    assert done.returncode == 0 and len(warnings) == 1 and str(tmp_path / "pyproject.toml") in warnings[0]
    explicit = run_wop("capture", "--redact", "none", "--out", str(tmp_path / "c2"), "--", "sh", "-c", "true",
                       cwd=project)
    assert explicit.returncode == 0 and "redaction is off" not in explicit.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\nredact = "default"\n')
    assert "redaction is off" not in run_wop("capture", "--out", str(tmp_path / "c3"), "--", "sh", "-c", "true",
                                             cwd=project).stderr


@pytest.mark.parametrize("mine, theirs, recorded", [
    ("default", "none", "default"), ("default", "strict", "strict"), ("strict", "none", "strict"),
    ("none", "none", "none"), ("default", "a-newer-one", "strict"), ("default", None, "default"),
])
def test_a_replay_records_with_the_stronger_profile(tmp_path, monkeypatch, mine, theirs, recorded):
    from openwop_cli.config import replay_profile

    (tmp_path / "pyproject.toml").write_text(f'[tool.wop]\nredact = "{mine}"\n')
    monkeypatch.chdir(tmp_path)
    manifest = {"redaction": {"profile": theirs}} if theirs else {}
    assert replay_profile(manifest) == recorded
