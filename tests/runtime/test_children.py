"""Children wop cannot see are named, Python children that lost the bootstrap are recorded (runtime/children.py); a
replay lets the program reach its own servers on loopback and never leaves it spinning on a blocked connection
(runtime/listeners.py, runtime/netguard.py)."""

import json
import os
import socket
import sys
import threading

import orjson
from hypothesis import given
from hypothesis import strategies as st

from openwop_cli.runtime.children import is_python, with_bootstrap
from openwop_cli.runtime.connections import describe
from openwop_cli.wire.environ import runs_bootstrap
from tests.programs import capture, events, replay, unrecorded_connections

CHILDREN = """
    import os, subprocess, sys
    subprocess.run(["echo", "from echo"], check=True)
    for _ in range(2):
        subprocess.run("true", shell=True, check=True)
    filtered = subprocess.run([sys.executable, "-c", "import time; print('child at', time.time())"],
                              env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, check=True)
    print(filtered.stdout.strip())
    subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # inherits the bootstrap: recorded, nothing to say
"""


def test_children_wop_cannot_see_are_named_and_a_filtered_python_child_is_recorded(tmp_path):
    done, source = capture(tmp_path, CHILDREN, {})
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("captured ") and "--proxy" not in last
    python = sys.executable.rsplit("/", 1)[-1]
    assert (f"2 child processes sh (started by agent.py:5), 1 child process echo (started by agent.py:3), "
            f"1 child process {python} (started by agent.py:9) were not recorded") in last
    named = [event["data"] for event in unrecorded_connections(source)]
    assert [(data["source"], data["key"], data["value"]["site"]["line"]) for data in named] == [
        ("process", "echo", 3), ("process", "sh", 5), ("process", python, 9)]
    assert named[0]["value"]["argv"] == ["echo", "from echo"] and named[0]["value"]["reason"] == "not a Python process"
    assert "-I" in named[2]["value"]["reason"]
    clock = [event for event in events(source, "nondeterministic") if event["data"].get("source") == "clock"]
    assert clock and clock[0]["origin"]["pid"] != events(source, "run_start")[0].get("origin", {}).get("pid"), \
        "the child started with a filtered environment was not recorded"
    replayed, report = replay(tmp_path, source, env={})
    assert replayed.returncode == 0, replayed.stderr
    assert "in the capture, child processes echo (started by agent.py:3)" in replayed.stderr.splitlines()[0]
    assert f"child at {clock[0]['data']['value']}" in replayed.stderr  # the filtered child was replayed too


def test_strict_transports_fails_on_a_child_wop_cannot_see(tmp_path):
    done, _ = capture(tmp_path, 'import subprocess; subprocess.run(["true"])', {}, "--strict-transports", "--json")
    assert done.returncode == 1
    summary = orjson.loads(done.stderr.strip().splitlines()[-1])
    assert [(child["executable"], child["count"]) for child in summary["unrecordedProcesses"]] == [("true", 1)]
    assert "unrecordedConnections" not in summary


def test_an_mcp_stdio_server_is_part_of_its_recorded_session_not_a_child_to_name(tmp_path):
    from tests.fake_provider import FakeProvider
    from tests.mcp_agents import SDK_STDIO, write_agent

    write_agent(tmp_path, SDK_STDIO)
    with FakeProvider() as provider:
        done, source = capture(tmp_path, (tmp_path / "agent.py").read_text(), {"BASE": provider.url},
                               "--strict-transports")
    assert done.returncode == 0, done.stderr
    assert not unrecorded_connections(source)


def test_what_counts_as_python_and_as_skipping_the_bootstrap(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/usr/bin/env -S python3 -u\nprint(1)\n")
    shell = tmp_path / "run.sh"
    shell.write_text("#!/bin/sh\necho 1\n")
    assert is_python(sys.executable) and is_python("python3") and is_python(str(script))
    assert not is_python(str(shell)) and not is_python("echo") and not is_python("node-does-not-exist")
    assert runs_bootstrap(["-u", "agent.py"]) and runs_bootstrap(["-c", "import sys; sys.exit(-1)"])
    assert not runs_bootstrap(["-I", "agent.py"]) and not runs_bootstrap(["-uE", "agent.py"])
    assert runs_bootstrap(["agent.py", "-S"])  # the program's own option


def test_describe_names_children_beside_connections():
    child = {"executable": "node", "argv": ["node", "s.js"], "count": 1, "site": {"file": "a.py", "line": 9}}
    connection = {"host": "127.0.0.1", "port": 8000, "count": 2, "site": {"file": "a.py", "line": 3}}
    assert describe([connection, child]) == (
        "2 connections to 127.0.0.1:8000 (opened by a.py:3) were not recorded: replay cannot serve them; use --proxy; "
        "1 child process node (started by a.py:9) was not recorded: wop cannot see into it (a replay runs it for real)")


def test_with_bootstrap_puts_back_what_wop_gave_the_process(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/opt/wop/_bootstrap:/elsewhere")
    monkeypatch.setenv("WOP_MODE", "capture")
    restored = with_bootstrap({"PATH": "/bin", "PYTHONPATH": "/mine"})
    assert restored["PYTHONPATH"] == "/opt/wop/_bootstrap:/mine" and restored["WOP_MODE"] == "capture"
    assert restored["PATH"] == "/bin"


RETRYING = """
    import os, socket, time
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=1).close()
            print("connected")
            break
        except Exception:
            time.sleep(0.05)
    else:
        print("gave up")
"""


def test_a_retry_loop_that_swallows_the_blocked_connection_is_ended_not_left_spinning(tmp_path):
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=lambda: server.accept(), daemon=True).start()
    port = str(server.getsockname()[1])
    try:
        done, source = capture(tmp_path, RETRYING, {"PORT": port})
    finally:
        server.close()
    assert done.returncode == 0 and "connected" in done.stdout
    replayed, report = replay(tmp_path, source, env={"PORT": port})
    assert replayed.returncode == 1
    assert [divergence["code"] for divergence in report["divergences"]] == ["replay_network_blocked"]
    assert "the replay has stopped and the program tried the network again" in replayed.stderr
    assert "gave up" not in replayed.stderr


def test_a_port_nobody_listens_on_is_refused_as_in_the_capture_not_blocked(tmp_path):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    script = """
        import os, socket
        try:
            socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=1)
        except ConnectionRefusedError as exc:
            print("refused", type(exc).__name__)
    """
    done, source = capture(tmp_path, script, {"PORT": port}, "--strict-transports")
    assert done.returncode == 0 and "refused" in done.stdout, done.stderr
    replayed, report = replay(tmp_path, source, env={"PORT": port})
    assert replayed.returncode == 0 and not report["divergences"], replayed.stderr
    assert "refused ConnectionRefusedError" in replayed.stderr
    assert json.loads((source / "manifest.json").read_text())["status"] == "ok"


TCP_TABLE = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0
   1: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0 100 0 0 10 0
   2: 0100007F:1F92 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0 100 0 0 10 0
   3: 0A00000A:1F93 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0 100 0 0 10 0
"""


def test_listening_sockets_are_read_from_the_kernels_table(tmp_path):
    from openwop_cli.runtime.listeners import _listening_inodes

    table = tmp_path / "tcp"
    table.write_text(TCP_TABLE)
    tables = (str(table), str(tmp_path / "absent"))
    assert _listening_inodes(8080, tables) == {"111"}  # 127.0.0.1:8080, listening
    assert _listening_inodes(8081, tables) == {"222"}  # the any-address
    assert _listening_inodes(8082, tables) == set()  # a connection, not a listener
    assert _listening_inodes(8083, tables) == set()  # 10.0.0.10: not loopback


@given(st.text())
def test_a_damaged_table_never_raises(text):
    import tempfile

    from openwop_cli.runtime.listeners import _listening_inodes

    with tempfile.NamedTemporaryFile("w", suffix=".tcp", delete=False) as table:
        table.write(text)
    try:
        assert isinstance(_listening_inodes(8080, (table.name,)), set)
    finally:
        os.unlink(table.name)


def test_loopback_hosts():
    from openwop_cli.runtime.listeners import is_loopback

    assert all(is_loopback(host) for host in ("127.0.0.1", "127.1.2.3", "localhost", "::1", "0.0.0.0"))
    assert not any(is_loopback(host) for host in ("10.0.0.1", "example.com", "::2", None, 80))
