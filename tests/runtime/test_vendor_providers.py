"""Vendors keep their own name and token counts: the real mistralai, groq and cohere SDKs against the fake provider."""

import sys
import textwrap

import pytest

from openwop_cli.format.reader import CaptureReader
from tests.conftest import requires, run_wop
from tests.fake_provider import FakeProvider

MISTRAL_AGENT = """
import os
from mistralai.client import Mistral

client = Mistral(api_key=os.environ.get("MISTRAL_API_KEY"), server_url=os.environ["BASE"])
reply = client.chat.complete(model="mistral-small-latest",
                             messages=[{"role": "user", "content": os.environ.get("PROMPT", "where is A-1?")}])
print(reply.choices[0].message.content)
"""


def test_a_mistral_call_is_provider_mistral_and_replays_with_no_key(tmp_path):
    requires("mistralai")
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


GROQ_AGENT = """
import os
from groq import Groq

client = Groq(api_key="gsk_test_0123456789", base_url=os.environ["BASE"])
reply = client.chat.completions.create(model="llama-3.1-8b-instant",
                                       messages=[{"role": "user", "content": os.environ.get("PROMPT", "where is A-1?")}])
print(reply.choices[0].message.content, reply.usage.prompt_tokens)
"""

COHERE_AGENT = """
import os
import cohere

client = cohere.ClientV2(api_key="co-test-0123456789", base_url=os.environ["BASE"])
messages = [{"role": "user", "content": os.environ.get("PROMPT", "where is A-1?")}]
reply = client.chat(model="command-r-plus", messages=messages)
print(reply.message.content[0].text, reply.usage.tokens.input_tokens)
for event in client.chat_stream(model="command-r-plus", messages=messages):
    if event.type == "content-delta":
        print(event.delta.message.content.text, end="")
print()
"""


@pytest.mark.parametrize("sdk, agent, provider, tokens", [
    ("groq", GROQ_AGENT, "groq", [(5, 4)]),
    ("cohere", COHERE_AGENT, "cohere", [(71, 4), (71, 4)]),
], ids=["groq", "cohere"])
def test_groq_behind_a_custom_base_url_and_cohere_v2_chat_keep_their_name_and_token_counts(tmp_path, sdk, agent,
                                                                                              provider, tokens):
    requires(sdk)
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(agent))
    with FakeProvider() as fake:
        done = run_wop("capture", "--out", str(tmp_path / "c"), "--", sys.executable, str(program),
                       env={"BASE": fake.url}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    recorded = list(CaptureReader(tmp_path / "c"))
    requests = [event["data"] for event in recorded if event["type"] == "llm_request"]
    answers = [event["data"] for event in recorded if event["type"] == "llm_response"]
    assert {request["provider"] for request in requests} == {provider} and len(requests) == len(tokens)
    assert [(answer["usage"]["input_tokens" if provider == "cohere" else "prompt_tokens"],
             answer["usage"]["output_tokens" if provider == "cohere" else "completion_tokens"])
            for answer in answers] == tokens
    shown = run_wop("show", str(tmp_path / "c"), cwd=tmp_path).stdout
    assert f"{tokens[0][0]}→{tokens[0][1]} tokens" in shown

    for _ in range(2):
        replayed = run_wop("replay", str(tmp_path / "c"), env={"BASE": fake.url}, cwd=tmp_path)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "answer to where is A-1?" in replayed.stdout + replayed.stderr
    changed = run_wop("replay", str(tmp_path / "c"), "--json", env={"BASE": fake.url, "PROMPT": "where is A-2?"},
                      cwd=tmp_path)
    assert changed.returncode == 1 and '"$.messages[0].content"' in changed.stdout
