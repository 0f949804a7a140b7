"""The collector (`wop capture`'s end of the channel) keeps what a process sent, however late it gets to run: a
process may connect, send its events and end before the collector's thread has accepted its connection (on a busy
machine, at SCHED_IDLE, that thread may not run for as long as the program does)."""

import subprocess
import sys
import textwrap

from openwop_cli.runtime.channel import Collector

SENDER = textwrap.dedent("""
    import sys
    from openwop_cli.runtime.channel import ChannelSender

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
