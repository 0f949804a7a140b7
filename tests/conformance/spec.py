"""Which spec requirement each conformance test proves; docs/conformance.md is generated from this and the tests.

A conformance test carries `@requirement(spec file, section heading, the requirement in the spec's words)`
and is named `test_<spec>_<section>_…` (SPECS gives <spec>, SECTION_SLUGS shortens long headings).
HOST_ONLY lists what only an OpenWOP host can have (HTTP endpoints, auth, tenancy, retention, triggers):
it is reported as skipped with the reason. CHOICES records how wop reads the spec where it is ambiguous.
"""

import re

SPECS = {
    "capture-replay-design.md": "capture_replay",
    "openwop-replay-and-fork.md": "replay_fork",
    "run-diff-rfc0054.md": "run_diff",
    "openwop-channels.md": "channels",
    "pin-at-run-start.md": "pin",
}

SECTION_SLUGS = {
    "Given/When/Then acceptance tests": "acceptance",
    "Redaction and data retention policy": "redaction",
    "Failure modes and fallback behavior": "failure_modes",
    "Replay determinism under nondeterministic models": "nondeterministic_models",
    "LLM cache-key recipe": "cache_key",
    "§B run-diff-response.schema.json": "schema",
    "§C Determinism": "determinism",
    "§A Endpoint": "endpoint",
    "Resolution (2026-05-26, at Active promotion)": "resolution",
    "Distributed reducers and cross-engine writes": "cross_engine",
    "Migration from variable-prefix conventions": "migration",
    "Channel snapshot in values stream mode": "snapshot",
    "What about workflow ROW deletion?": "deletion",
}


def requirement(spec: str, section: str, text: str):
    """Mark a test as the proof of one requirement of a spec (its file name, section heading, and wording)."""
    assert spec in SPECS, spec

    def mark(test):
        test.requirement = (spec, section, text)
        return test

    return mark


def slug(section: str) -> str:
    """The part of a test's name that names its section."""
    if section in SECTION_SLUGS:
        return SECTION_SLUGS[section]
    return re.sub(r"[^a-z0-9]+", "_", section.lower()).strip("_")


HOST_ONLY = [
    ("openwop-replay-and-fork.md", "Endpoint",
     "POST /v1/runs/{runId}:fork with an Idempotency-Key, and its 201/400/404/409/422 responses",
     "an HTTP endpoint of an OpenWOP host; wop's analog (`wop fork`, exit 2 for a bad --from-seq) is tested"),
    ("openwop-replay-and-fork.md", "Determinism guarantees",
     "every ctx.interrupt(payload) short-circuits to the persisted interrupt.resolved value",
     "interrupts are an engine primitive; wop records no interrupts"),
    ("openwop-replay-and-fork.md", "Determinism guarantees",
     "recorded-fact events (memory.written) are re-emitted from the event log, never regenerated",
     "memory events belong to the host's engine"),
    ("openwop-replay-and-fork.md", "Failure surfaces",
     "a divergence is surfaced in debug stream mode and as the OTel span attribute openwop.replay.diverged",
     "stream modes and spans are a host's; wop writes replay_diverged events and the report"),
    ("openwop-replay-and-fork.md", "LLM cache-key recipe",
     "§C: the key composes with the Layer-2 invocationId store and is never a tenant boundary",
     "the idempotency store and tenancy are a host's"),
    ("openwop-replay-and-fork.md", "LLM cache-key recipe",
     "§E: hosts with a legacy key switch to the recipe or dual-write for 90 days",
     "a host migration policy"),
    ("openwop-replay-and-fork.md", "Replay determinism under nondeterministic models",
     "§A: hosts advertise capabilities.multiAgent.executionModel.replayDeterminism.llmCacheKeyRecipe",
     "capability advertisement is a host endpoint"),
    ("openwop-replay-and-fork.md", "Retention and garbage collection",
     "a host documents retention and answers 410/422 when the events needed for fromSeq have expired",
     "wop keeps a capture until `wop rm`/`wop gc` removes it; a missing capture is exit 2"),
    ("openwop-replay-and-fork.md", "Privacy and replay",
     "deletion requests fail replay with a canonical error; tenant and scope checks; audit events",
     "tenancy, deletion requests and audit logs are a host's"),
    ("openwop-replay-and-fork.md", "Cross-region replay",
     "forks served by another region are byte-equivalent up to fromSeq",
     "regions are a host deployment"),
    ("openwop-replay-and-fork.md", "Annotations and fork",
     "a fork inherits zero annotations (RFC 0056)",
     "annotations are a host side-resource"),
    ("run-diff-rfc0054.md", "§A Endpoint",
     "GET /v1/runs/{runId}:diff?against={otherRunId} with runs:read on both runs (run_forbidden, 400, 404)",
     "an HTTP endpoint with auth; wop's analog (`wop diff A B`, exit 2 for a missing or unknown run) is tested"),
    ("openwop-channels.md", "Channel access control",
     "ctx.channels.get is checked against `readers` (channel_access_denied on read)",
     "reads by node happen inside a host's engine; wop checks writers, which its captures record"),
    ("openwop-channels.md", "Distributed reducers and cross-engine writes",
     "the owner engine assigns inbound writes a new per-run sequence; ties break on (sequence, eventId)",
     "sequence assignment is the owner engine's; wop folds a log in the order it is given"),
    ("openwop-channels.md", "Reactive parent computation: channel-write trigger",
     "channel-write triggers fire parent nodes, with onlyFrom, debounceMs and loop protection",
     "triggers dispatch nodes inside a host's engine"),
    ("openwop-channels.md", "Wire surface",
     "ctx.channels.subscribe notifies executors of changes",
     "subscriptions are an engine API; wop records and folds writes"),
    ("openwop-channels.md", "Migration from variable-prefix conventions",
     "a server SHOULD ship a codemod tool that moves prefix writes to declared channels",
     "a host tool"),
    ("pin-at-run-start.md", "What about migration of the workflow JSON shape?",
     "in-flight runs on v1 keep running on v1's walker; new runs use v2",
     "the walker is the host runtime; wop pins the bytes a run started with"),
]

CHOICES = [
    ("Divergence shape (capture-replay-design.md)",
     "`expected` is the recorded CaptureEvent (the whole envelope), `observed` today's `{type, data}`; the values "
     "at `jsonPath` are beside them as `expectedValue`/`observedValue`, plus `eventType` and `divergencePoint`. "
     "Optional fields the spec marks `?` are left out when there is nothing to say."),
    ("Where an unexpected call diverges",
     "An unexpected call or an underflow concerns no recorded event, so it has no `eventSeq`; its "
     "`divergencePoint` is the first recorded call today's run had not reached yet (or the run's end), and "
     "`firstDivergenceSeq` is the smallest divergencePoint."),
    ("Determinism score",
     "comparedEvents = recorded calls checked + what today's run did beyond them (unexpected calls, values the "
     "capture ran out of, a changed exit code); matchedEvents = checked calls served without a divergence. A "
     "replay that diverged never scores 1."),
    ("What an unexpected call gets in a lenient replay",
     "The closest recorded call is served (the caller thread's next call to the same tool or channel, else the "
     "next unserved one; the next unserved LLM call) and reported as event_payload_mismatch; a tool the capture "
     "has no more calls of runs live (the program's own function; the network stays blocked); an LLM call with "
     "nothing left raises ReplayDivergenceError (through an HTTP client, an HTTP 400 the SDK raises); a value is "
     "today's; a state write is reduced as usual. Each is reported."),
    ("Concurrent state writes in a replay",
     "A write is matched to its recorded write by channel and value, so threads may interleave differently; "
     "its effect is compared (today's declaration applied to the recorded state before it vs the recorded state "
     "after it) only when the channel's declaration changed."),
    ("getVersion outside the recorded range",
     "An event_payload_mismatch at `$.value`; strict stops, lenient continues with the nearest version today's "
     "code supports."),
    ("Rebuilding recorded exceptions",
     "The program's own class (sys.modules, `__main__` included) with the recorded args; a class with its own "
     "__init__ is made without calling it, and the recorded attributes are set. When the class is not loaded, an "
     "argument was not JSON, or the rebuilt str/repr differ from the recorded ones, the replay report lists a note."),
    ("Excluded fields in wop diff (RFC 0054 Resolution 3)",
     "Exactly eventId, runId, causationId, correlationId, the wall-clock ts and transport metadata (traceparent, "
     "tracestate, delivery `headers`). Run metadata — wop's recorder bookkeeping (callId, captureId, writtenAt, "
     "durationMs) and run_start's env names, platform, hostname, cwd and python — is compared unless "
     "--ignore-run-metadata; that is the default when both runs are wop captures (and in the fork report), never for "
     "OpenWOP run logs."),
    ("Numbers in wop diff",
     "Payloads compare as their JCS forms do (RFC 0054 Resolution 3): 1, 1.0 and 1e0 are one number, -0.0 is 0, true "
     "is not 1. Two integers beyond 2^53 that JCS would write as one double stay two numbers: wop keeps integers "
     "exact rather than call two different ids equal."),
    ("truncated and --max-diffs",
     "`truncated` means a run was in flight (an OpenWOP log with no run.completed/run.failed/run.cancelled, or "
     "an incomplete capture). A list cut by --max-diffs is counted in `omittedEventDiffs` under --json --detail."),
    ("Run status in stateDiff",
     "A capture's manifest status (ok, error, incomplete); a run log's terminal event (completed, failed, "
     "cancelled; null while in flight)."),
    ("Legacy-prefix channel names",
     "A legacy variable is recorded with its own name as the channel (`_approvalVotes:gate`), the reducer its "
     "prefix maps to and the node after the prefix; it still folds into `variables`."),
    ("A declared channel nobody wrote",
     "It is in every snapshot (`wop state`, the state diff, the report): its declared default, else null — "
     "ctx.channels.get's undefined, which JSON cannot hold."),
    ("TTL entry shape",
     "A TTL channel's write is recorded with `value` = `{value, _ts}`, `_ts` equal to the event's ts; a write "
     "without the wrap (an older capture, a host log) is stamped with its event's ts."),
    ("Pinned workflow",
     "`wop.workflow()` returns the document `wop capture --workflow F` read at the start (the parent serves its "
     "bytes); a replay serves the capture's stored copy (redacted like everything else it stores)."),
]
