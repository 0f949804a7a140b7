"""`wop fork --set KEY=VALUE`: a recorded value replaced, checked against the capture before the program runs.

KEY is the key of a value the program recorded through the SDK (wop.random, randint, uuid4, now,
time, wop.nondeterministic) or a wop.version change id; values read by unmodified code (ambient)
are served by call site and have no key to set. VALUE is JSON or text, read as what the capture
recorded under KEY: text where it recorded text (`--set name=123` is the text "123"), an integer
where it recorded an integer (exact, beyond 64 bits too), a number where it recorded a number; a
time or UUID the SDK rebuilds must read as one, and a version must be in the range the program
gave. Anything else — a key the capture never recorded, a value that cannot stand for the
recorded one — is a usage error naming the key, what was recorded there and what to give, instead
of the program failing inside wop when it is handed the value.
"""

import re
from typing import Any

import orjson

from openwop_cli.errors import UsageError
from openwop_cli.format.events import big_int_digits
from openwop_cli.replay.keys import KIND_VALUE, KIND_VERSION

MAX_KEYS_NAMED = 20
_INTEGER = re.compile(r"-?[0-9]+")


def resolve_overrides(texts: dict[str, str], source: Any) -> dict[str, Any]:
    """The --set values (KEY → VALUE as typed) as the program is to be handed them, each checked against the first
    value the capture (a replay.source.ReplaySource) recorded under its key; raises UsageError."""
    if not texts:
        return {}
    first_seq: dict[str, int] = {}
    for unit in source.units():
        if source.kinds[unit] in (KIND_VALUE, KIND_VERSION):
            first_seq.setdefault(str(source.names[unit]), source.request_seqs[unit])
    resolved = {}
    for key, text in texts.items():
        if key not in first_seq:
            raise UsageError(f"--set {key}={text}: {_known_keys(key, first_seq)}")
        seq = first_seq[key]
        resolved[key] = _standing_for(key, text, source.event(seq, edited=False)["data"], seq)
    return resolved


def _known_keys(key: str, first_seq: dict[str, int]) -> str:
    if not first_seq:
        return (f"the capture recorded no value under the key {key!r}, nor any other (--set takes the key of a "
                "wop.random/randint/uuid4/now/nondeterministic value or a wop.version change id)")
    names = sorted(first_seq)
    shown = ", ".join(names[:MAX_KEYS_NAMED]) + (f" (and {len(names) - MAX_KEYS_NAMED} more)"
                                                 if len(names) > MAX_KEYS_NAMED else "")
    return f"the capture recorded no value under the key {key!r}; its keys: {shown}"


def _standing_for(key: str, text: str, data: dict[str, Any], seq: int) -> Any:
    """VALUE as the value recorded in data (at seq) would be handed to the program, or UsageError."""
    value = _parsed(text)
    recorded = data.get("value")
    where = f"{key} was recorded at seq {seq} as"
    if data.get("source") == "version":
        low, high = data.get("min"), data.get("max")
        if type(value) is not int or (type(low) is int and type(high) is int and not low <= value <= high):
            span = f"{low}..{high}" if type(low) is int and type(high) is int else "the program's range"
            raise UsageError(f"--set {key}={text}: {where} a wop.version choice ({_shown(recorded)}); give an "
                             f"integer in {span}, e.g. --set {key}={_shown(recorded)}")
        return value
    if recorded is None:
        return value
    if type(recorded) is str:
        value = value if type(value) is str else text
        for rebuilt, reads_as, what, give in (("clock", _reads_as_time, "a time", "a time in ISO 8601"),
                                              ("uuid", _reads_as_uuid, "a UUID", "a UUID")):
            if data.get("source") == rebuilt and reads_as(recorded) and not reads_as(value):
                raise UsageError(f"--set {key}={text}: {where} {what} ({recorded}); give {give}, e.g. "
                                 f"--set {key}={recorded}")
        return value
    expected, given = _kind(recorded), _kind(value)
    if given == expected or (expected == "a number" and given == "an integer"):
        return value
    raise UsageError(f"--set {key}={text}: {where} {expected} ({_shown(recorded)}), not {given}; give {expected}, "
                     f"e.g. --set {key}={_shown(recorded)}")


def _parsed(text: str) -> Any:
    """VALUE read as JSON when it is JSON (an integer exactly, however large), else as text."""
    if _INTEGER.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts
            pass
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _kind(value: Any) -> str:
    kind = type(value)
    if kind is bool:
        return "a boolean"
    if kind is int or big_int_digits(value) is not None:
        return "an integer"
    if kind is float:
        return "a number"
    if kind is str:
        return "text"
    if value is None:
        return "null"
    return "a list" if kind is list else "an object"


def _shown(value: Any, limit: int = 40) -> str:
    """A recorded value as --set would take it: JSON (an integer beyond 64 bits as its digits), cut to limit."""
    text = big_int_digits(value)
    if text is None:
        text = orjson.dumps(value, default=repr).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reads_as_time(text: str) -> bool:
    from datetime import datetime

    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _reads_as_uuid(text: str) -> bool:
    import uuid

    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
