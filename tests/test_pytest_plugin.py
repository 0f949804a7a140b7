"""The pytest plugin, driven by pytester: record a real openai-SDK test, replay it offline, catch a prompt change."""

import subprocess
import sys

import pytest

from tests.conftest import NESTED_PYTEST_ADDOPTS, requires
from tests.fake_provider import FakeProvider

pytest_plugins = ["pytester"]
requires("openai")

TEST_FILE = """
import os
import openai
import pytest

PROMPT = {prompt!r}


@pytest.mark.wop
def test_agent_answers():
    client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", api_key="sk-test-plugin-0123456789", max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {{"role": "system", "content": PROMPT}}, {{"role": "user", "content": "where is A-1?"}}])
    assert reply.choices[0].message.content == "answer to where is A-1?"


def test_with_the_fixture(wop):
    assert wop.action in ("record", "replay")
"""


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", NESTED_PYTEST_ADDOPTS)
    pytester.makepyprojecttoml('[tool.wop]\ncapture_dir = "tests/captures"\n')
    return pytester


def write_test(pytester, prompt):
    pytester.makepyfile(test_agent=TEST_FILE.format(prompt=prompt))


def test_record_once_then_replay_offline_then_catch_a_change_then_rerecord(project, monkeypatch):
    """The plugin's life cycle on one test file: none names the missing capture, once records it (and only once),
    `wop replay` points its capture back to pytest, none replays it offline and catches a prompt change, all records
    it again. (One test: each step is a pytest run that imports the openai SDK, and each needs the one before.)"""
    write_test(project, "Be brief.")
    missing = project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider")
    missing.assert_outcomes(passed=0, failed=2)
    text = missing.stdout.str()
    assert "no wop capture for this test at" in text and "--wop-record=once" in text
    assert "tests/captures/test_agent/test_agent_answers" in text

    with FakeProvider() as provider:
        monkeypatch.setenv("BASE", provider.url)
        recorded = project.runpytest_subprocess("--wop-record=once", "-p", "no:cacheprovider")
        recorded.assert_outcomes(passed=2)
        assert len(provider.requests) == 1
        manifest = project.path / "tests" / "captures" / "test_agent" / "test_agent_answers" / "manifest.json"
        first = manifest.read_bytes()
        project.runpytest_subprocess("--wop-record=once", "-p", "no:cacheprovider").assert_outcomes(passed=2)
        assert manifest.read_bytes() == first, "once must not record again when the capture exists"
        assert len(provider.requests) == 1
    capture = project.path / "tests" / "captures" / "test_agent" / "test_agent_answers"
    assert (capture / "manifest.json").is_file()
    assert b"sk-test-plugin-0123456789" not in b"".join(p.read_bytes() for p in capture.rglob("*") if p.is_file())

    single = subprocess.run([sys.executable, "-m", "openwop_cli", "replay", str(capture)], capture_output=True, text=True)
    assert single.returncode == 2 and "--wop-record=none" in single.stderr and "test_agent_answers" in single.stderr
    folder = subprocess.run([sys.executable, "-m", "openwop_cli", "replay", str(project.path / "tests" / "captures")],
                            capture_output=True, text=True)
    assert folder.returncode == 2 and "recorded by the pytest plugin" in folder.stderr

    offline = project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider")
    offline.assert_outcomes(passed=2)

    write_test(project, "Be brief and warm.")
    changed = project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider")
    changed.assert_outcomes(passed=1, failed=1)
    output = changed.stdout.str()
    assert "event_payload_mismatch" in output and "$.messages[0].content" in output and "differs from the one recorded at seq" in output
    assert "\x1b[" not in output

    with FakeProvider() as provider:
        monkeypatch.setenv("BASE", provider.url)
        project.runpytest_subprocess("--wop-record=all", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_ci_forces_replay_only(project, monkeypatch):
    write_test(project, "Be brief.")
    monkeypatch.setenv("CI", "true")
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    assert "no wop capture for this test" in result.stdout.str()


EXTENDED = """
import os
import httpx
import pytest


@pytest.mark.wop
def test_two_questions():  # chat completions as the openai SDK posts them, without its 1 s import in each run
    for question in os.environ.get("QUESTIONS", "one").split(","):
        httpx.post(os.environ["BASE"] + "/v1/chat/completions", headers={"Authorization": "Bearer sk-test"},
                   json={"model": "m", "messages": [{"role": "user", "content": question}]}).raise_for_status()
"""


def test_new_mode_keeps_what_was_recorded_and_adds_the_new_calls(project, monkeypatch):
    project.makepyfile(test_more=EXTENDED)
    with FakeProvider() as provider:
        monkeypatch.setenv("BASE", provider.url)
        project.runpytest_subprocess("--wop-record=once", "-p", "no:cacheprovider").assert_outcomes(passed=1)
        monkeypatch.setenv("QUESTIONS", "one,two")
        project.runpytest_subprocess("--wop-record=new", "-p", "no:cacheprovider").assert_outcomes(passed=1)
        assert [r["messages"][0]["content"] for r in provider.requests] == ["one", "two"]
    offline = project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider")
    offline.assert_outcomes(passed=1)


README_TEST = """
import os
import openai
import pytest


@pytest.mark.wop
def test_support_agent_answers():
    client = openai.OpenAI(base_url=os.environ["BASE"] + "/v1", max_retries=0)   # the key: OPENAI_API_KEY
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[
        {"role": "system", "content": "You are a concise support agent."},
        {"role": "user", "content": "Where is order A-1001?"}])
    assert "A-1001" in reply.choices[0].message.content
"""


def test_the_readme_example_replays_with_no_api_key_set(project, monkeypatch):
    project.makepyfile(test_support=README_TEST)
    with FakeProvider() as provider:
        monkeypatch.setenv("BASE", provider.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-recording-0123456789")
        project.runpytest_subprocess("--wop-record=once", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert (project.path / "tests" / "captures" / "test_support" / "test_support_agent_answers").is_dir()
    monkeypatch.delenv("OPENAI_API_KEY")
    replayed = project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=1)


PARAMETRIZED = """
import os
import httpx
import pytest


@pytest.mark.wop
@pytest.mark.parametrize("question", ["a b", "a/b", "a_b", "a?b"])
def test_asks(question):
    answer = httpx.post(os.environ["BASE"] + "/ask", json={{"question": question}}).json()
    assert answer["echo"]["question"] == question{changed}
"""


def test_parametrized_tests_whose_ids_read_alike_keep_a_capture_each(project, monkeypatch):
    project.makepyfile(test_params=PARAMETRIZED.format(changed=""))
    with FakeProvider() as provider:
        monkeypatch.setenv("BASE", provider.url)
        project.runpytest_subprocess("--wop-record=once", "-p", "no:cacheprovider", "-n", "2").assert_outcomes(passed=4)
        assert len(provider.requests) == 4
    captures = sorted((project.path / "tests" / "captures" / "test_params").iterdir())
    assert len(captures) == 4
    project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider", "-n", "2").assert_outcomes(passed=4)
    project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider").assert_outcomes(passed=4)


def test_a_capture_recorded_under_the_old_shared_name_still_replays_for_its_own_test(project, monkeypatch):
    project.makepyfile(test_params=PARAMETRIZED.format(changed=""))
    spaced = "test_params.py::test_asks[a b]"
    with FakeProvider() as provider:
        monkeypatch.setenv("BASE", provider.url)
        project.runpytest_subprocess("--wop-record=once", "-p", "no:cacheprovider", spaced).assert_outcomes(passed=1)
    folder = project.path / "tests" / "captures" / "test_params"
    [recorded] = list(folder.iterdir())
    assert recorded.name.startswith("test_asks_a_b-")
    recorded.rename(folder / "test_asks_a_b")  # where the plugin kept it before names were kept distinct
    slashed = "test_params.py::test_asks[a/b]"  # whose name reads as the spaced one's did
    replayed = project.runpytest_subprocess("--wop-record=none", "-p", "no:cacheprovider", "-rf", spaced, slashed)
    replayed.assert_outcomes(passed=1, failed=1)
    assert f"FAILED {slashed} - Failed: no wop capture for this test" in replayed.stdout.str()
