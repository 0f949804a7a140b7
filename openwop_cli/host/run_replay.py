"""`wop replay` and `wop fork` in the parent: run the command against a source capture and account for it.

The children match and serve their calls themselves (runtime.replay_child); the parent assigns each
replayed process the recorded process it stands for, watches the events go by (which recorded
seq each was served from, which divergences were found), and at the end adds what the children
could not see: recorded calls never made (event_missing), an exit code that changed, and the
determinism score. The replay is written as a new capture linked to its source.
"""

import os
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from openwop_cli.config import replay_profile
from openwop_cli.errors import UsageError
from openwop_cli.format.events import (
    LLM_REQUEST,
    NONDETERMINISTIC,
    PROXY_ORIGIN,
    REPLAY_DIVERGED,
    REPLAY_NOTE,
    STATE_MUTATION,
    TOOL_CALL,
)
from openwop_cli.format.imported import watches_ambient
from openwop_cli.host.launcher import CaptureOutcome, ChildLaunch, RunHooks, run_captured
from openwop_cli.host.overrides import resolve_overrides
from openwop_cli.host.replay_launch import replay_environment, settled_environment
from openwop_cli.replay.controls import ReplayControls
from openwop_cli.replay.divergence import EVENT_MISSING, EVENT_PAYLOAD_MISMATCH, EXTRA_CODES, Divergence, observed_event
from openwop_cli.replay.engine import is_checked
from openwop_cli.replay.source import ReplaySource
from openwop_cli.trust import require_trusted

if TYPE_CHECKING:
    from openwop_cli.format.sink import CaptureSink

EXCEPTION_NOT_REBUILT = "exception_not_rebuilt"
TRACED_TOOL_NOT_CALLED = "traced_tool_not_called"
PROGRAM_ENDED = "program_ended_after_stop"
STOP_GRACE_SECONDS = 10.0  # after a strict stop, how long the program may take to end before wop ends it
ENV_STOP_GRACE = "WOP_STOP_GRACE"  # seconds, instead of STOP_GRACE_SECONDS
_REQUEST_TYPES = frozenset({TOOL_CALL, LLM_REQUEST, NONDETERMINISTIC, STATE_MUTATION})
_WATCHED_MARKS = (b'"live":true', b'"errorRebuilt":false')  # data `watched` looks into (a false alarm only costs a parse)


@dataclass
class ReplayOutcome:
    """A finished replay or fork: the new capture, its divergences, score, and the files changed since capture."""

    capture: CaptureOutcome
    source_dir: Path
    source_manifest: dict[str, Any]
    policy: str
    from_seq: int
    branch: bool
    divergences: list[Divergence]
    score: dict[str, Any]
    changed_files: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    early_exit: dict[str, Any] | None = None
    edits: list[dict[str, Any]] = field(default_factory=list)
    offline: bool = False
    diff: dict[str, Any] | None = None  # an edited fork against its source (RFC 0054)
    source_change: dict[str, Any] | None = None  # the pinned file that changed where the first divergence was made
    live_values: list[dict[str, Any]] = field(default_factory=list)  # ambient reads served live, per call site
    compared: dict[str, Any] = field(default_factory=dict)  # what the verdict rests on (ReplayAccount.evidence)

    @property
    def failed(self) -> bool:
        """What the exit code says: a divergence (an edited fork's consequences are its answer, not failures,
        unless it had to stay offline), or a fork whose program did not exit 0."""
        if self.edits and not self.offline:
            return self.capture.exit_code != 0
        return self.diverged or (self.branch and self.capture.exit_code != 0)

    @property
    def diverged(self) -> bool:
        return bool(self.divergences)


def run_replay(
    source_dir: Path,
    argv: list[str],
    *,
    policy: str,
    from_seq: int | None,
    branch: bool,
    overrides: dict[str, str],
    allow_tools: list[str],
    out: Path | None,
    name: str | None,
    warn: Callable[[str], None],
    store_root: Path,
    output_to_stderr: bool = False,
    proxy: bool = False,
    controls: ReplayControls = ReplayControls(),
    launch: ChildLaunch | None = None,
) -> ReplayOutcome:
    """Replay (or, with branch, fork) the capture at source_dir; see the module docstring and ReplayControls.

    overrides: --set KEY → VALUE as typed (host.overrides checks and reads them against the capture);
    launch: the command host.replay_launch.launched_early started before the capture was read (cancelled when the replay
    stops before running it, or turns out to need another start)."""
    source = None
    try:
        source = ReplaySource(source_dir, keyed=False)
        start = _checked_from_seq(from_seq, branch, source.event_count, bool(controls.edits))
        if controls.edits:
            from openwop_cli.replay.edits import check_edits

            check_edits(list(controls.edits), source.event, source.event_count)
            source.set_edits(list(controls.edits))
        resolved = resolve_overrides(overrides, source)
        program = source.manifest.get("program") or {}
        if program.get("pytest") and not argv:
            raise UsageError(f"{source_dir} was recorded by the pytest plugin for {program['pytest']}: replay it with "
                             f"`pytest {program['pytest']} --wop-record=none`")
        command = argv or list(program.get("argv") or [])
        if not command:
            raise UsageError(f"{source_dir} does not record the command it ran: give it after --")
        require_trusted(source_dir, source.manifest, argv, controls.trust, branch)
        if source.unrecorded_connections and not branch:
            from openwop_cli.runtime.connections import describe

            recorded = [data.get("value") or {} for _seq, data in source.unrecorded_connections.values()]
            warn(f"wop: in the capture, {describe(recorded)}")
        hooks = ReplayHooks(source, source_dir, policy, start, branch, resolved, allow_tools, controls)
        proxy = proxy or (not branch and recorded_through_proxy(source))
        label = "fork" if branch else "replay"
        capture = run_captured(command, out=out, name=name or f"{source.manifest.get('name') or 'run'}-{label}",
                               redact=replay_profile(source.manifest),
                               workflow=None, warn=warn, store_root=store_root, hooks=hooks,
                               output_to_stderr=output_to_stderr, proxy=proxy,
                               ambient=watches_ambient(source.manifest), quiet=controls.quiet, launch=launch,
                               record_output=not controls.debugging)  # pdb talks to the terminal itself
        outcome = hooks.outcome(capture)
        if controls.edits:
            outcome.diff = diff_against_source(source_dir, capture.path)
        return outcome
    except BaseException:
        if launch is not None:
            launch.cancel()  # where run_captured got that far it ended the launch already: no harm done
        raise
    finally:
        if source is not None:
            source.close()


def diff_against_source(source_dir: Path, fork_dir: Path, max_diffs: int = 50) -> dict[str, Any]:
    """The RFC 0054 diff of a fork against the capture it came from (the first max_diffs event diffs)."""
    from openwop_cli.diff import diff_runs
    from openwop_cli.format.reader import CaptureReader
    from openwop_cli.runtime.program import pinned_channels

    original, fork = CaptureReader(source_dir, resolve_blobs=True), CaptureReader(fork_dir, resolve_blobs=True)
    return diff_runs(original, fork, a=str(original.manifest.get("runId")), b=str(fork.manifest.get("runId")),
                     status_a=original.manifest.get("status"), status_b=fork.manifest.get("status"),
                     max_diffs=max_diffs, ignore_run_metadata=True,
                     declarations_a=pinned_channels(original.manifest, original.blobs),
                     declarations_b=pinned_channels(fork.manifest, fork.blobs))


def _checked_from_seq(from_seq: int | None, branch: bool, event_count: int, edited: bool = False) -> int:
    if edited:
        if from_seq is not None:
            raise UsageError("--edit and --from-seq do not go together: an edited fork serves every call that still "
                             "matches the capture and runs live from the first that does not")
        return event_count
    if from_seq is None:
        if branch:
            raise UsageError(f"fork needs --from-seq N (the seq to branch at, 0..{event_count - 1}) or --edit")
        return 0
    if not 0 <= from_seq < max(event_count, 1):
        raise UsageError(f"--from-seq {from_seq} is out of range: this capture has seq 0..{event_count - 1}")
    return from_seq


def stop_grace_seconds() -> float:
    """How long a program a strict replay stopped may take to end before wop ends it: WOP_STOP_GRACE seconds
    (a CI job that knows its programs end quickly, or a test, may shorten it), else STOP_GRACE_SECONDS."""
    text = os.environ.get(ENV_STOP_GRACE)
    if text is None:
        return STOP_GRACE_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 86400:
        raise UsageError(f"{ENV_STOP_GRACE}={text!r}: give the seconds (more than 0, e.g. 10) a program a strict "
                         "replay stopped may take to end before wop ends it")
    return seconds


class ReplayAccount:
    """What a replay adds up to, in whichever process writes the replay capture: the recorded seqs
    served, the divergences, and at the end event_missing, a changed exit code and the score."""

    def __init__(self, source: ReplaySource, source_dir: Path, policy: str, from_seq: int, branch: bool) -> None:
        self.mode = "fork" if branch else "replay"
        self.source = source
        self.source_dir = source_dir
        self.policy = policy
        self.from_seq = from_seq
        self.branch = branch
        self.divergences: list[Divergence] = []
        self.edits: list[Any] = []
        self.offline = False
        self.notes: list[dict[str, Any]] = []  # what the report says beside the divergences (replay_note events)
        self.early_exit: dict[str, Any] | None = None
        self.score: dict[str, Any] = {}
        self._served: set[int] = set()
        self._not_called: set[int] = set()  # imported tool calls (ifCalled) the run did not make: out of the score
        self._last_seq_by_pid: dict[Any, int] = {}
        self._run_id = ""
        self._live: dict[tuple, dict[str, Any]] = {}
        self._program: Any = None
        self._ender: threading.Timer | None = None
        self._ended_program = False
        self.stop_grace = stop_grace_seconds()
        self.compare_output = True
        self.exact_output = False
        self.compared: dict[str, Any] = {}

    def program_started(self, child: Any) -> None:
        self._program = child

    def stops_program(self) -> bool:
        """True once a divergence has stopped the program (a strict replay, or an offline fork)."""
        return self.policy == "strict" and (not self.branch or self.offline) and bool(self.divergences)

    def _end_program_if_it_stays(self) -> None:
        """After a strict stop, give the program stop_grace seconds to end: one of its processes may wait for ever
        for another the replay stopped (a result on a queue), which in CI would hang the job."""
        if self._ender is None and self._program is not None and self.stops_program():
            self._ender = threading.Timer(self.stop_grace, self._end_program)
            self._ender.daemon = True
            self._ender.start()

    def _end_program(self) -> None:
        """End the program's processes: its main one and every one it started (left running, they would outlive the
        replay)."""
        if self._program.poll() is not None:
            return
        self._ended_program = True
        started = _descendants(self._program.pid)
        self._program.terminate()
        _signal(started, signal.SIGTERM)
        try:
            self._program.wait(3)
        except subprocess.TimeoutExpired:
            self._program.kill()
        _signal(_still_running(started), signal.SIGKILL)

    def started(self, sink: "CaptureSink") -> None:
        self._run_id = sink.manifest.get("runId", "")

    def manifest_seed(self) -> dict[str, Any]:
        manifest = self.source.manifest
        return {"source": {"captureId": manifest.get("captureId"), "runId": manifest.get("runId"),
                           "fromSeq": self.from_seq, "mode": "branch" if self.branch else "replay",
                           "policy": None if self.branch else self.policy, "path": str(self.source_dir),
                           **({"edits": [edit.to_json() for edit in self.edits], "offline": self.offline}
                              if self.edits else {})}}

    def wrap_append(self, append: Callable[..., int]) -> Callable[..., int]:
        def watched(event_type: str, data: dict[str, Any], *, ts: int | None = None,
                    origin: dict[str, Any] | None = None, source_seq: int | None = None) -> int:
            pid = (origin or {}).get("pid")
            if event_type == REPLAY_DIVERGED:
                self.divergences.append(Divergence.from_json(data))
                if pid in self._last_seq_by_pid:
                    data["replayEventId"] = f"{self._run_id}:{self._last_seq_by_pid[pid]}"
                self._end_program_if_it_stays()
            elif event_type == REPLAY_NOTE:
                self.notes.append(data)
            elif source_seq is not None and event_type in _REQUEST_TYPES:
                self._served.add(source_seq)
            elif event_type == NONDETERMINISTIC and data.get("live") is True:
                self._note_live(data, origin or {})
            elif data.get("errorRebuilt") is False:
                self.notes.append({"code": EXCEPTION_NOT_REBUILT, "detail": data.get("errorNote"),
                                   "eventSeq": source_seq, "recorded": None, "observed": None})
            seq = append(event_type, data, ts=ts, origin=origin, source_seq=source_seq)
            self._last_seq_by_pid[pid] = seq
            return seq

        return watched

    def wrap_append_raw(self, append_raw: Callable[..., int], append: Callable[..., int]) -> Callable[..., int]:
        """Most events a replay makes need only their type, sourceSeq and pid watched: they stay unparsed. Those
        whose data `watched` reads (divergences, notes, live values, unrebuilt errors) are parsed and go there."""
        def watched_raw(event_type: str, data_json: bytes, *, ts: int, origin_json: bytes | None = None,
                        source_seq: int | None = None) -> int:
            origin = orjson.loads(origin_json) if origin_json else {}
            if event_type in (REPLAY_DIVERGED, REPLAY_NOTE) or any(mark in data_json for mark in _WATCHED_MARKS):
                return append(event_type, orjson.loads(data_json), ts=ts, origin=origin or None, source_seq=source_seq)
            if source_seq is not None and event_type in _REQUEST_TYPES:
                self._served.add(source_seq)
            seq = append_raw(event_type, data_json, ts=ts, origin_json=origin_json, source_seq=source_seq)
            self._last_seq_by_pid[origin.get("pid")] = seq
            return seq

        return watched_raw

    def before_finish(self, sink: "CaptureSink", exit_code: int | None,
                      output: dict[str, Any] | None = None) -> dict[str, Any]:
        stopped = self.stops_program()
        if self._ender is not None:
            self._ender.cancel()
        if self._ended_program:
            self.notes.append({"code": PROGRAM_ENDED, "detail": f"the program was still running {self.stop_grace:g} s "
                               "after the replay stopped it (waiting for a process the replay stopped?): wop ended it",
                               "eventSeq": None, "recorded": None, "observed": None})
        late: list[Divergence] = []
        if not stopped:
            missing = self._missing()
            late.extend(missing)
            recorded_exit = self.source.exit_code
            if missing and exit_code is not None and exit_code != (0 if self.branch else recorded_exit):
                self.early_exit = {"exitCode": exit_code, "recordedExitCode": recorded_exit,
                                   "missingCalls": len(missing), "firstMissingSeq": missing[0].event_seq}
            if not self.branch and None not in (recorded_exit, exit_code) and exit_code != recorded_exit:
                end_seq = self.source.event_count - 1
                late.append(Divergence(EVENT_PAYLOAD_MISMATCH, end_seq, "$.exitCode", recorded_exit, exit_code,
                                       f"the program exited with {exit_code}; the recorded run exited with {recorded_exit}",
                                       "run_end", self.source.event(end_seq),
                                       observed_event("run_end", {"exitCode": exit_code})))
        streams: list[str] = []
        if not (stopped or self.branch or self.early_exit) and output is not None and self.compare_output:
            found, streams = self._output_divergence(output, sink)
            late.extend([found] if found is not None else [])
        for divergence in late:
            data = divergence.to_json()
            data.update(replayEventId=None, originalEventId=f"{self.source.manifest.get('runId')}:{divergence.event_seq}")
            sink.append(REPLAY_DIVERGED, data)
            self.divergences.append(divergence)
        self.score = self._score(sink.manifest)
        self.compared = self.evidence(streams)
        return {"score": self.score, "compared": self.compared}

    def _output_divergence(self, output: dict[str, Any], sink: "CaptureSink") -> tuple[Divergence | None, list[str]]:
        """The first line today's program printed otherwise than the recorded one (replay.output), and the streams
        compared."""
        from openwop_cli.format.output import STREAMS, recorded_text
        from openwop_cli.replay.output import compared_streams, output_divergence

        recorded = {stream: recorded_text(self.source.manifest, self.source.blobs, stream, outside_calls=True)
                    for stream in STREAMS}
        today = {stream: recorded_text({"output": output}, sink.blobs, stream, outside_calls=True) for stream in STREAMS}
        pids = tuple(str(pid) for pid in (*self._recorded_pids(), *self.today_pids()) if isinstance(pid, int))
        found = output_divergence(recorded, today, normalize=not self.exact_output, pids=pids,
                                  point=max(self.source.event_count - 1, 0))
        return found, compared_streams(recorded, today)

    def _recorded_pids(self) -> list[Any]:
        processes = (self.source.manifest.get("program") or {}).get("processes") or []
        return [process.get("pid") for process in processes if isinstance(process, dict)]

    def today_pids(self) -> list[Any]:
        """The process ids of today's run (those that said hello)."""
        return []

    def evidence(self, streams: list[str]) -> dict[str, Any]:
        """What the verdict compared: the recorded calls, values and state writes served and checked (each call's
        whole request), the output streams, and how many values today's run read live."""
        from openwop_cli.replay.keys import KIND_LLM, KIND_STATE, KIND_TOOL

        source = self.source
        counts = {KIND_LLM: 0, KIND_TOOL: 0, KIND_STATE: 0}
        values, unit_seqs = 0, set()
        for unit in range(source.unit_count()):
            seq = source.request_seqs[unit]
            unit_seqs.add(seq)
            if seq in self._served and self._checked(seq):
                kind = source.kinds[unit]
                if kind in counts:
                    counts[kind] += 1
                else:
                    values += 1
        ambient = sum(1 for seq in self._served if seq not in unit_seqs and self._checked(seq))
        return {"llmCalls": counts[KIND_LLM], "toolCalls": counts[KIND_TOOL], "values": values + ambient,
                "stateWrites": counts[KIND_STATE], "output": streams,
                "liveValues": sum(note["count"] for note in self._live.values())}

    def outcome(self, capture: CaptureOutcome) -> ReplayOutcome:
        """The finished replay (or fork) as the report shows it."""
        changed = changed_files(self.source.manifest, Path.cwd())
        return ReplayOutcome(capture, self.source_dir, self.source.manifest, self.policy, self.from_seq, self.branch,
                             self.divergences, self.score, changed, self.notes, self.early_exit, self._edit_report(),
                             self.offline, source_change=self._source_change() if changed else None,
                             live_values=self.live_values(), compared=self.compared)

    def _source_change(self) -> dict[str, Any] | None:
        """The code change beside the first divergence made in a pinned file that changed since the capture."""
        from openwop_cli.host.source_change import source_change

        for divergence in self.divergences:
            found = source_change(self.source.manifest, self.source_dir, divergence.site, Path.cwd())
            if found is not None:
                return {"eventSeq": divergence.event_seq, **found}
        return None

    def _edit_report(self) -> list[dict[str, Any]]:
        """Each --edit as the report shows it: where, and the value before and after."""
        report = []
        for edit in self.edits:
            before: Any = self.source.event(edit.seq, edited=False)["data"]
            for part in edit.parts:
                before = before[part]
            report.append({"seq": edit.seq, "path": edit.path, "recorded": before, "edited": edit.value})
        return report

    def live_values(self) -> list[dict[str, Any]]:
        """The ambient reads this replay served live (no recorded value left at their call site), per site."""
        return list(self._live.values())

    # ---- accounting -------------------------------------------------------------------------

    def _note_live(self, data: dict[str, Any], origin: dict[str, Any]) -> None:
        site = origin.get("site") or {}
        where = (data.get("source"), data.get("key"), site.get("file"), site.get("line"), site.get("function"))
        note = self._live.setdefault(where, {"source": data.get("source"), "key": data.get("key"), "site": site,
                                             "count": 0})
        note["count"] += 1
        if data.get("redacted") is True:
            note["redacted"] = True  # the capture keeps no value there (the strict profile's entropy)

    def _checked(self, seq: int) -> bool:
        return is_checked(seq, self.from_seq, self.branch) and seq not in self.source.telemetry_seqs

    def _missing(self) -> list[Divergence]:
        """The recorded calls this run never made; a tool call imported from a trace (`ifCalled`: the program may run
        it as plain code, not through a wop boundary) is a note instead."""
        source = self.source
        found = []
        not_called: dict[str, list[int]] = {}
        for unit in range(source.unit_count()):
            seq = source.request_seqs[unit]
            if seq not in self._served and self._checked(seq):
                event = source.event(seq)
                if event["data"].get("ifCalled") is True:
                    not_called.setdefault(str(event["data"].get("name")), []).append(seq)
                    self._not_called.add(seq)
                    continue
                found.append(Divergence(EVENT_MISSING, seq, None, None, None,
                                        f"the capture has a {event['type']} at seq {seq} that this run never made",
                                        event["type"], event))
        for name, seqs in not_called.items():
            self.notes.append({"code": TRACED_TOOL_NOT_CALLED, "eventSeq": seqs[0], "recorded": None, "observed": None,
                               "detail": f"the trace has {len(seqs)} call(s) of tool {name!r} this run did not make "
                                         "through a wop boundary (wop.tool): not served, not compared"})
        return found

    def _score(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """The determinism score: recorded units checked, plus everything today's run did beyond them (an
        unexpected call, a value the capture ran out of, a changed exit code); matched = checked units served
        without a divergence. A replay that diverged never scores 1."""
        source = self.source
        checked = {source.request_seqs[unit] for unit in range(source.unit_count())
                   if self._checked(source.request_seqs[unit])} - self._not_called
        diverged = {d.event_seq for d in self.divergences if d.code not in EXTRA_CODES and d.event_seq in checked}
        beyond = sum(1 for d in self.divergences if d.code in EXTRA_CODES or d.event_seq not in checked)
        matched = sum(1 for seq in checked if seq in self._served and seq not in diverged)
        compared = len(checked) + beyond
        points = [d.divergence_point for d in self.divergences if d.divergence_point is not None]
        return {
            "sourceRunId": source.manifest.get("runId"),
            "replayRunId": manifest.get("runId"),
            "fromSeq": self.from_seq,
            "matchedEvents": matched,
            "comparedEvents": compared,
            "firstDivergenceSeq": min(points) if points else None,
            "score": round(matched / compared, 6) if compared else 1.0,
        }


class ReplayHooks(ReplayAccount, RunHooks):
    """The parent's part of `wop replay`/`wop fork`: the child's environment, its processes' questions, the proxy."""

    def __init__(self, source: ReplaySource, source_dir: Path, policy: str, from_seq: int, branch: bool,
                 overrides: dict[str, Any], allow_tools: list[str], controls: ReplayControls) -> None:
        super().__init__(source, source_dir, policy, from_seq, branch)
        self.overrides = overrides
        self.allow_tools = allow_tools
        self.controls = controls
        self.edits = list(controls.edits)
        self.offline = controls.offline
        self.keep_stderr_tail = not controls.debugging  # pdb needs the program's stderr on the terminal
        self._assigned: set[Any] = set()  # recorded pids taken
        self._today: dict[Any, dict[str, Any]] = {}  # today's processes that asked: pid → who they are
        self._paired: dict[Any, Any] = {}  # today's pid → the recorded pid it stands for
        self.compare_output = controls.compare_output
        self.exact_output = controls.exact_output

    def today_pids(self) -> list[Any]:
        return list(self._today)

    def environment(self) -> dict[str, str]:
        return replay_environment(self.source_dir, self.from_seq, self.branch, self.overrides, self.allow_tools,
                                  self.controls)

    def settled_environment(self) -> dict[str, str]:
        return settled_environment(self.policy)

    def prepare_proxy(self, session: Any) -> None:
        """Proxied calls are served in this process, from the units the capture's proxy recorded."""
        from openwop_cli.replay.engine import ReplayEngine
        from openwop_cli.runtime.boundaries import Replayer

        source = ReplaySource.for_serving(self.source_dir, only_pid=PROXY_ORIGIN["pid"])
        engine = ReplayEngine(source, policy=self.policy, from_seq=self.from_seq, branch=self.branch,
                              overrides=self.overrides)
        session.replayer = Replayer(session, engine, frozenset(self.allow_tools))

    def answer(self, pid: int | None, message: dict[str, Any]) -> dict[str, Any] | None:
        hello = message.get("replayHello")
        if isinstance(hello, dict):  # the go for a process started early; it asks for its pairing on first use
            self._today[hello.get("pid")] = hello
            return {}
        pair = message.get("replayPair")
        if isinstance(pair, dict):
            recorded = self._recorded_pid(pair)
            return {"recordedPid": recorded, "recordedStopped": recorded in self._stopped_pids()}
        return None

    def _stopped_pids(self) -> set[Any]:
        """The recorded processes that never said they ended (launcher's `stopped`: killed, as a terminated pool's
        workers are)."""
        processes = (self.source.manifest.get("program") or {}).get("processes") or []
        return {process.get("pid") for process in processes if isinstance(process, dict) and process.get("stopped")}

    def _recorded_pid(self, today: dict[str, Any], take: bool = True) -> Any:
        """The recorded process a process of today's run stands for: a Process (or forked child) the one with its
        multiprocessing identity, or none (a pool worker that ran no task when recorded: its tasks are served to any
        worker, and any other's place it took would be missing when that one asks); any other process, among the
        children of the one its parent stands for (the program's own for the program), the one with its argv, else
        the first not taken, never a Process's; each recorded process is taken once. take=False: only say which, for
        a parent known by its hello alone (its identity may not be known yet: it takes its place when it asks)."""
        pid = today.get("pid")
        if pid in self._paired:
            return self._paired[pid]
        self._today[pid] = today
        processes = [process for process in (self.source.manifest.get("program") or {}).get("processes") or []
                     if isinstance(process, dict)]
        if not processes:
            return None
        identity, argv = today.get("mpIdentity"), today.get("argv")
        if identity:  # unique in a run, whichever process (a forkserver) started it
            found = self._take(pid, [process for process in processes if process.get("mpIdentity") == identity], take)
            return -1 if found is None else found
        parent = today.get("ppid")
        if parent == os.getpid():
            recorded_pids = {process.get("pid") for process in processes}
            siblings = [process for process in processes if process.get("ppid") not in recorded_pids]
        elif parent in self._today and parent != pid:
            standing_for = self._recorded_pid(self._today[parent], take=False)
            siblings = [process for process in processes if process.get("ppid") == standing_for]
        else:
            siblings = []
        # a process that is no Process (a forkserver) never takes a Process's place
        alike = [process for process in (*siblings, *processes) if not process.get("mpIdentity")]
        found = self._take(pid, [process for process in alike if process.get("argv") == argv], take)
        if found is None:
            found = self._take(pid, alike, take)
        return -1 if found is None else found

    def _take(self, pid: Any, candidates: list[dict[str, Any]], take: bool) -> Any:
        """The first candidate's recorded pid not taken yet (now taken, by pid, when take), or None."""
        for process in candidates:
            if process.get("pid") not in self._assigned:
                if take:
                    self._assigned.add(process.get("pid"))
                    self._paired[pid] = process.get("pid")
                return process.get("pid")
        return None



def recorded_through_proxy(source: ReplaySource) -> bool:
    """True when the capture holds calls the --proxy recorded (a replay then serves them through the proxy too,
    so a program in another language never reaches the real API)."""
    return any(origin[0] == PROXY_ORIGIN["pid"] and origin[1] == PROXY_ORIGIN["thread"] for origin in source.origin_ids)


def changed_files(manifest: dict[str, Any], cwd: Path) -> list[dict[str, Any]]:
    """Pinned program files whose sha256 today (of the text a pin keeps: program.pinned_text) differs from the
    capture's (or that are gone).

    The paths come from the capture: only a regular file of bounded size is read (never a FIFO or a
    device), and a relative path never climbs out of the working directory."""
    import hashlib

    from openwop_cli.errors import WopError
    from openwop_cli.format.files import MAX_INPUT_BYTES, read_regular
    from openwop_cli.format.redact import Redactor
    from openwop_cli.runtime.program import pinned_sha256, pinned_text

    scrub = Redactor.of_capture(manifest).scrub_text
    program = manifest.get("program") or {}
    pins = {pin["path"]: pin for pin in [*(program.get("script") or []), *(program.get("modules") or [])]
            if isinstance(pin, dict) and pin.get("path")}
    workflow = program.get("workflow")
    if isinstance(workflow, dict) and workflow.get("path"):
        pins[workflow["path"]] = workflow
    changed = []
    for path, pin in sorted(pins.items()):
        if not os.path.isabs(path) and ".." in Path(path).parts:
            continue
        where = Path(path) if os.path.isabs(path) else cwd / path
        try:
            content = read_regular(where, MAX_INPUT_BYTES, UsageError, follow=True)
            today = pinned_sha256(pinned_text(content, scrub))
        except (OSError, WopError):
            content, today = b"", None
        if pin.get("sha256") not in (today, hashlib.sha256(content).hexdigest()):  # or a pin of the file (before 0.2)
            changed.append({"path": path, "recorded": pin.get("sha256"), "today": today})
    return changed


def _descendants(pid: int) -> dict[int, bytes]:
    """The processes pid started and theirs, each with its start time (Linux's /proc; elsewhere none are found)."""
    children: dict[int, list[tuple[int, bytes]]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                children.setdefault(int(stat[1]), []).append((int(entry), stat[19]))
    found: dict[int, bytes] = {}
    parents = [pid]
    while parents:
        for child, started in children.get(parents.pop(), ()):
            found[child] = started
            parents.append(child)
    return found


def _still_running(processes: dict[int, bytes]) -> dict[int, bytes]:
    """Those of processes still there (the same process: a pid freed meanwhile may be another's)."""
    still = {}
    for pid, started in processes.items():
        stat = _stat(pid)
        if stat is not None and stat[19] == started:
            still[pid] = started
    return still


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, …, start time at 19), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def _signal(processes: dict[int, bytes], signum: int) -> None:
    for pid in processes:
        try:
            os.kill(pid, signum)
        except OSError:
            pass
