"""The `wop show` timeline: calls paired on one row, nested under the pending call, filters, divergence marks."""

import sys
import textwrap

from tests.conftest import run_wop

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
