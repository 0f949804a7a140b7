"""OpenAI-compatible vendors keep their own name: the real mistralai SDK against the fake provider."""

import sys
import textwrap

import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import run_wop
from tests.fake_provider import FakeProvider

pytest.importorskip("mistralai")

MISTRAL_AGENT = """
import os
from mistralai.client import Mistral

client = Mistral(api_key=os.environ.get("MISTRAL_API_KEY"), server_url=os.environ["BASE"])
reply = client.chat.complete(model="mistral-small-latest",
                             messages=[{"role": "user", "content": os.environ.get("PROMPT", "where is A-1?")}])
print(reply.choices[0].message.content)
"""


def test_a_mistral_call_is_provider_mistral_and_replays_with_no_key(tmp_path):
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(MISTRAL_AGENT))
    with FakeProvider() as provider:
        done = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, str(program),
                       env={"BASE": provider.url, "MISTRAL_API_KEY": "mk-test-0123456789"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    requests = [event["data"] for event in CaptureReader(tmp_path / "c") if event["type"] == "llm_request"]
    assert [(r["provider"], r["model"]) for r in requests] == [("mistral", "mistral-small-latest")]
    assert run_wop("show", str(tmp_path / "c"), cwd=tmp_path).stdout.count("mistral mistral-small-latest") == 1

    replayed = run_wop("replay", str(tmp_path / "c"), env={"BASE": provider.url, "MISTRAL_API_KEY": None}, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "answer to where is A-1?" in replayed.stdout
    changed = run_wop("replay", str(tmp_path / "c"), "--json",
                      env={"BASE": provider.url, "MISTRAL_API_KEY": None, "PROMPT": "where is A-2?"}, cwd=tmp_path)
    assert changed.returncode == 1 and '"$.messages[0].content"' in changed.stdout
