"""`wop diff` of two big captures on two cores (diff.forked): B read, checked and folded by a child process.

The diff read that way must be the diff read in one process, byte for byte, whatever the runs hold; a damaged B
must be reported as the one-process reader reports it; and the child must never outlive the diff.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.diff import diff_runs
from openwop_cli.diff.forked import MIN_BYTES, can_fork
from openwop_cli.format.reader import CaptureReader
from openwop_cli.format.redact import Redactor
from openwop_cli.format.schema import dumps_wrapping
from openwop_cli.format.sink import CaptureSink
from tests.conftest import run_wop, under_a_limit
from tests.test_diff import ANY_EVENT

BIG_RESULT = {"callId": "r", "ok": True, "result": "x" * 300_000}  # over the sink's blob threshold: a blob reference


def write_run(path: Path, events: list, *, pid: int, status: str = "ok") -> Path:
    """A capture of these events (a state write's data, or (type, data)), each made by process pid at a call site."""
    sink = CaptureSink(path, redactor=Redactor("none"))
    sink.start({})
    sink.append("run_start", {"argv": ["agent.py"], "channels": {"log": {"reducer": "append", "maxSize": 3}}})
    for index, event in enumerate(events):
        event_type, data = event if isinstance(event, tuple) else ("state_mutation", event)
        sink.append(event_type, data, origin={"pid": pid, "thread": "MainThread",
                                              "site": {"file": "agent.py", "line": index % 5, "function": "step"}})
    sink.finalize(status)
    return path


def both_ways(a: Path, b: Path) -> tuple[bytes, bytes]:
    """The diff (as JSON) and B's reader's findings, read in one process and with B read in a child."""
    results = []
    for fork_b in (False, True):
        reader_a, reader_b = CaptureReader(a, resolve_blobs=True), CaptureReader(b, resolve_blobs=True)
        assert not fork_b or can_fork(reader_b), "this process cannot fork: the test would compare a diff with itself"
        result = diff_runs(reader_a, reader_b, a="a", b="b", status_a=reader_a.manifest["status"],
                           status_b=reader_b.manifest["status"], ignore_run_metadata=True, fork_b=fork_b)
        findings = [[problem.to_json() for problem in reader_b.problems], reader_b.events_read, reader_b.complete]
        results.append(dumps_wrapping([result, findings], orjson.OPT_SORT_KEYS))  # (deep events: see below)
    return results[0], results[1]


def children() -> set[int]:
    """This process's children, running or not yet reaped (Linux): a session fixture's server among them (CI starts
    Phoenix), so a test looks only at those that were not there before it."""
    found = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def no_child_left(before: set[int]) -> bool:
    """The diff left no child behind, running or unreaped."""
    return children() <= before


EVENT = st.one_of(ANY_EVENT.filter(lambda event: not isinstance(event, tuple) or event[0] != "channel.written"),
                  st.integers(0, 1).map(lambda _: ("tool_result", BIG_RESULT)),
                  st.builds(lambda index: ("tool_call", {"name": "lookup", "callId": f"c{index}"}), st.integers(0, 3)))


@settings(max_examples=60, deadline=None)
@given(st.lists(EVENT, max_size=14), st.data())
def test_a_diff_with_b_read_by_a_child_is_the_diff_read_in_one_process(events_a, data):
    """Whatever the runs hold (every reducer, blobs, true for 1, a changed, inserted or dropped event, a shorter run, a
    failed run): the result, the state diff and B's reader's findings are the same bytes both ways."""
    events_b = list(events_a)
    for index in data.draw(st.lists(st.integers(0, 13), max_size=3)):
        index = min(index, len(events_b))
        change = data.draw(st.sampled_from(["replace", "insert", "delete"]))
        if change == "insert" or index == len(events_b):
            events_b.insert(index, data.draw(EVENT))
        elif change == "replace":
            events_b[index] = data.draw(EVENT)
        else:
            del events_b[index]
    if data.draw(st.booleans()):
        events_b = events_b[:data.draw(st.integers(0, len(events_b)))]
    before = children()
    with tempfile.TemporaryDirectory() as temp:
        a = write_run(Path(temp, "a"), events_a, pid=11)
        b = write_run(Path(temp, "b"), events_b, pid=22, status=data.draw(st.sampled_from(["ok", "error"])))
        alone, forked = both_ways(a, b)
    assert forked == alone
    assert no_child_left(before)


def test_differences_near_and_far_apart_over_many_chunks_are_each_read_from_their_line(tmp_path):
    """B's lines are read only where keys differ: runs of neighbours, lone ones several chunks apart, the last."""
    events = [{"kind": "channel", "channel": f"c{index % 9}", "value": {"step": index, "pad": "p" * 300},
               "reducer": "replace"} for index in range(20_000)]
    changed = {*range(5, 70), 71, 200, 5_000, 5_001, 13_333, *range(17_000, 17_300, 7), 19_999}
    other = [{**event, "value": {"step": -index}} if index in changed else event for index, event in enumerate(events)]
    a, b = write_run(tmp_path / "a", events, pid=11), write_run(tmp_path / "b", other, pid=22)
    assert (b / "events.jsonl").stat().st_size > 5 << 20
    alone, forked = both_ways(a, b)
    assert forked == alone
    assert [item["seq"] - 1 for item in orjson.loads(forked)[0]["eventDiffs"]] == sorted(changed)


def test_keys_longer_than_many_pipe_reads_arrive_whole(tmp_path):
    """Events whose key spans many reads of the pipe (a resolved blob of several MiB), equal and changed, between
    short ones: the same diff both ways."""
    big = "".join(chr(97 + index % 26) for index in range(1000)) * 6000  # 6 MB: six reads of the pipe and more
    events = [("tool_result", {"callId": "r", "ok": True, "result": big}), ("tool_call", {"name": "lookup"}),
              ("tool_result", {"callId": "s", "ok": True, "result": big + "tail"}), ("tool_call", {"name": "end"})]
    a = write_run(tmp_path / "a", events, pid=11)
    b = write_run(tmp_path / "b", [*events[:2], ("tool_result", {"callId": "s", "ok": True, "result": big + "Tail"}),
                                   events[3]], pid=22)
    alone, forked = both_ways(a, b)
    assert forked == alone
    assert [item["seq"] for item in orjson.loads(forked)[0]["eventDiffs"]] == [3]


def test_a_damaged_b_is_reported_as_the_one_process_reader_reports_it(tmp_path):
    events = [{"kind": "channel", "channel": "log", "value": index, "reducer": "append"} for index in range(400)]
    a, b = write_run(tmp_path / "a", events, pid=11), write_run(tmp_path / "b", events, pid=22)
    lines = (b / "events.jsonl").read_bytes().split(b"\n")
    lines[300] = lines[300].replace(b'"value":299', b'"value":"299"')  # a changed line: the hash says so
    lines[350] = lines[350].replace(b'"seq":350', b'"seq":"350"')  # a line that is not an event: the reader stops
    (b / "events.jsonl").write_bytes(b"\n".join(lines))
    alone, forked = both_ways(a, b)
    assert forked == alone
    findings = orjson.loads(forked)[1]
    assert findings[0][0]["kind"] == "bad_event" and findings[0][0]["line"] == 351 and findings[1] == 350


def test_events_as_deep_as_a_reader_accepts_are_compared_value_by_value(tmp_path):
    """Data 254 levels deep (what orjson writes) leaves no level for the comparison key's pair: such events, equal or
    not, are compared as values, both ways alike."""
    events = [("tool_call", {"name": "lookup", "callId": "c", "args": {"order": index}}) for index in range(6)]
    a, b = write_run(tmp_path / "a", events, pid=11), write_run(tmp_path / "b", events, pid=22)
    for capture, last in ((a, b"1"), (b, b"2")):
        lines = (capture / "events.jsonl").read_bytes().split(b"\n")
        for index in (2, 4):
            deep = b'"args":{"deep":' + b"[" * 252 + (last if index == 4 else b"1") + b"]" * 252 + b","
            lines[index] = lines[index].replace(b'"args":{', deep, 1)
        (capture / "events.jsonl").write_bytes(b"\n".join(lines))
    alone, forked = both_ways(a, b)
    assert forked == alone
    result, findings = orjson.loads(forked)
    assert [(problem["kind"], problem["line"]) for problem in findings[0]] == [("changed_line", 3), ("changed_line", 5)]
    assert [item["seq"] for item in result["eventDiffs"]] == [4]


def test_a_child_killed_from_outside_leaves_the_diff_to_read_b_itself(tmp_path):
    """The OOM killer or a stray kill takes the child mid-diff: the diff reads B in its own process, from the start,
    and gives what it would have given."""
    events = [{"kind": "channel", "channel": "log", "value": {"n": index, "pad": "p" * 600}, "reducer": "append"}
              for index in range(3000)]  # keys over what the pipe holds: the child waits until the diff reads them
    a = write_run(tmp_path / "a", events, pid=11)
    b = write_run(tmp_path / "b", [*events[:2000], {**events[2000], "value": -1}, *events[2001:]], pid=22)
    killed, before = [], children()

    class KillsTheChild(CaptureReader):
        def __iter__(self):
            for event in super().__iter__():
                if not killed:  # before the diff takes B's first key: the child cannot have finished
                    killed.extend(children() - before)
                    for child in killed:
                        os.kill(child, signal.SIGKILL)
                yield event

    forked = diff_runs(KillsTheChild(a), CaptureReader(b), a="a", b="b", fork_b=True)
    alone = diff_runs(CaptureReader(a), CaptureReader(b), a="a", b="b")
    assert len(killed) == 1
    assert dumps_wrapping(forked) == dumps_wrapping(alone) and alone["divergedAtSeq"] == 2001
    assert no_child_left(before)


def test_the_child_is_gone_when_the_diff_stops_early(tmp_path):
    events = [{"kind": "variable", "key": f"v{index % 7}", "value": index} for index in range(3000)]
    a, b = write_run(tmp_path / "a", events, pid=11), write_run(tmp_path / "b", events, pid=22)

    class StopsEarly(CaptureReader):
        def __iter__(self):
            for event in super().__iter__():
                if event["seq"] == 100:
                    raise RuntimeError("stopped")
                yield event

    before = children()
    with pytest.raises(RuntimeError, match="stopped"):
        diff_runs(StopsEarly(a), CaptureReader(b), a="a", b="b", fork_b=True)
    assert no_child_left(before)


def test_b_removed_while_the_diff_runs_is_still_diffed_as_it_was_read(tmp_path):
    """`wop rm`/`wop gc` (or a CI clean-up) removing B mid-diff: the one-process diff holds B open and finishes; so
    does the diff whose child reads B, with the same result, its lines read from the same open file."""
    events = [{"kind": "channel", "channel": "log", "value": index, "reducer": "append"} for index in range(3000)]
    a = write_run(tmp_path / "a", events, pid=11)
    original = write_run(tmp_path / "b", [*events[:2000], {**events[2000], "value": -1}, *events[2001:]], pid=22)
    results, before = [], children()
    for fork_b in (False, True):
        b = shutil.copytree(original, tmp_path / f"b-{fork_b}")

        class RemovesBAtSeq100(CaptureReader):
            def __iter__(self):
                for event in super().__iter__():
                    if event["seq"] == 100:  # B's reader has begun: it sent the keys of B's first 100 events
                        shutil.rmtree(b)
                    yield event

        result = diff_runs(RemovesBAtSeq100(a), CaptureReader(b), a="a", b="b", fork_b=fork_b)
        results.append(orjson.dumps(result))
        assert no_child_left(before)
    assert results[0] == results[1]
    assert [item["seq"] for item in orjson.loads(results[1])["eventDiffs"]] == [2001]


UNDER_A_LIMIT = """
    import os
    import resource
    import sys

    import orjson
    from openwop_cli.diff import diff_runs
    from openwop_cli.format.reader import CaptureReader

    def diff(fork_b):
        return orjson.dumps(diff_runs(CaptureReader(sys.argv[1]), CaptureReader(sys.argv[2]), a="a", b="b",
                                      fork_b=fork_b))

    alone = diff(False)
    if sys.argv[3] == "processes":  # `ulimit -u`: no other process (nor thread) for this user
        resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
    else:  # `ulimit -n`: three descriptors left, fewer than a child and its pipes take
        before = sorted(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(before) - 1 + 3, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    forked = diff(True)
    if sys.argv[3] == "files":
        assert sorted(os.listdir("/proc/self/fd")) == before, "descriptors were left open"
    print("same" if forked == alone else "different")
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def test_a_diff_that_cannot_start_a_child_reads_b_itself(tmp_path):
    """`ulimit -u` reached (fork fails: EAGAIN) or nearly all descriptors taken (a pipe fails: EMFILE): the diff reads
    B in its own process, the same diff, and leaves no descriptor open."""
    events = [{"kind": "channel", "channel": "log", "value": index, "reducer": "append"} for index in range(300)]
    a = write_run(tmp_path / "a", events, pid=11)
    b = write_run(tmp_path / "b", [*events[:200], {**events[200], "value": -1}, *events[201:]], pid=22)
    program = tmp_path / "under_a_limit.py"
    program.write_text(textwrap.dedent(UNDER_A_LIMIT))
    for limit in ("processes", "files"):
        done = subprocess.run([*under_a_limit(program), str(a), str(b), limit], capture_output=True, timeout=120)
        assert done.returncode == 0 and done.stdout == b"same\n", (limit, done.stderr.decode())


INTERRUPTED = """
    import sys
    from openwop_cli.diff import diff_runs
    from openwop_cli.format.reader import CaptureReader

    print("started", flush=True)
    diff_runs(CaptureReader(sys.argv[1]), CaptureReader(sys.argv[2]), a="a", b="b", fork_b=True)
    print("finished", flush=True)
"""


def big_pair(tmp_path: Path, times: int = 1) -> tuple[Path, Path]:
    """Two captures of `times` MIN_BYTES of events or more that differ late, in the last of their state writes."""
    events = [{"kind": "channel", "channel": "profile", "value": {f"k{index % 20}": index, "note": "n" * 200},
               "reducer": "merge"} for index in range(times * MIN_BYTES // 300)]
    a = write_run(tmp_path / "a", events, pid=11)
    b = write_run(tmp_path / "b", [*events[:-1], {**events[-1], "value": {"changed": True}}], pid=22)
    assert (a / "events.jsonl").stat().st_size >= times * MIN_BYTES
    return a, b


def test_ctrl_c_ends_the_diff_and_its_child_quietly(tmp_path):
    a, b = big_pair(tmp_path, times=8)  # a diff of a second or more: the signal comes while both processes read
    program = tmp_path / "interrupted.py"
    program.write_text(textwrap.dedent(INTERRUPTED))
    process = subprocess.Popen([sys.executable, str(program), str(a), str(b)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    assert process.stdout.readline() == b"started\n"
    time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to every process of the group
    out, err = process.communicate(timeout=60)
    assert out == b"", "the diff finished before the signal came"
    assert b"KeyboardInterrupt" in err and err.count(b"Traceback") == 1, err.decode()  # the child said nothing
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError("a process of the diff outlived it")


CTRL_C_WHILE_BOTH_READ = """
    import os
    import signal
    import sys

    import orjson
    from openwop_cli.diff import diff_runs
    from openwop_cli.format.reader import CaptureReader

    if sys.argv[3] == "ignore":
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as under `trap '' INT`, or in a pool worker
    else:
        signal.signal(signal.SIGINT, lambda *_: print("noted", flush=True))  # a handler that carries on


    class CtrlCAtSeq100(CaptureReader):
        def __iter__(self):
            for event in super().__iter__():
                if event["seq"] == 100:  # the child is still reading: the keys of B fill the pipe many times over
                    os.killpg(0, signal.SIGINT)  # as a terminal's Ctrl-C: to every process of the group
                yield event


    for fork_b in (True, False):
        result = diff_runs(CtrlCAtSeq100(sys.argv[1]), CaptureReader(sys.argv[2]), a="a", b="b", fork_b=fork_b)
        sys.stdout.buffer.write(orjson.dumps(result) + b"\\n")
"""


def test_a_caller_that_lives_through_ctrl_c_gets_its_diff(tmp_path):
    """A process that ignores Ctrl-C (`trap '' INT`, a pool worker) or handles it and carries on gets the diff the
    one-process read gives: the child reading B is the caller's to end, not the terminal's."""
    a, b = big_pair(tmp_path, times=2)
    program = tmp_path / "lives_through_ctrl_c.py"
    program.write_text(textwrap.dedent(CTRL_C_WHILE_BOTH_READ))
    for disposition in ("ignore", "handle"):
        done = subprocess.run([sys.executable, str(program), str(a), str(b), disposition], capture_output=True,
                              timeout=120, start_new_session=True)
        assert done.returncode == 0, done.stderr.decode()
        forked, alone = [line for line in done.stdout.splitlines() if line.startswith(b"{")]
        assert forked == alone


def test_wop_diff_of_two_big_captures_is_the_diff_read_in_one_process(tmp_path):
    """The command forks when the machine has a CPU to spare (diff.forked.pays); either way, the same diff."""
    a, b = big_pair(tmp_path)
    done = run_wop("diff", str(a), str(b), "--json", "--detail")
    assert done.returncode == 1, done.stderr
    reader_a, reader_b = CaptureReader(a, resolve_blobs=True), CaptureReader(b, resolve_blobs=True)
    alone = diff_runs(reader_a, reader_b, a=reader_a.manifest["runId"], b=reader_b.manifest["runId"],
                      status_a="ok", status_b="ok", ignore_run_metadata=True)
    assert orjson.loads(done.stdout) == alone
    assert [item["seq"] for item in alone["eventDiffs"]] == [alone["divergedAtSeq"]]


def open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_read_the_caller_lost_is_ended_by_the_garbage_collector(tmp_path):
    """A ForkedRead dropped unclosed (its caller interrupted before it held it): the child is killed and reaped, the
    pipes closed, once the read is collected."""
    from openwop_cli.diff.forked import ForkedRead

    events = [{"kind": "channel", "channel": "log", "value": {"n": index, "pad": "p" * 600}, "reducer": "append"}
              for index in range(3000)]  # more keys than the pipe holds: the child waits on it for good
    b = write_run(tmp_path / "b", events, pid=22)
    before, descriptors = children(), open_descriptors()
    read = ForkedRead(CaptureReader(b), lambda event: orjson.dumps(event["data"]), lambda event: None, lambda: None)
    assert children() - before, "the read did not fork"
    del read
    assert no_child_left(before) and open_descriptors() == descriptors


CTRL_C_AT_THE_FORK = """
    import gc
    import os
    import signal
    import sys

    from openwop_cli.diff import diff_runs
    from openwop_cli.format.reader import CaptureReader

    armed = [True]


    def ctrl_c_in_the_fork():
        if armed[0]:
            armed[0] = False
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the child is being started


    def children():
        return {pid for task in os.listdir("/proc/self/task")
                for pid in open(f"/proc/self/task/{task}/children").read().split()}


    os.register_at_fork(after_in_parent=ctrl_c_in_the_fork)
    descriptors = set(os.listdir("/proc/self/fd"))
    try:
        diff_runs(CaptureReader(sys.argv[1]), CaptureReader(sys.argv[2]), a="a", b="b", fork_b=True)
        print("not interrupted")
    except KeyboardInterrupt:
        print("interrupted")
    gc.collect()
    print("children left:", sorted(children()))
    print("descriptors left:", sorted(set(os.listdir("/proc/self/fd")) - descriptors))
"""


def test_a_ctrl_c_while_the_child_starts_ends_the_diff_and_leaves_nothing(tmp_path):
    """Ctrl-C in the moment between the fork and the diff holding its child: KeyboardInterrupt, as anywhere else in
    the diff, and no child or pipe left behind (the child would wait on a full pipe for the caller's lifetime)."""
    a, b = big_pair(tmp_path, times=2)
    program = tmp_path / "ctrl_c_at_the_fork.py"
    program.write_text(textwrap.dedent(CTRL_C_AT_THE_FORK))
    done = subprocess.run([sys.executable, str(program), str(a), str(b)], capture_output=True, timeout=120)
    assert done.stdout.decode().splitlines() == ["interrupted", "children left: []", "descriptors left: []"], \
        done.stderr.decode()


def test_a_forked_diff_folds_each_run_with_its_own_declarations_to_its_own_end(tmp_path):
    """B's fold in the child takes B's declarations (its pinned workflow's) and its run's end, as A's does here."""
    writes = [{"kind": "channel", "channel": "n", "value": 2}, ("run_end", {"exitCode": 0, "status": "ok"})]
    a, b = write_run(tmp_path / "a", writes, pid=1), write_run(tmp_path / "b", writes, pid=2)
    results = []
    for fork_b in (False, True):
        reader_a, reader_b = CaptureReader(a, resolve_blobs=True), CaptureReader(b, resolve_blobs=True)
        results.append(diff_runs(reader_a, reader_b, a="a", b="b", declarations_a={"n": {"reducer": "counter",
                                                                                         "default": 1}},
                                 declarations_b={"n": {"reducer": "counter", "default": 5}}, ignore_run_metadata=True,
                                 fork_b=fork_b))
    alone, forked = results
    assert forked["stateDiff"] == alone["stateDiff"]
    assert forked["stateDiff"]["channels"]["changed"] == {"n": {"a": 3, "b": 7, "paths": ["$"]}}
    assert forked["stateDiff"]["status"] == {"a": "ok", "b": "ok", "changed": False} and not forked["truncated"]


def test_a_forked_diff_of_a_longer_b_lists_up_to_max_diffs_as_the_one_process_diff(tmp_path):
    writes = [{"kind": "channel", "channel": "log", "value": index, "reducer": "append"} for index in range(4)]
    a = write_run(tmp_path / "a", writes, pid=1)
    b = write_run(tmp_path / "b", [*writes[:2], {**writes[2], "value": 9}, writes[3], writes[0], writes[1]], pid=2)
    results = []
    for fork_b in (False, True):
        reader_a, reader_b = CaptureReader(a, resolve_blobs=True), CaptureReader(b, resolve_blobs=True)
        results.append(diff_runs(reader_a, reader_b, a="a", b="b", max_diffs=2, ignore_run_metadata=True,
                                 fork_b=fork_b))
    alone, forked = results
    assert forked == alone
    assert [(item["seq"], item["op"]) for item in forked["eventDiffs"]] == [(3, "changed"), (5, "added")]
    assert forked["omittedEventDiffs"] == 1 and forked["counts"] == {"added": 2, "removed": 0, "changed": 1}


def test_a_run_log_with_a_capture_read_by_a_child_is_still_aligned_by_seq(tmp_path):
    """Only two captures are read by position, B in a child: a run log whose seqs skip, diffed with a big capture
    (where forking would pay), is aligned by seq here, whatever fork_b says."""
    writes = [{"kind": "channel", "channel": "log", "value": index, "reducer": "append"} for index in range(5)]
    b = write_run(tmp_path / "b", writes, pid=1)
    run_log = [event for event in CaptureReader(b, resolve_blobs=True) if event["seq"] != 2]
    for fork_b in (True, False):
        result = diff_runs(run_log, CaptureReader(b, resolve_blobs=True), a="a", b="b", fork_b=fork_b)
        assert [(item["seq"], item["op"]) for item in result["eventDiffs"]] == [(2, "added")], fork_b
