"""The `wop show` timeline: calls paired on one row, nested under the pending call, filters, divergence marks."""

import sys
import textwrap
from http.server import BaseHTTPRequestHandler

import orjson

from tests.conftest import http_server, run_wop, write_capture

NESTED = """
    import openwop_cli as wop

    @wop.tool
    def research(topic):
        notes = wop.llm_call("openai", "m", {"messages": [{"role": "user", "content": topic}]},
                             lambda: {"content": "notes on " + topic, "stop_reason": "end_turn"})
        wop.state.write("notes", notes["content"], "append", node_id="researcher")
        return notes["content"]

    @wop.tool
    def publish(text):
        raise RuntimeError("the CMS is down")

    summary = research("refund policy")
    try:
        publish(summary)
    except RuntimeError:
        pass
"""


def captured(tmp_path, script=NESTED):
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(script))
    out = tmp_path / "capture"
    assert run_wop("capture", "--out", str(out), "--", sys.executable, str(program), cwd=tmp_path).returncode == 0
    return out


def rows(done):
    return [line for line in done.stdout.splitlines()[2:] if line.strip()]


def test_calls_are_paired_and_nested_under_the_call_that_made_them(tmp_path):
    lines = rows(run_wop("show", str(captured(tmp_path))))
    research = next(line for line in lines if "research(" in line)
    llm = next(line for line in lines if "openai m" in line)
    write = next(line for line in lines if "notes ←" in line)
    assert research.split()[0] == "1–5" and "→  ok" in research
    assert llm.index("openai m") > research.index("research(")
    assert write.index("notes ←") > research.index("research(")
    assert "→" in llm and "end_turn" in llm
    publish = next(line for line in lines if "publish(" in line)
    assert "RuntimeError" in publish


def test_filters_by_node_text_and_range(tmp_path):
    capture = captured(tmp_path)
    by_node = rows(run_wop("show", str(capture), "--node", "researcher"))
    assert len(by_node) == 1 and "notes ←" in by_node[0]
    by_tool = rows(run_wop("show", str(capture), "--node", "publish"))
    assert len(by_tool) == 1 and "publish(" in by_tool[0]
    by_text = rows(run_wop("show", str(capture), "--grep", "CMS IS DOWN"))
    assert len(by_text) == 1 and "publish(" in by_text[0]
    ranged = rows(run_wop("show", str(capture), "--from", "2", "--to", "4"))
    assert [line.split()[0] for line in ranged] == ["2–3", "4"]


def test_a_replays_divergences_are_marked(tmp_path):
    capture = captured(tmp_path, """
        import os
        import openwop_cli as wop

        @wop.tool
        def step(n):
            return n

        step(int(os.environ.get("N", "1")))
    """)
    replayed = tmp_path / "replay"
    done = run_wop("replay", str(capture), "--lenient", "--out", str(replayed), env={"N": "2"}, cwd=tmp_path)
    assert done.returncode == 1
    shown = run_wop("show", str(replayed))
    assert "replay of" in shown.stdout
    marked = [line for line in rows(shown) if "✗" in line]
    assert len(marked) == 1 and "event_payload_mismatch" in marked[0]


def test_seq_shows_the_event_and_the_state_after_it(tmp_path):
    capture = captured(tmp_path)
    done = run_wop("show", str(capture), "--seq", "4")
    assert "state after seq 4" in done.stdout and "notes" in done.stdout


def test_sites_show_where_in_the_program_each_call_was_made(tmp_path):
    out = captured(tmp_path)
    lines = (tmp_path / "program.py").read_text().splitlines()
    call_line = next(number for number, line in enumerate(lines, 1) if 'summary = research("refund policy")' in line)
    llm_line = next(number for number, line in enumerate(lines, 1) if "notes = wop.llm_call(" in line)
    plain = run_wop("show", str(out), "--no-pager", cwd=tmp_path)
    assert "program.py:" not in plain.stdout
    done = run_wop("show", str(out), "--sites", "--no-pager", cwd=tmp_path)
    shown = rows(done)
    assert " site " in done.stdout.splitlines()[1]
    assert f"program.py:{call_line}" in next(row for row in shown if "research(" in row)
    assert f"program.py:{llm_line}" in next(row for row in shown if " llm " in row)
    tree = run_wop("show", str(out), "--seq", "1", "--no-pager", cwd=tmp_path)
    assert "site" in tree.stdout and f"line: {call_line}" in tree.stdout


PIPED_EVENTS = [
    ("run_start", {"argv": ["agent.py"]}),
    ("tool_call", {"name": "look\nup\x1b[2J", "args": {"order": "A-1"}, "callId": "t1"}),
    ("tool_result", {"callId": "t1", "ok": True, "result": {"status": "shipped\nback"}}),
    ("state_mutation", {"kind": "channel", "channel": "notes", "value": "a\tb", "reducer": "append"}),
    ("llm_request", {"provider": "openai", "model": "m", "callId": "l1", "request": {"messages": []}}),
    ("llm_response", {"provider": "openai", "model": "m", "callId": "l1", "ok": True, "text": "hi"}),
    ("run_end", {"exitCode": 0, "status": "ok"}),
]


def test_a_timeline_piped_to_another_program_is_plain_text_one_line_per_row(tmp_path):
    capture = write_capture(tmp_path / "capture", PIPED_EVENTS)
    done = run_wop("show", str(capture))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("capture ") and lines[1].split() == ["seq", "offset", "took", "type", "summary"]
    assert [line.split()[0] for line in lines[2:]] == ["0", "1–2", "3", "4–5", "6"]
    assert not any(char in done.stdout for char in "─│┃━┏┗╭╰\x1b")
    assert "look\\nup\\x1b[2J(" in lines[3] and "shipped\\nback" in lines[3] and "notes ← a b (append)" in lines[4]


def test_a_timeline_on_a_terminal_is_styled(tmp_path):
    import os
    import pty
    import subprocess

    capture = write_capture(tmp_path / "capture", PIPED_EVENTS)
    controller, terminal = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    process = subprocess.Popen([sys.executable, "-m", "openwop_cli", "show", str(capture), "--no-pager"],
                               stdout=terminal, stderr=subprocess.PIPE, env={**env, "TERM": "xterm-256color"})
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    assert process.wait(timeout=120) == 0, process.stderr.read()
    os.close(controller)
    assert b"\x1b[" in shown and b"lookup" not in shown and b"look\\nup" in shown


def test_jsonl_prints_each_event_on_its_own_line_and_json_stays_one_object(tmp_path):
    capture = write_capture(tmp_path / "capture", PIPED_EVENTS)
    recorded = [orjson.loads(line) for line in (capture / "events.jsonl").read_bytes().splitlines()]
    lines = run_wop("show", str(capture), "--jsonl").stdout.splitlines()
    assert [orjson.loads(line) for line in lines] == recorded
    only_tools = run_wop("show", str(capture), "--jsonl", "--type", "tool").stdout.splitlines()
    assert [orjson.loads(line)["seq"] for line in only_tools] == [1, 2]
    whole = orjson.loads(run_wop("show", str(capture), "--json").stdout)
    assert whole["events"] == recorded and whole["capture"]["eventCount"] == len(recorded)
    one = run_wop("show", str(capture), "--jsonl", "--seq", "3", "--state").stdout
    assert one.count("\n") == 1 and orjson.loads(one)["state"]["channels"] == {"notes": ["a\tb"]}
    assert run_wop("show", str(capture), "--json", "--jsonl").returncode == 2


ERROR_ANSWERS = """
    import os
    import httpx

    base = os.environ["BASE"]
    print(httpx.get(base + "/orders/A-9").status_code, httpx.get(base + "/down").status_code)
    print(httpx.post(base + "/v1/chat/completions",
                     json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}).status_code)
"""


class ErrorAnswers(BaseHTTPRequestHandler):
    """Answers every request with an error: 404 JSON for /orders/…, 429 JSON (OpenAI's shape) for chat completions,
    503 text otherwise."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/orders/"):
            status, kind, body = 404, "application/json", b'{"detail": "order A-9 not found"}'
        elif self.path.endswith("/chat/completions"):
            status, kind, body = 429, "application/json", b'{"error": {"message": "Rate limit reached"}}'
        else:
            status, kind, body = 503, "text/plain", b"upstream exploded"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


def test_an_http_error_answer_shows_its_status_and_body_not_an_unknown_error(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(ERROR_ANSWERS))
    with http_server(ErrorAnswers) as url:
        done = run_wop("capture", "--out", str(tmp_path / "capture"), "--", sys.executable, str(program),
                       env={"BASE": url}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = run_wop("show", str(tmp_path / "capture"))
    assert shown.returncode == 0 and "error ?" not in shown.stdout
    assert '→  error HTTP 404 {"detail":"order A-9 not found"}' in shown.stdout
    assert "→  error HTTP 503 upstream exploded" in shown.stdout
    assert '→  error HTTP 429 {"error":{"message":"Rate limit reached"}}' in shown.stdout


def test_a_stream_that_did_not_end_says_how_it_stopped(tmp_path):
    """A streamed answer recorded incomplete shows why: the exception that broke its connection, or that the program
    stopped reading it (before, the row read as an answer that ended)."""
    broke = {"type": "RemoteProtocolError", "module": "httpcore", "message": "peer closed connection"}
    capture = write_capture(tmp_path / "capture", [
        ("run_start", {"argv": ["agent.py"]}),
        ("tool_call", {"name": "http", "args": {"method": "GET", "url": "http://api/events"}, "callId": "h1"}),
        ("tool_result", {"callId": "h1", "ok": True, "result": {"status": 200, "body": "data: 1\n\n"},
                         "streamComplete": False, "streamError": broke}),
        ("llm_request", {"provider": "openai", "model": "m", "callId": "l1", "request": {"messages": []}}),
        ("llm_response", {"provider": "openai", "model": "m", "callId": "l1", "ok": True, "text": "hel",
                          "streamComplete": False}),
        ("run_end", {"exitCode": 0, "status": "ok"}),
    ])
    done = run_wop("show", str(capture))
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[2:]
    assert rows[1].endswith("· stream broke: RemoteProtocolError: peer closed connection"), rows[1]
    assert rows[2].endswith("hel · stream not read to its end"), rows[2]
