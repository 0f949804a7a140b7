"""Redaction profiles, applied before any byte reaches a capture file.

- none: nothing is changed.
- default: values under secret-looking keys (`*_API_KEY`, `*_TOKEN`, `*SECRET*`, passwords,
  `authorization`, `x-api-key`, `cookie`, …), strings that look like provider keys or bearer tokens,
  and the values of secret environment variables become "***REDACTED***".
- strict: default, and message contents (content, text, prompt, …) are replaced by their hash.

The hot path is `suspicious(serialized)`: one regular-expression pass over serialized JSON (a line or
a whole buffer of lines) for secret-looking keys, provider-key and bearer values, and the known
secret values. Only what it flags pays for the structural `redact`. The same patterns run on the
fastest engine installed: Hyperscan (the optional `fast` extra, SIMD, ~5x RE2 here), RE2 (the
`google-re2` dependency, linear time, ~4x `re` on these alternations), else `re`.
"""

import functools
import hashlib
import os
import re
from typing import Any, Iterable, Mapping

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
SECRET_VALUE = re.compile(
    r"sk-[A-Za-z0-9_\-]{16,}"
    r"|(?P<scheme>[Bb]earer\s+)[A-Za-z0-9._~+/=\-]{8,}"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
)
# SECRET_KEY as it appears in serialized JSON: the key's quoted text followed by `":`. Over-matching
# (the same text inside a string value) only costs a structural check, never a leak.
SERIALIZED_SECRET_KEY = (
    r'"[^"]*(?i:api[_-]?key|access[_-]?key|private[_-]?key|secret|passw(?:or)?d|passphrase|cookie)[^"]*":'
    r'|"[^"]*(?i:token|credentials?)":'
    r'|"(?i:(?:proxy-)?authorization|auth)":'
)
CONTENT_KEYS = frozenset(
    {"content", "text", "prompt", "completion", "input", "output", "instructions", "system", "arguments"}
)


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
        self._prefilter = compile_prefilter(self.secrets)

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
        return bool(self._prefilter.search(serialized))

    def redact(self, value: Any) -> Any:
        """A copy of value with the profile applied; untouched values are returned as they are."""
        if not self.active:
            return value
        return self._redact(value, False)

    def scrub_text(self, text: str) -> str:
        """A string with secret-looking tokens and known secret values replaced."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if SECRET_VALUE.search(text) is None:
            return text
        return SECRET_VALUE.sub(_replace_secret, text)

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
            return [self._redact(child, content) for child in value]
        if kind is bytes:
            text = value.decode("latin-1")
            scrubbed = self.scrub_text(text)
            return value if scrubbed is text else scrubbed.encode("latin-1")
        return value


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
    parts = [SERIALIZED_SECRET_KEY, SECRET_VALUE.pattern.replace("(?P<scheme>", "(?:"), *literals]
    for name in (engine,) if engine else PREFILTER_ENGINES:
        try:
            if name == "hyperscan":
                return _HyperscanPrefilter(parts)
            if name == "re2":
                import re2

                return re2.compile("|".join(parts).encode())
        except ImportError:
            if engine:
                raise
            continue
    return re.compile("|".join(parts).encode())


class _HyperscanPrefilter:
    """The prefilter's patterns in one Hyperscan database; each thread scans with its own scratch space."""

    def __init__(self, parts: list[str]) -> None:
        import threading

        import hyperscan

        self._hyperscan = hyperscan
        self._database = hyperscan.Database()
        self._database.compile(expressions=[part.encode() for part in parts], ids=list(range(len(parts))),
                               flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(parts))
        self._local = threading.local()

    def search(self, data: bytes) -> bool:
        """True when any pattern matches somewhere in data (the scan stops at the first match)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hyperscan.Scratch(self._database)
        try:
            self._database.scan(data, match_event_handler=_stop, scratch=scratch)
        except self._hyperscan.ScanTerminated:
            return True
        return False


def _stop(*_match: Any) -> bool:
    return True


def _replace_secret(match: re.Match[str]) -> str:
    scheme = match.group("scheme")
    return f"{scheme}{REDACTED}" if scheme else REDACTED
