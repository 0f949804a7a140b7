"""Inside a process started by `wop replay` or `wop fork`: load the source capture and answer from it.

The child bootstrap calls `install()` when WOP_MODE is replay or fork. The process asks `wop` which
recorded process it stands for, loads that process's units from the source capture, attaches the
engine to its session and, for a replay, blocks outbound network.
"""

import json
import os
from pathlib import Path

ENV_SOURCE = "WOP_REPLAY_FROM"
ENV_POLICY = "WOP_POLICY"
ENV_FROM_SEQ = "WOP_FROM_SEQ"
ENV_ALLOW_TOOLS = "WOP_ALLOW_TOOLS"
ENV_OVERRIDES = "WOP_OVERRIDES"


def install() -> None:
    """Set up this process's replay session from the environment `wop replay`/`wop fork` gave it."""
    from openwop_cli.replay.boundaries import Replayer
    from openwop_cli.replay.engine import ReplayEngine
    from openwop_cli.replay.source import ReplaySource
    from openwop_cli.runtime import adapters
    from openwop_cli.runtime import session as runtime_session
    from openwop_cli.runtime.channel import ENV_ADDRESS, ChannelSender, process_info, tcp_address

    mode = os.environ["WOP_MODE"]
    address = os.environ[ENV_ADDRESS]
    sender = ChannelSender(address)
    answer = sender.request({"replayHello": process_info()})
    source = ReplaySource.for_serving(Path(os.environ[ENV_SOURCE]), only_pid=answer.get("recordedPid"))
    engine = ReplayEngine(
        source,
        policy=os.environ.get(ENV_POLICY, "strict"),
        from_seq=int(os.environ.get(ENV_FROM_SEQ, "0")),
        branch=mode == "fork",
        overrides=json.loads(os.environ.get(ENV_OVERRIDES, "{}")),
    )
    session = runtime_session.Session(sender, mode=mode)
    session.replayer = Replayer(session, engine, frozenset(json.loads(os.environ.get(ENV_ALLOW_TOOLS, "[]"))))
    runtime_session.attach_channel(sender)
    runtime_session.install(session)
    adapters.install()
    if mode == "replay":
        from openwop_cli.runtime.connections import proxy_address
        from openwop_cli.runtime.netguard import block_network

        channel = tcp_address(address)
        block_network({*proxy_address(), *((channel,) if channel else ())}, session.replayer.network_blocked)
