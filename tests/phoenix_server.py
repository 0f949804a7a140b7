"""A real Arize Phoenix server on 127.0.0.1, started once per test session (it takes seconds to start): the
`phoenix` fixture (registered in tests/conftest.py) is its base URL."""

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

STARTUP_SECONDS = 240


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PHOENIX_VENV = Path(__file__).resolve().parents[1] / ".ci" / "phoenix-venv"


def phoenix_python() -> str | None:
    """The Python that runs the Phoenix server: WOP_PHOENIX_PYTHON, the venv .ci/run installs it in (its
    dependencies would otherwise pin this environment's SDKs back), or this Python when it has the server."""
    chosen = os.environ.get("WOP_PHOENIX_PYTHON")
    if chosen:
        return chosen
    venv_python = PHOENIX_VENV / "bin" / "python"
    if venv_python.is_file():
        return str(venv_python)
    if importlib.util.find_spec("phoenix") is not None and importlib.util.find_spec("phoenix.server") is not None:
        return sys.executable
    return None


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory):
    """The base URL of a Phoenix server with its own working directory and ports, killed at the end."""
    python = phoenix_python()
    if python is None:
        pytest.skip(f"no Phoenix server here: .ci/run installs arize-phoenix in {PHOENIX_VENV} "
                    "(or set WOP_PHOENIX_PYTHON to a Python that has it)")
    work = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false",
           "PHOENIX_ENABLE_PROMETHEUS": "false", "PYTHONWARNINGS": "ignore"}
    log = open(work / "phoenix.log", "wb")
    server = subprocess.Popen([python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _healthy(url):
            if server.poll() is not None:
                tail = (work / "phoenix.log").read_text(errors="replace").strip().splitlines()[-1:]
                pytest.skip(f"Phoenix could not start here: {tail[0] if tail else 'no output'}")
            if time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not answer on {url} within {STARTUP_SECONDS}s (log: {work / 'phoenix.log'})")
            time.sleep(0.5)
        yield url
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=20)
        log.close()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False
