"""The collector (`wop capture`'s end of the channel) keeps what a process sent, however late it gets to run: a
process may connect, send its events and end before the collector's thread has accepted its connection (on a busy
machine, at SCHED_IDLE, that thread may not run for as long as the program does)."""

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from openwop_cli.host.collector import Collector

SENDER = textwrap.dedent("""
    import sys
    from openwop_cli.runtime.sender import ChannelSender

    sender = ChannelSender(sys.argv[1])
    for index in range(int(sys.argv[2])):
        sender.emit("tool_call", {"name": "step", "index": index}, 1_763_875_573_123, {"pid": 1})
    sender.close()
""")


def test_events_of_a_process_that_ended_before_the_collector_ran_are_kept():
    received: list[tuple] = []
    collector = Collector(append=lambda event_type, data, **_: received.append((event_type, data)),
                          on_message=lambda _pid, _message: None)
    sent = subprocess.run([sys.executable, "-c", SENDER, collector.address, "20"], capture_output=True, text=True,
                          timeout=60)
    assert sent.returncode == 0, sent.stderr
    collector.start()
    collector.stop(grace_seconds=10)
    assert [data["index"] for _, data in received] == list(range(20))


SENDER_AT = textwrap.dedent("""
    import sys
    from openwop_cli.runtime.sender import ChannelSender

    sender = ChannelSender(sys.argv[1])
    name, first_ts, count = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    for index in range(count):
        sender.emit("tool_call", {"name": name, "index": index}, first_ts + index, {"pid": 1})
    sender.close()
""")


def test_events_read_together_are_kept_in_the_order_they_were_recorded():
    # Both processes have sent everything before the collector runs; the one that connected first recorded later
    # (a parent that waited for its child): its event is still after the child's, and each keeps its own order.
    received: list[tuple] = []
    collector = Collector(append=lambda event_type, data, ts, **_: received.append((data["name"], ts)),
                          on_message=lambda _pid, _message: None)
    for name, first_ts, count in (("parent", 2_000, 3), ("child", 1_000, 20)):
        sent = subprocess.run([sys.executable, "-c", SENDER_AT, collector.address, name, str(first_ts), str(count)],
                              capture_output=True, text=True, timeout=60)
        assert sent.returncode == 0, sent.stderr
    collector.start()
    collector.stop(grace_seconds=10)
    assert received == [*(("child", 1_000 + index) for index in range(20)),
                        *(("parent", 2_000 + index) for index in range(3))]


PARENT_SENDER = textwrap.dedent("""
    import sys
    from openwop_cli.runtime.sender import ChannelSender

    sender = ChannelSender(sys.argv[1])
    sender.emit("tool_call", {"name": "parent", "index": 0}, 1_000, {"pid": 1})
    sender.flush()
    print("sent", flush=True)
    sys.stdin.readline()  # its child runs meanwhile
    sender.emit("tool_call", {"name": "parent", "index": 1}, 2_000, {"pid": 1})
    sender.close()
""")


def test_a_childs_events_come_before_those_its_parent_recorded_after_it_in_the_same_millisecond():
    # The parent connects first and sends an event; its child then sends one and ends; the parent, having waited for
    # it, records its next event in the same millisecond. All of it is read together: the child's event comes first.
    received: list[tuple] = []
    collector = Collector(append=lambda event_type, data, ts, **_: received.append((data["name"], ts)),
                          on_message=lambda _pid, _message: None)
    parent = subprocess.Popen([sys.executable, "-c", PARENT_SENDER, collector.address], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert parent.stdout.readline() == "sent\n"
    child = subprocess.run([sys.executable, "-c", SENDER_AT, collector.address, "child", "2000", "1"],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    parent.communicate("go\n", timeout=60)
    assert parent.returncode == 0
    collector.start()
    collector.stop(grace_seconds=10)
    assert received == [("parent", 1_000), ("child", 2_000), ("parent", 2_000)]


GATED_SENDER = textwrap.dedent("""
    import sys
    from openwop_cli.runtime.sender import ChannelSender, wait_for_go

    wait_for_go(sys.argv[1])
    sender = ChannelSender(sys.argv[1])
    sender.request({"ask": 1})
    sender.close()
""")


def _yielding() -> bool:
    """Whether the calling thread runs only on idle cores (SCHED_IDLE, or nice 10 where that is refused)."""
    return os.sched_getscheduler(0) == os.SCHED_IDLE or os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) > 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the collector yields its cores on Linux only")
def test_a_capture_collector_gives_a_gated_process_its_go_at_the_usual_priority_and_yields_after():
    # A program started before its capture was ready waits for its go: a collector already at SCHED_IDLE on a busy
    # machine could leave it waiting for as long as the other processes keep the cores. Once that answer is given,
    # the collector yields them to the program.
    yielding: list[tuple[str, bool]] = []

    def on_message(_pid, message):
        yielding.append((next(iter(message)), _yielding()))
        return {} if "ready" in message or "ask" in message else None

    collector = Collector(append=lambda *_, **__: None, on_message=on_message, yield_cores=True)
    collector.start()
    sent = subprocess.run([sys.executable, "-c", GATED_SENDER, collector.address], capture_output=True, text=True,
                          timeout=60)
    collector.stop(grace_seconds=10)
    assert sent.returncode == 0, sent.stderr
    assert yielding == [("ready", False), ("hello", True), ("ask", True)]  # the go, then the program's first words
