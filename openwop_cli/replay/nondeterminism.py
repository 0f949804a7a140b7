"""What a difference between two runs' values looks like: a timestamp, a uuid, a random id, an order.

Used to explain a divergence whose values differ in such substrings (the clock or an id was not
captured, and how to fix that) and to name the kind of uncaptured nondeterminism `wop replay
--repeat` finds. Values are compared as text (JSON for structures): each one is cut into the
substrings that look volatile and the rest; two values differ "only in" those kinds when the
rest is equal.
"""

import re
from collections.abc import Iterable
from typing import Any

import orjson

TIMESTAMP, UUID, HEX_ID, RANDOM_ID, FLOAT, NUMBER, ORDER = (
    "timestamp", "uuid", "hex id", "random id", "float", "number", "order")
VOLATILE = (TIMESTAMP, UUID, HEX_ID, RANDOM_ID, FLOAT)
SOME_REPLAYS_ONLY = "made in some replays only"

_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_PATTERN = re.compile("|".join(f"(?P<{group}>{pattern})" for group, pattern in (
    ("uuid", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    ("iso", r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"),
    ("ctime", rf"\b{_DAY} {_MONTH} [ \d]\d \d{{2}}:\d{{2}}:\d{{2}} \d{{4}}\b"),
    ("clock", r"\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b"),
    ("epoch", r"\b1[5-9]\d{8}(?:\.\d+)?\b|\b1[5-9]\d{11}\b|\b1[5-9]\d{17}\b"),
    ("float", r"\b\d+\.\d{4,}\b"),
    ("hex", r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b"),
    ("token", r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[a-z])(?=[\w-]*[A-Z])[\w-]{16,}(?![\w-])"),
    ("number", r"\b\d+\b"),
)))
_KINDS = {"uuid": UUID, "iso": TIMESTAMP, "ctime": TIMESTAMP, "clock": TIMESTAMP, "epoch": TIMESTAMP,
          "float": FLOAT, "hex": HEX_ID, "token": RANDOM_ID, "number": NUMBER}
_ARTICLES = {UUID: "a uuid", HEX_ID: "a hex id", RANDOM_ID: "a random id", FLOAT: "a float", TIMESTAMP: "a timestamp",
             NUMBER: "a number", ORDER: "the order"}


def text_of(value: Any) -> str:
    """A value as the text that is compared: strings as they are, anything else as sorted-key JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=repr).decode()


def differing_kinds(values: Iterable[Any], allowed: tuple[str, ...] = VOLATILE + (NUMBER,)) -> tuple[list[str], bool] | None:
    """(the allowed kinds of the substrings in which the values differ, whether anything else differs too);
    None when the values do not line up piece by piece."""
    pieces = [_pieces(text_of(value)) for value in values]
    first = pieces[0]
    kinds: list[str] = []
    other = False
    for then in pieces[1:]:
        if len(then) != len(first):
            return None
        for (kind_a, text_a), (kind_b, text_b) in zip(first, then):
            if text_a == text_b:
                continue
            if kind_a is not None and kind_a == kind_b and kind_a in allowed:
                if kind_a not in kinds:
                    kinds.append(kind_a)
            else:
                other = True
    return kinds, other


def guess_kind(values: list[Any]) -> str:
    """What the differing values look like: timestamp, uuid, hex id, random id, float, number, order, or value."""
    if _same_when_sorted(values):
        return ORDER
    found = differing_kinds(values)
    if all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        if found == ([TIMESTAMP], False):
            return TIMESTAMP
        return FLOAT if any(isinstance(value, float) for value in values) else NUMBER
    if found is not None and found[0] and not found[1]:
        return " and ".join(found[0])
    return "value"


def divergence_hint(expected: Any, observed: Any, ambient_recorded: bool,
                    live_values: list[dict[str, Any]]) -> dict[str, Any] | None:
    """{"kinds", "only", "message", "fix"} when expected and observed differ in volatile-looking substrings
    (timestamps, uuids, random ids): values the replay did not get from the capture."""
    if expected is None or observed is None or expected == observed:
        return None
    found = differing_kinds([expected, observed], VOLATILE)
    if found is None or not found[0]:
        return None
    kinds, other = found
    what = f"only in {describe(kinds)}" if not other else f"in {describe(kinds)} (and in other text)"
    message = f"expected and observed differ {what}: values the replay did not get from the capture"
    if not ambient_recorded:
        fix = ("the capture was made with --ambient off (or by a wop that did not record ambient values): "
               "capture it again with ambient values on")
    elif live_values:
        sites = ", ".join(site_text(note.get("site")) for note in live_values[:3])
        fix = (f"the replay read values live where the capture has none left ({sites}): new or moved code; "
               "capture the run again")
    else:
        fix = ("the value came from somewhere wop does not intercept (a C extension, another process, a call "
               "through the standard library): pass it through wop.nondeterministic(source, key, fn), and run "
               "`wop replay --repeat` to find others")
    return {"kinds": kinds, "only": not other, "message": message, "fix": fix}


def fix_for(kind: str) -> str:
    """How to make a value of this kind replay (what `wop replay --repeat` suggests)."""
    if kind == ORDER:
        return ("the iteration order of a set (or of a dict built from one) changes from run to run with "
                "PYTHONHASHSEED: sort it")
    if kind == SOME_REPLAYS_ONLY:
        return "the program decides whether to make this call from a value the capture does not hold"
    return ("the program reads this value from somewhere wop does not intercept (a C extension such as numpy, "
            "os.getpid(), another process): pass it through wop.nondeterministic(source, key, fn)")


def describe(kinds: list[str]) -> str:
    """'a timestamp and a uuid'."""
    named = [_ARTICLES.get(kind, kind) for kind in kinds]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def site_text(site: Any) -> str:
    """file:line function of a call site, or '(unknown site)'."""
    if not isinstance(site, dict) or not site.get("file"):
        return "(unknown site)"
    return f"{site.get('file')}:{site.get('line')} {site.get('function') or ''}".rstrip()


def _pieces(text: str) -> list[tuple[str | None, str]]:
    """text cut into (kind, substring) for volatile-looking parts and (None, substring) for the rest."""
    pieces: list[tuple[str | None, str]] = []
    position = 0
    for match in _PATTERN.finditer(text):
        if match.start() > position:
            pieces.append((None, text[position:match.start()]))
        pieces.append((_KINDS[match.lastgroup or "number"], match.group()))
        position = match.end()
    if position < len(text):
        pieces.append((None, text[position:]))
    return pieces


def _same_when_sorted(values: list[Any]) -> bool:
    """True when the values hold the same items in different orders (set or dict iteration order)."""
    if len({text_of(value) for value in values}) < 2:
        return False
    if all(isinstance(value, list) for value in values):
        return len({tuple(sorted(text_of(item) for item in value)) for value in values}) == 1
    if all(isinstance(value, str) for value in values):
        return len({tuple(sorted(re.findall(r"\w+|[^\w\s]", value))) for value in values}) == 1
    return False
