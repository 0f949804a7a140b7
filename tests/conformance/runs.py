"""Real runs for the conformance tests: programs captured and replayed by the real `wop`, captures read back."""

import sys
import textwrap
from pathlib import Path

import orjson

from openwop_cli.format.reader import CaptureReader
from tests.conftest import run_wop

AGENT = """
import json, os, urllib.request
import openwop_cli as wop

URL = os.environ.get("PROVIDER_URL", "http://127.0.0.1:9")

def chat(messages):
    body = json.dumps({"model": "fake-gpt", "messages": messages}).encode()
    request = urllib.request.Request(URL + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())

@wop.tool
def lookup_order(order_id):
    with open("tool-ran.txt", "a") as marker:
        marker.write(order_id + "\\n")
    return {"id": order_id, "status": "shipped"}

messages = [{"role": "system", "content": os.environ.get("PROMPT", "Be brief.")},
            {"role": "user", "content": "where is my order?"}]
reply = wop.llm_call("openai", "fake-gpt", {"messages": messages}, lambda: chat(messages))
order = lookup_order(os.environ.get("ORDER", "A-1"))
pick = wop.randint(0, 1000, key="pick")
for _ in range(int(os.environ.get("EXTRA_PICKS", "0"))):
    wop.randint(0, 1000, key="pick")
print("answer:", reply["choices"][0]["message"]["content"], "| pick:", pick, "| status:", order["status"])
"""


def program(tmp_path: Path, script: str, name: str = "agent.py") -> Path:
    """script (dedented) written as a program file in tmp_path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(script))
    return path


def capture(tmp_path: Path, script: str, *options: str, out: str = "source", env: dict | None = None,
            expect: int = 0) -> Path:
    """`wop capture --out tmp_path/out [options] -- python script` (run in tmp_path); the capture's directory."""
    path = program(tmp_path, script)
    target = tmp_path / out
    done = run_wop("capture", "--out", str(target), *options, "--", sys.executable, str(path), env=env, cwd=tmp_path)
    assert done.returncode == expect, done.stderr
    return target


def replay(tmp_path: Path, source: Path, *options: str, out: str = "replay", env: dict | None = None,
           command: tuple[str, ...] = ()):
    """`wop replay SOURCE --json --out tmp_path/out [options] [-- command]`: (the process, its JSON report)."""
    tail = ("--", *command) if command else ()
    done = run_wop("replay", str(source), "--json", "--out", str(tmp_path / out), *options, *tail, env=env,
                   cwd=tmp_path)
    report = orjson.loads(done.stdout) if done.stdout.strip().startswith("{") else None
    return done, report


def events(capture_dir: Path) -> list[dict]:
    """Every event of a capture, blobs resolved."""
    return list(CaptureReader(capture_dir, resolve_blobs=True))


def manifest(capture_dir: Path) -> dict:
    return orjson.loads((capture_dir / "manifest.json").read_bytes())


def state(capture_dir: Path, *options: str) -> dict:
    """`wop state CAPTURE --json`: the folded channels, variables and findings."""
    done = run_wop("state", str(capture_dir), "--json", *options)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def diff(a: Path, b: Path, *options: str) -> tuple[int, dict]:
    """`wop diff A B --json` (run_wop checks it against the RFC 0054 schema): (exit code, the object)."""
    done = run_wop("diff", str(a), str(b), "--json", *options)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, orjson.loads(done.stdout)


def run_log(path: Path, records: list[dict]) -> Path:
    """An OpenWOP run event log (JSON Lines of RunEventDoc records)."""
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


def assert_not_on_disk(secret: str, directory: Path) -> None:
    """No file under directory holds secret."""
    for path in directory.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
