"""Programs under the real `wop` CLI: capture one against the fake provider, replay it offline, change its prompt.

The round trip every adapter test makes: the capture holds the calls, two strict replays with the
provider gone exit 0 and print what the capture printed, and a changed prompt is a divergence
located in the request.
"""

import os
import select
import sys
import textwrap
from pathlib import Path

import orjson

from openwop_cli.format.reader import CaptureReader
from tests.conftest import run_wop
from tests.fake_provider import FakeProvider

OFFLINE_SDKS = {"AWS_ACCESS_KEY_ID": "AKIATESTTESTTEST", "AWS_SECRET_ACCESS_KEY": "test-secret",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "GOOGLE_API_KEY": "", "GEMINI_API_KEY": ""}


def capture(tmp_path: Path, script: str, env: dict, *options: str, name: str = "source"):
    """Run the script under `wop capture` (cwd tmp_path, program agent.py); returns (process, capture dir)."""
    program = tmp_path / "agent.py"
    program.write_text(textwrap.dedent(script))
    out = tmp_path / name
    done = run_wop("capture", "--out", str(out), *options, "--", sys.executable, str(program),
                   env={**OFFLINE_SDKS, **env}, cwd=tmp_path)
    return done, out


def replay(tmp_path: Path, source: Path, *options: str, env: dict, name: str = "replay"):
    """`wop replay --json`; returns (process, report)."""
    done = run_wop("replay", str(source), "--json", "--out", str(tmp_path / name), *options,
                   env={**OFFLINE_SDKS, **env}, cwd=tmp_path)
    return done, orjson.loads(done.stdout) if done.stdout.startswith("{") else None


def events(capture_dir: Path, event_type: str | None = None) -> list[dict]:
    return [event for event in CaptureReader(capture_dir, resolve_blobs=True)
            if event_type is None or event["type"] == event_type]


def unrecorded_connections(capture_dir: Path) -> list[dict]:
    """The events a capture holds for connections no adapter recorded (not the ambient values beside them)."""
    return [event for event in events(capture_dir, "nondeterministic") if event["data"].get("unrecorded")]


def round_trip(tmp_path: Path, script: str, *, calls: int, changed: dict, json_path: str,
               provider: FakeProvider | None = None) -> list[dict]:
    """Capture the script, check the capture holds `calls` LLM calls, replay it twice offline (same output),
    then with the `changed` environment (a changed prompt): exit 1 at json_path. Returns the llm_requests."""
    with provider or FakeProvider() as running:
        captured, source = capture(tmp_path, script, {"BASE": running.url})
        assert captured.returncode == 0, captured.stderr
        assert len(running.requests) >= calls
    requests = events(source, "llm_request")
    assert len(requests) == calls and len(events(source, "llm_response")) == calls
    assert all(len(request["data"]["cacheKey"] or "") == 64 for request in requests)
    assert not unrecorded_connections(source), "a connection went unrecorded"
    outputs = []
    for attempt in range(2):
        done, report = replay(tmp_path, source, env={"BASE": running.url}, name=f"replay{attempt}")
        assert done.returncode == 0, done.stderr
        assert report["score"]["score"] == 1.0 and not report["divergences"]
        outputs.append(done.stderr)
    assert outputs[0] == outputs[1]
    assert captured.stdout.strip() and captured.stdout.strip() in outputs[0]
    done, report = replay(tmp_path, source, env={"BASE": running.url, **changed}, name="changed")
    assert done.returncode == 1, done.stderr
    first = report["divergences"][0]
    assert (first["code"], first["eventType"], first["jsonPath"]) == ("event_payload_mismatch", "llm_request", json_path)
    return [request["data"] for request in requests]


def read_terminal(ours: int, process, seconds: float = 120) -> bytes:
    """Everything a process writes to a pseudo-terminal (our end) until it closes or is silent for seconds; the
    process is then waited for and our end closed."""
    seen = b""
    while select.select([ours], [], [], seconds)[0]:
        try:
            chunk = os.read(ours, 65536)
        except OSError:  # the terminal's other side is gone (EIO)
            break
        if not chunk:
            break
        seen += chunk
    process.wait(60)
    os.close(ours)
    return seen
