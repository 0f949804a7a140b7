"""Replay inside the current process: the test body of `@pytest.mark.wop`, served from its capture.

The same source, engine and boundaries as `wop replay`, attached to a session in this process;
the network is blocked only while the block runs. What the run did is written as a replay
capture (in `out`), and the outcome has the divergences and the score (report.verdict.replay_text
renders it).
"""

import os
from pathlib import Path
from typing import Any

from openwop_cli.config import replay_profile
from openwop_cli.format.events import new_id
from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from openwop_cli.host.launcher import CaptureOutcome
from openwop_cli.host.run_replay import ReplayAccount, ReplayOutcome
from openwop_cli.replay.engine import ReplayEngine
from openwop_cli.replay.source import ReplaySource
from openwop_cli.runtime import adapters, ambient, patching
from openwop_cli.runtime.boundaries import Replayer
from openwop_cli.runtime.session import AppendRecorder, Session, activate, deactivate


class InProcessReplay:
    """`with InProcessReplay(capture_dir, out=tmp) as replay: run()` — then `replay.outcome`.

    extend=True serves what the capture has and lets anything else run live, recording all of it
    (pytest's `--wop-record=new`); the new capture in `out` then holds the old calls and the new.
    """

    def __init__(self, source_dir: Path, *, out: Path, policy: str = "strict", extend: bool = False,
                 name: str | None = None) -> None:
        self.source_dir = Path(source_dir)
        self.out = Path(out)
        self.policy = policy
        self.extend = extend
        self.name = name
        self.outcome: ReplayOutcome | None = None
        self._undo_network: Any = None
        self._placeholders: dict[str, str] = {}

    def __enter__(self) -> "InProcessReplay":
        self.source = ReplaySource.for_serving(self.source_dir)
        from_seq = self.source.event_count if self.extend else 0
        self.account = ReplayAccount(self.source, self.source_dir, self.policy, from_seq, self.extend)
        self.sink = CaptureSink(self.out, redactor=Redactor.from_environment(replay_profile(self.source.manifest)))
        self.ambient = self.source.manifest.get("ambient") is True
        self.sink.start({"captureId": new_id(), "name": self.name, "mode": self.account.mode,
                         "ambient": self.ambient, **self.account.manifest_seed()})
        self.account.started(self.sink)
        self.session = Session(AppendRecorder(self.account.wrap_append(self.sink.append), self.sink.flush),
                               mode=self.account.mode)
        engine = ReplayEngine(self.source, policy=self.policy, from_seq=from_seq, branch=self.extend)
        self.session.replayer = Replayer(self.session, engine)
        activate(self.session)
        adapters.install()
        patching.install(values=self.ambient)
        if not self.extend:
            from openwop_cli.replay.credentials import placeholder_credentials
            from openwop_cli.runtime.netguard import block_network
            from openwop_cli.runtime.replay_child import servable

            self._placeholders = placeholder_credentials()
            os.environ.update(self._placeholders)
            self._undo_network = block_network(on_blocked=self.session.replayer.network_blocked,
                                               may_serve=lambda host, port: servable(self.source, host, port))
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        deactivate(self.session)
        ambient.uninstall()
        if self._undo_network is not None:
            self._undo_network()
        for name, value in self._placeholders.items():
            if os.environ.get(name) == value:
                del os.environ[name]
        fields = self.account.before_finish(self.sink, None)
        status = "error" if exc is not None else "ok"
        manifest = self.sink.finalize(status, None if exc is None else f"{type(exc).__name__}: {exc}", **fields)
        capture = CaptureOutcome(manifest["captureId"], self.out, manifest, 0 if exc is None else 1)
        self.outcome = self.account.outcome(capture)
        self.source.close()
