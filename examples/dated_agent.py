"""An agent with no wop code at all: today's date, a request id and a random tone go into its prompt, and it
asks a model over HTTP (a local stand-in, so it runs offline) with nothing but the standard library.

    wop capture --name dated -- python3 examples/dated_agent.py
    wop replay dated          # exit 0: the date, the uuid, the tone and the answer come back from the capture
    wop replay dated --repeat # three replays compared with each other: nothing left uncaptured
"""

import json
import random
import sys
import urllib.request
import uuid
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fake_model  # noqa: E402

TONES = ("warm", "brisk", "formal")


def ask(base_url: str, messages: list[dict]) -> str:
    """One chat completion over HTTP, as any OpenAI-compatible client would send it."""
    body = json.dumps({"model": "fake-gpt", "messages": messages}).encode()
    request = urllib.request.Request(base_url + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["choices"][0]["message"]["content"]


def main() -> int:
    base_url = fake_model.serve()
    system = (f"You are a {random.choice(TONES)} support agent. Today is {datetime.now():%A %d %B %Y, %H:%M}. "
              f"Request id {uuid.uuid4()}.")
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": "Where is my order A-1001?"},
                {"role": "tool", "content": "order A-1001 status=shipped eta=2025-11-25"}]
    print(ask(base_url, messages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
