"""Redaction profiles, applied before any byte reaches a capture file.

- none: nothing is changed.
- default: values under secret-looking keys (`*_API_KEY`, `*_TOKEN`, `*SECRET*`, passwords,
  `authorization`, `x-api-key`, `cookie`, …), and anywhere in any string: provider keys and bearer
  tokens, JWTs, PEM/SSH private key blocks (a GCP service account's key among them), AWS access keys,
  secret keys and session tokens, the password of a URL or DSN (`scheme://user:PASS@host`), the value
  after a secret-named label (`password=…`, `"client_secret": "…"` in JSON held in a string) or
  command-line flag (`--token X`, `--api-key=X`; in an argv list too), and the values of secret
  environment variables — all become "***REDACTED***".
- strict: default, and message contents (content, text, prompt, …) are replaced by their hash.

The hot path is `suspicious(serialized)`: one regular-expression pass over serialized JSON (a line or
a whole buffer of lines) for secret-looking keys and values, and the known secret values. Only what
it flags pays for the structural `redact`. The prefilter patterns are looser than the ones `redact`
applies (they only need to never miss), and every engine compiles the same list: Hyperscan (a dependency
on Linux x86_64, SIMD, ~5x RE2 here), RE2 (the `google-re2` dependency, linear time), else `re`.
"""

import functools
import hashlib
import math
import os
import re
from typing import Any, Iterable, Mapping, Sequence

import orjson

REDACTED = "***REDACTED***"
PROFILES = ("none", "default", "strict")
DEFAULT_PROFILE = "default"
MIN_SECRET_LENGTH = 6

SECRET_KEY = re.compile(
    r"api[_-]?key|access[_-]?key|private[_-]?key|secret|passw(or)?d|passphrase|cookie"
    r"|token$|credentials?$|^(proxy-)?authorization$|^auth$|^x-api-key$",
    re.IGNORECASE,
)
# The words a label or a flag ends with when what follows it is a secret (`max_tokens=` is not one).
_SECRET_WORD = (r"(?:passw(?:or)?d|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key"
                r"|private[_-]?key|credentials?|auth)")
_SECRET_FLAG = rf"--?[A-Za-z0-9_-]*{_SECRET_WORD}"
# Secret-looking values anywhere in a string. Each is (what redact replaces, with the part to keep in
# group `keep`; what the prefilter looks for in serialized JSON — portable: no lookaround, no backreference —
# or None when another entry's prefilter already finds it).
_VALUES = (
    (r"sk-[A-Za-z0-9_\-]{16,}", r"sk-[A-Za-z0-9_\-]{16}"),
    (r"(?P<keep>[Bb]earer\s+)[A-Za-z0-9._~+/=\-]{8,}", r"[Bb]earer\s+[A-Za-z0-9._~+/=\-]{8}"),
    (r"AIza[0-9A-Za-z_\-]{30,}", r"AIza[0-9A-Za-z_\-]{30}"),
    (r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}", r"gh[pousr]_[A-Za-z0-9]{20}|github_pat_[A-Za-z0-9_]{20}"),
    (r"xox[abprs]-[A-Za-z0-9\-]{10,}", r"xox[abprs]-[A-Za-z0-9\-]{10}"),
    (r"(?:AKIA|ASIA)[0-9A-Z]{16}", r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    (r"(?:FwoGZXIvYXdz|IQoJb3JpZ2lu)[A-Za-z0-9/+=]{20,}", r"FwoGZXIvYXdz|IQoJb3JpZ2lu"),
    (r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*", r"eyJ[A-Za-z0-9_-]{4,}\.eyJ"),
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
     r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY"),
    # a scheme is at most 32 characters here: unbounded, a long run of letters was scanned again from each of them
    (r"(?P<keep>[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s/@:]*:)[^\s/@]+(?=@)", r"://[^\s/@]*:[^\s/@]*@"),
    # a URL's credential parameter whose name is no secret word (`?key=…`, a SAS `&sig=…`, an OAuth `?code=…`),
    # as a server echoing the URL writes it (the URL of a recorded request has it masked already)
    (r"(?P<keep>[?&](?i:key|sig|signature|code)=)(?P<value>[^&\s\\\"'#<>]{4,})", r"[?&](?i:key|sig|signature|code)="),
    # a labelled value (`password=…`, `"client_secret": "…"`) and a flag's (`--token X`): one prefilter for both
    (rf"(?P<keep>(?i:{_SECRET_WORD})[\\\"']*[ \t]*[:=][ \t]*[\\\"']*)(?P<value>[^\s\\\"',;&<>(){{}}\[\]]{{4,}})"
     r"(?=[\s\\\"',;&<>]|\Z)",
     rf"(?i:{_SECRET_WORD})(?:[\\\"']{{0,3}}[ \t]*[:=]|[ \t])"),
    (rf"(?P<keep>(?:^|\s){_SECRET_FLAG}(?:=|[ \t]+(?!-)))(?P<value>[^\s\"']+)", None),
)
_NOT_SECRETS = frozenset({"null", "none", "true", "false", "undefined", "required", "optional"})
# SECRET_KEY as it appears in serialized JSON: the key's quoted text followed by `":`. Over-matching
# (the same text inside a string value) only costs a structural check, never a leak.
SERIALIZED_SECRET_KEY = (
    r'"[^"]*(?i:api[_-]?key|access[_-]?key|private[_-]?key|secret|passw(?:or)?d|passphrase|cookie)[^"]*":'
    r'|"[^"]*(?i:token|credentials?)":'
    r'|"(?i:(?:proxy-)?authorization|auth)":'
)
# An argv item that is a secret flag (`--token`), whose value is the next item.
_SERIALIZED_FLAG = rf'"-{{1,2}}[A-Za-z0-9_-]*(?i:{_SECRET_WORD})"'
PREFILTER_PATTERNS = (SERIALIZED_SECRET_KEY, _SERIALIZED_FLAG, *(looked_for for _, looked_for in _VALUES if looked_for))
CONTENT_KEYS = frozenset(
    {"content", "text", "prompt", "completion", "input", "output", "instructions", "system", "arguments"}
)


class _Patterns:
    """The regular expressions `redact` and `scrub_text` apply, compiled on first use: most runs of a small
    program never need them, and compiling them costs more than its whole capture."""

    def __init__(self) -> None:
        self.secret_values = [re.compile(found) for found, _ in _VALUES]
        self.any_secret_value = re.compile(
            "|".join(f"(?:{found})" for found, _ in _VALUES).replace("?P<keep>", "").replace("?P<value>", ""))
        self.aws_key_id = re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}")
        self.aws_secret_key = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")  # beside a key id
        self.secret_flag = re.compile(_SECRET_FLAG, re.IGNORECASE)
        self.password_word = re.compile(r"(?:passw(?:or)?d|passphrase|pwd)\W*$", re.IGNORECASE)


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


class UnknownProfile(ValueError):
    """A redaction profile name that is not none, default or strict."""


class Redactor:
    """Removes secrets (and, in strict, contents) from event data before it is serialized to disk."""

    def __init__(self, profile: str = DEFAULT_PROFILE, secrets: Iterable[str] = ()) -> None:
        if profile not in PROFILES:
            raise UnknownProfile(f"unknown redaction profile {profile!r}: use one of {', '.join(PROFILES)}")
        self.profile = profile
        self.active = profile != "none"
        self.strict = profile == "strict"
        self.secrets = tuple(sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True))
        self._prefilter: Any = None  # compiled at the first scan: a replay of a program that calls nothing never scans

    @classmethod
    def from_environment(cls, profile: str = DEFAULT_PROFILE, environ: Mapping[str, str] | None = None) -> "Redactor":
        """A redactor that also knows the values of this process's secret-named environment variables."""
        env = os.environ if environ is None else environ
        return cls(profile, secret_env_values(env))

    def suspicious(self, serialized: bytes) -> bool:
        """Cheap test: could this serialized JSON (one line or many) hold something the profile removes?"""
        if not self.active:
            return False
        if self.strict:
            return True
        prefilter = self._prefilter
        if prefilter is None:
            prefilter = self._prefilter = compile_prefilter(self.secrets)
        return bool(prefilter.search(serialized))

    def redact(self, value: Any) -> Any:
        """A copy of value with the profile applied; untouched values are returned as they are."""
        if not self.active:
            return value
        return self._redact(value, False)

    def redact_flagged(self, value: Any) -> Any:
        """redact(value), without walking it when the prefilter finds nothing in its JSON (most manifests)."""
        if not self.active:
            return value
        try:
            flagged = self.suspicious(orjson.dumps(value))
        except TypeError:  # not JSON as it stands: walk it
            flagged = True
        return self._redact(value, False) if flagged else value

    def scrub_text(self, text: str) -> str:
        """A string with secret-looking values (see the module docstring) and known secret values replaced."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        patterns = _patterns()
        if patterns.any_secret_value.search(text) is None:
            return text
        aws_key_id = patterns.aws_key_id.search(text) is not None
        for pattern in patterns.secret_values:
            text = pattern.sub(_replace_secret, text)
        return patterns.aws_secret_key.sub(REDACTED, text) if aws_key_id else text

    def is_secret_key(self, key: str) -> bool:
        """True when the profile redacts the whole value stored under this key."""
        return SECRET_KEY.search(key) is not None

    def _redact(self, value: Any, content: bool) -> Any:
        kind = type(value)
        if kind is str:
            if content:
                return hashed_content(value)
            return self.scrub_text(value)
        if kind is dict:
            out = {}
            for key, child in value.items():
                safe_key = self.scrub_text(key) if type(key) is str else key
                if type(key) is str and self.is_secret_key(key) and child is not None:
                    out[safe_key] = REDACTED
                else:
                    out[safe_key] = self._redact(child, content or (self.strict and key in CONTENT_KEYS))
            return out
        if kind is list or kind is tuple:
            return self._redact_items(value, content)
        if kind is bytes:
            text = value.decode("latin-1")
            scrubbed = self.scrub_text(text)
            return value if scrubbed is text else scrubbed.encode("latin-1")
        return value


    def _redact_items(self, items: Any, content: bool) -> list[Any]:
        """A list's items redacted; an item after a secret flag (`["--token", "X"]`, an argv) is a secret."""
        out, after_flag = [], False
        secret_flag = _patterns().secret_flag
        for child in items:
            out.append(REDACTED if after_flag and type(child) is str else self._redact(child, content))
            after_flag = type(child) is str and secret_flag.fullmatch(child) is not None
        return out


def hashed_content(text: str) -> str:
    """What strict redaction leaves of a message content: its hash, so equal contents still compare equal."""
    return "***sha256:" + hashlib.sha256(text.encode()).hexdigest() + "***"


def secret_env_values(environ: Mapping[str, str]) -> list[str]:
    """Values of environment variables whose names look like secrets (API keys, tokens, passwords)."""
    return [value for name, value in environ.items() if SECRET_KEY.search(name) and len(value) >= MIN_SECRET_LENGTH]


PREFILTER_ENGINES = ("hyperscan", "re2", "re")


def compile_prefilter(secrets: Iterable[str], engine: str | None = None) -> Any:
    """The hot-path matcher over serialized bytes (secret keys, secret-looking values, known secrets):
    an object whose `search(data)` is truthy on a possible secret, on `engine` or the fastest installed.

    Compiled once per set of secrets in a process (a batch of replays shares one; matchers are thread-safe)."""
    return _compiled_prefilter(tuple(secrets), engine)


@functools.lru_cache(maxsize=8)
def _compiled_prefilter(secrets: tuple[str, ...], engine: str | None) -> Any:
    literals = [re.escape(orjson.dumps(secret)[1:-1].decode()) for secret in secrets]
    for name in (engine,) if engine else PREFILTER_ENGINES:
        try:
            if name == "hyperscan":
                return HyperscanMatcher(list(PREFILTER_PATTERNS), secret_parts=literals)
            if name == "re2":
                import re2

                return re2.compile("|".join([*PREFILTER_PATTERNS, *literals]).encode())
        except ImportError:
            if engine:
                raise
            continue
    return re.compile("|".join([*PREFILTER_PATTERNS, *literals]).encode())


class HyperscanMatcher:
    """Patterns in Hyperscan databases (the prefilter's, or any other bytes scan that must be fast); each
    thread scans with its own scratch space. ImportError where Hyperscan is not installed.

    Compiling `parts` takes tens of milliseconds, more than a small capture's whole run, so their database is
    kept in the user's cache directory and loaded in microseconds by later runs; `secret_parts` (the values of
    secret environment variables) are compiled in every run, in a database of their own that never reaches a disk.
    every_match: report every match to `match_ends` (else each pattern's first only, which is all `search` needs)."""

    def __init__(self, parts: list[str], secret_parts: Sequence[str] = (), *, every_match: bool = False) -> None:
        import threading

        import hyperscan

        self._hyperscan = hyperscan
        self._databases = [_cached_database(hyperscan, parts, every_match)]
        if secret_parts:
            self._databases.append(_compiled_database(hyperscan, list(secret_parts), every_match))
        self._local = threading.local()

    def search(self, data: bytes) -> bool:
        """True when any pattern matches somewhere in data (the scan stops at the first match)."""
        scratches = self._scratches()
        try:
            for database, scratch in zip(self._databases, scratches):
                database.scan(data, match_event_handler=_stop, scratch=scratch)
        except self._hyperscan.ScanTerminated:
            return True
        return False

    def _scratches(self) -> list[Any]:
        """This thread's scratch space for each database (Hyperscan's scans may not share one across threads)."""
        scratches = getattr(self._local, "scratches", None)
        if scratches is None:
            scratches = self._local.scratches = [self._hyperscan.Scratch(database) for database in self._databases]
        return scratches

    def match_ends(self, data: bytes) -> list[int]:
        """Where in data each match of the patterns ends (offsets one past its last byte), in the order found."""
        scratches = self._scratches()
        ends: list[int] = []

        def found(_id: int, _start: int, end: int, _flags: int, _context: Any) -> None:
            ends.append(end)

        for database, scratch in zip(self._databases, scratches):
            database.scan(data, match_event_handler=found, scratch=scratch)
        return ends


def _compiled_database(hyperscan: Any, parts: list[str], every_match: bool = False) -> Any:
    database = hyperscan.Database()
    database.compile(expressions=[part.encode() for part in parts], ids=list(range(len(parts))),
                     flags=[0 if every_match else hyperscan.HS_FLAG_SINGLEMATCH] * len(parts))
    return database


def _cached_database(hyperscan: Any, parts: list[str], every_match: bool = False) -> Any:
    """parts compiled, from the cache when an earlier run of this Hyperscan compiled them (Hyperscan checks a
    loaded database's checksum and platform; anything it refuses is compiled and cached again)."""
    key = hashlib.sha256(orjson.dumps([hyperscan.__version__, parts, *(["every match"] if every_match else [])]))
    key = key.hexdigest()[:32]
    from platformdirs import user_cache_dir

    path = os.path.join(user_cache_dir("wop", appauthor=False), f"hyperscan-{key}.db")
    try:
        with open(path, "rb") as handle:
            database = hyperscan.loadb(handle.read(), hyperscan.HS_MODE_BLOCK)
        hyperscan.Scratch(database)
        return database
    except (OSError, hyperscan.error):
        pass
    import threading

    database = _compiled_database(hyperscan, parts, every_match)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(hyperscan.dumpb(database))
        os.replace(temporary, path)
    except OSError:
        pass
    return database


def _stop(*_match: Any) -> bool:
    return True


def _replace_secret(match: re.Match[str]) -> str:
    groups = match.groupdict()
    keep, value = groups.get("keep") or "", groups.get("value")
    if value is not None and not _hides_a_secret(keep, value):
        return match.group(0)
    return keep + REDACTED


def _hides_a_secret(label: str, value: str) -> bool:
    """Whether the value after a secret-named label is worth hiding: anything after a password label or a flag,
    else a value that is neither a plain word nor a number and has the variety of a generated secret."""
    if value.lower() in _NOT_SECRETS:
        return False
    if label.lstrip().startswith("-") or _patterns().password_word.search(label):
        return True
    return len(value) >= 8 and not value.isalpha() and not value.isdigit() and _entropy(value) >= 3.0


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(count / len(text) * math.log2(count / len(text)) for count in counts.values())
