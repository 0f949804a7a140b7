"""The lines of the replay/fork report that are text and styles only (its header and verdict), free of rich.

A replay that reproduced its capture exactly is reported by these lines alone; when they go to a stream
that is not coloured, they are printed as plain text (report.plain) without importing rich, which would
cost more than replaying a small capture. report.verdict turns the same segments into rich Text.
"""

from typing import Any, TextIO

from openwop_cli.replay.divergence import EVENT_MISSING, OUTPUT_MISMATCH
from openwop_cli.report.escape import clean
from openwop_cli.report.plain import Segment, print_plain
from openwop_cli.report.summary import plural


def print_clean_replay(stream: TextIO, outcome: Any) -> bool:
    """Print the report of a replay with nothing to show but its header and verdict as plain text; False, printing
    nothing, when it has more (divergences, notes, changed files, live values, edits) or stream is coloured."""
    if (outcome.branch or outcome.divergences or outcome.early_exit is not None or outcome.edits or outcome.notes
            or outcome.changed_files or outcome.live_values):
        return False
    return print_plain(stream, [*header_lines(outcome), verdict_line(outcome)])


def header_lines(outcome: Any) -> list[list[Segment]]:
    """What was replayed, its score, and the new capture."""
    score = outcome.score
    source = outcome.source_manifest
    label = "fork" if outcome.branch else f"replay ({outcome.policy})"
    first: list[Segment] = [(label, "bold"), (" of ", ""), (clean(source.get("captureId")), "bold"),
                            (clean(f" {source.get('name') or ''}".rstrip()), "")]
    if outcome.edits:
        first.append((f"  with {plural(len(outcome.edits), 'edit')}" + (", offline" if outcome.offline else ""), ""))
    else:
        first += [("  score ", ""), (f"{score.get('score', 1.0):.2f}", "ok" if not outcome.diverged else "warning"),
                  (f" ({score.get('matchedEvents')}/{score.get('comparedEvents')} matched)", "")]
        if outcome.from_seq:
            first.append((f"  from seq {outcome.from_seq}", ""))
    second: list[Segment] = [("new capture ", "muted"), (clean(outcome.capture.capture_id), ""), ("  ", ""),
                             (clean(outcome.capture.path), "path")]
    return [first, second]


def stopping_divergence(outcome: Any) -> Any:
    """The divergence a strict replay (or an --offline edited fork) stopped the program at (None otherwise)."""
    if (outcome.branch and not outcome.offline) or outcome.policy != "strict" or not outcome.divergences:
        return None
    first = outcome.divergences[0]
    return None if first.code == OUTPUT_MISMATCH else first  # found once the program had ended


def verdict_line(outcome: Any) -> list[Segment]:
    """The report's last line: whether the run replayed exactly, and if not, where and why it stopped."""
    exit_code = outcome.capture.exit_code
    if outcome.branch:
        return _fork_verdict(outcome, exit_code)
    if not outcome.diverged:
        compared = evidence_text(outcome.compared)
        return [("no divergence: the run replays exactly" + (f" ({compared})" if compared else ""), "ok")]
    count = len(outcome.divergences)
    first = outcome.score.get("firstDivergenceSeq")
    where = f", first at seq {first}" if first is not None else ""
    text = f"{plural(count, 'divergence')}{where}"
    if outcome.early_exit is not None:
        return [(f"{text}: the program ended before making the recorded calls (see the top of this report)", "error")]
    stop = stopping_divergence(outcome)
    if stop is not None:
        at = f" at seq {stop.event_seq}" if stop.event_seq is not None else ""
        text += f"; the strict replay stopped the program{at} ({stop.code}); --lenient lets it run to the end"
    return [(text, "error")]


def evidence_text(compared: dict[str, Any]) -> str:
    """What a verdict compared, in words: `2 LLM calls, 1 tool call, 5 values, stdout and stderr compared; 0 values
    read live` (empty when the replay said nothing of it: an in-process replay)."""
    if not compared:
        return ""
    parts = [plural(compared[key], label) for key, label in (("llmCalls", "LLM call"), ("toolCalls", "tool call"),
                                                            ("values", "value"), ("stateWrites", "state write"))
             if compared.get(key)]
    streams = compared.get("output") or []
    parts.append(" and ".join(streams) if streams else "no output")
    live = compared.get("liveValues") or 0
    return f"{', '.join(parts)} compared; {plural(live, 'value')} read live"


def _fork_verdict(outcome: Any, exit_code: int) -> list[Segment]:
    """A fork passes when its history replayed and the live part exited 0; say which part failed."""
    if outcome.edits:
        return _edited_fork_verdict(outcome, exit_code)
    if outcome.early_exit is not None:
        return [(f"the program exited with code {exit_code} before reaching the branch point at seq "
                 f"{outcome.from_seq}", "error")]
    if outcome.diverged:
        count = len(outcome.divergences)
        return [(f"{plural(count, 'divergence')} before the branch point", "error")]
    if exit_code != 0:
        error = clean(outcome.capture.manifest.get("error") or f"exited with code {exit_code}")
        return [(f"the history before seq {outcome.from_seq} replayed exactly; the live run after it failed: "
                 f"{error}", "error")]
    return [("the history before the branch point replayed exactly; the live run after it exited 0", "ok")]


def _edited_fork_verdict(outcome: Any, exit_code: int) -> list[Segment]:
    changed = [divergence for divergence in outcome.divergences if divergence.code != EVENT_MISSING]
    if not changed:
        return [("the edit changed no later call: every call was served from the capture", "ok")]
    first = changed[0]
    where = f"seq {first.event_seq}" if first.event_seq is not None else "a call the recording does not have"
    if outcome.offline:
        return [(f"--offline: stopped at {where}, the first call the capture cannot answer", "error")]
    ended = "exited 0" if exit_code == 0 else f"failed: {clean(outcome.capture.manifest.get('error') or exit_code)}"
    return [(f"the edit changed the run from {where} on; the live run after it {ended}",
             "ok" if exit_code == 0 else "error")]
