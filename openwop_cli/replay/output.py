"""The program's output as part of the verdict: what today's run printed against what the capture kept.

No call comparison sees a value the program read live and printed, or tasks that ran in another order; the output
does. The first line that differs, stdout first, is an `output_mismatch` naming the stream, the line and both texts.

Text that varies from run to run without meaning is compared after a documented normalization (NORMALIZATIONS;
`--exact-output` turns it off): times and dates (a log's `%(asctime)s` reads the stdlib's clock, which stays live),
durations, object addresses and `id()`s, the run's process ids and temporary paths. Lines wop's own runtime writes to
stderr (`wop: …`) are not the program's and are left out, and so are the reports of an async generator that failed to
close when it was collected (asyncio's "an error occurred during closing of asynchronous generator", Python's
"Exception ignored in: <async_generator …>"): when and whether they print depends on garbage collection and on what
stood under the generator (the network in a capture, the capture in a replay), not on the program.
"""

import re
from collections.abc import Iterator
from typing import Any

from openwop_cli.format.output import STREAMS
from openwop_cli.replay.divergence import OUTPUT_MISMATCH, Divergence

WOP_LINE = "wop: "
COLLECTED_GENERATOR_REPORTS = ("an error occurred during closing of asynchronous generator",
                               "exception ignored in: <async_generator")
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception, another exception occurred:",
            "The above exception was the direct cause of the following exception:")
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
# (what it stands for, pattern): applied in this order to a line that differs
NORMALIZATIONS: tuple[tuple[str, str], ...] = (
    ("<time>", rf"\b(?:{_DAY},? )?(?:\d{{1,2}} {_MONTH}|{_MONTH} +\d{{1,2}})(?:,? \d{{4}})?"
               r"(?: \d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?(?: \d{4})?"),
    ("<time>", r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"),
    ("<time>", r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"),
    ("<duration>", r"\b\d+(?:\.\d+)?(?:e-?\d+)? ?(?:ns|µs|us|ms|s|sec|secs|seconds?|m|mins?|minutes?|h|hours?)\b"),
    ("<duration>", r"(?i)\b(?:elapsed|took|duration|latency|runtime)\b[^0-9\n]{0,3}\d+(?:\.\d+)?(?:e-?\d+)?"),
    ("<address>", r"\b0x[0-9a-fA-F]{6,}\b"),
    ("<number>", r"\b\d{10,}\b"),
    ("<temp>", r"(?:/tmp|/var/tmp|/private/var/folders|/var/folders)/[^\s'\",;:)\]}]+"),
)
_COMPILED: list[tuple[str, Any]] = []


def output_divergence(recorded: dict[str, str | None], today: dict[str, str | None], *, normalize: bool = True,
                      pids: tuple[str, ...] = (), point: int | None = None) -> Divergence | None:
    """The first line that differs between the recorded and today's output (each stream's text, None where it was
    not recorded), or None. pids: the process ids of both runs, compared as `<pid>`."""
    for stream in STREAMS:
        was, now = recorded.get(stream), today.get(stream)
        if was is None or now is None or was == now:
            continue
        was_lines, now_lines = _lines(was, stream), _lines(now, stream)
        found = _first_difference(was_lines, now_lines, normalize, pids)
        if found is not None:
            number, expected, observed = found
            detail = (f"{stream} line {number} differs: the recorded run printed {_shown(expected)}, this run "
                      f"{_shown(observed)}")
            if _reordered(was_lines, now_lines, normalize, pids):
                detail += (" (the same lines in another order: threads or tasks that print as they finish do this; "
                           "`wop replay --no-output` leaves the output out of the verdict)")
            return Divergence(OUTPUT_MISMATCH, None, f"$.output.{stream}[{number - 1}]", expected, observed, detail,
                              "output", point=point)
    return None


def compared_streams(recorded: dict[str, str | None], today: dict[str, str | None]) -> list[str]:
    """The streams both runs kept the text of (what the verdict can say it compared)."""
    return [stream for stream in STREAMS if recorded.get(stream) is not None and today.get(stream) is not None]


def normalized(line: str, pids: tuple[str, ...] = ()) -> str:
    """A line with what varies without meaning replaced (see NORMALIZATIONS), the run's pids as `<pid>`."""
    if not _COMPILED:
        _COMPILED.extend((name, re.compile(pattern)) for name, pattern in NORMALIZATIONS)
    for name, pattern in _COMPILED:
        line = pattern.sub(name, line)
    for pid in pids:
        line = re.sub(rf"\b{pid}\b", "<pid>", line)
    return line


def _lines(text: str, stream: str) -> list[str]:
    lines = text.splitlines()
    if stream != "stderr":
        return lines
    return _without_collected_generator_reports([line for line in lines if not line.startswith(WOP_LINE)])


def _without_collected_generator_reports(lines: list[str]) -> list[str]:
    """lines without the report of an async generator that failed to close when collected (see the module doc)."""
    if not any(line.lower().startswith(COLLECTED_GENERATOR_REPORTS) for line in lines):
        return lines
    kept: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index].lower().startswith(COLLECTED_GENERATOR_REPORTS):
            index = _report_end(lines, index + 1)
        else:
            kept.append(lines[index])
            index += 1
    return kept


def _report_end(lines: list[str], index: int) -> int:
    """The index past a collected generator's report whose first line was just before index: asyncio's
    `asyncgen: <…>` line, then its traceback, chained ones included, to the last exception's line."""
    if index < len(lines) and lines[index].startswith("asyncgen: "):
        index += 1
    if lines[index:index + 1] != [_TRACEBACK]:
        return index
    while True:
        if lines[index:index + 1] == [_TRACEBACK]:
            index += 1
            while index < len(lines) and lines[index].startswith(" "):
                index += 1
        index += 1  # the exception's line; one raised by C code (aclose() of a running generator) has no traceback
        if lines[index:index + 1] == [""] and lines[index + 1:index + 2] in ([_CHAINED[0]], [_CHAINED[1]]):
            index += 3  # the blank line, the chaining sentence, the blank line before the next exception
            continue
        return index


def _first_difference(was: list[str], now: list[str], normalize: bool,
                      pids: tuple[str, ...]) -> tuple[int, str | None, str | None] | None:
    for number, (expected, observed) in enumerate(_pairs(was, now), start=1):
        if expected == observed:
            continue
        if normalize and expected is not None and observed is not None and \
                normalized(expected, pids) == normalized(observed, pids):
            continue
        return number, expected, observed
    return None


def _reordered(was: list[str], now: list[str], normalize: bool, pids: tuple[str, ...]) -> bool:
    """True when both runs printed the same lines, only in another order."""
    if len(was) != len(now):
        return False
    if normalize:
        was, now = [normalized(line, pids) for line in was], [normalized(line, pids) for line in now]
    return sorted(was) == sorted(now)


def _pairs(was: list[str], now: list[str]) -> Iterator[tuple[str | None, str | None]]:
    for index in range(max(len(was), len(now))):
        yield (was[index] if index < len(was) else None), (now[index] if index < len(now) else None)


def _shown(line: str | None) -> str:
    if line is None:
        return "no line there"
    return repr(line if len(line) <= 120 else line[:117] + "...")
