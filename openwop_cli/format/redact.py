"""Redaction: the one redactor for everything wop writes or shows (events, manifest, blobs, the closing line, the
report, the OTel export, replay captures).

- none: nothing is changed.
- default: a value stored under a secret-looking key (`*_API_KEY`, `*_TOKEN`, `*SECRET*`, passwords, `authorization`,
  `cookie`, the credential headers of format.credentials, …), and anywhere in any string:
  - every format of detect-secrets' regex plugins (format.detectors: AWS, Azure storage, GitHub, GitLab, Slack tokens
    and webhooks, Stripe, SendGrid, npm, PyPI, Telegram, Discord, Twilio, Mailchimp, JWTs, private keys, …), read
    from the maintained library rather than kept here;
  - the formats it lacks (_MORE_VALUES: OpenAI/Anthropic `sk-`, Hugging Face `hf_`, Groq `gsk_`, xAI `xai-`, bare
    `npm_`, Google `AIza`, `github_pat_`, Discord webhooks, AWS session tokens, whole PEM blocks, bearer tokens),
    the password of a URL or DSN, a URL's credential parameters (`?key=`, `&sig=`, `?subscription-key=`…), the value
    after a secret-named label (`password=…`, `"client_secret": "…"`, `private_key_id: …`, an `Authorization:` or
    `Cookie:` header line written in text) or command-line flag (`--token X`, `--key X`, `--api-key=X`; in an argv
    list also `-p X` when X looks like a password), an AWS secret key in a text that holds its access key id;
  - the exact values of this process's secret-named environment variables (`*KEY*`, `*TOKEN*`, `*SECRET*`,
    `*PASS*`, `*CREDENTIAL*`, `*_PAT`), wherever they appear —
  all become "***REDACTED***". A stream's chunks are redacted where its assembled text held a secret, even one split
  across chunks.
- strict: default, and message contents (content, text, prompt, …) and the OS entropy a program read
  (`os.urandom`, `secrets.*`) are replaced by the same marker.

No hash on disk covers what was redacted: a redacted value keeps no hash of itself (every redacted value compares
equal to any other at the same place), and a `valueHash` or `cacheKey` is computed over the data as kept.

The hot path is `suspicious(serialized)`: one regular-expression pass over serialized JSON (a line or a whole buffer
of lines) for secret-looking keys and values, and the known secret values. Only what it flags pays for the structural
`redact`. The prefilter patterns are looser than the ones `redact` applies (they only need to never miss), and every
engine compiles the same list: Hyperscan (a dependency on Linux x86_64, SIMD, ~5x RE2 here), RE2 (the `google-re2`
dependency, linear time), else `re`.
"""

import functools
import math
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from openwop_cli.format.credentials import CREDENTIAL_QUERY_NAMES, REDACTED
from openwop_cli.format.scan import HyperscanMatcher

PROFILES = ("none", "default", "strict")
DEFAULT_PROFILE = "default"
MIN_SECRET_LENGTH = 6

SECRET_KEY = re.compile(
    r"api[_-]?key|access[_-]?key|private[_-]?key|secret|passw(or)?d|passphrase|cookie|subscription[_-]?key"
    r"|functions[_-]?key|token$|credentials?$|^(proxy-)?authorization$|^auth$|^x-api-key$|^private-token$",
    re.IGNORECASE,
)
# An environment variable whose value is a secret wherever it appears (AZURE_OPENAI_KEY, DB_PASS, GITLAB_PAT).
SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|_PAT$|^PAT$", re.IGNORECASE)
# The words a label or a flag ends with when what follows it is a secret (`max_tokens=` is not one).
_SECRET_WORD = (r"(?:passw(?:or)?d|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key"
                r"|private[_-]?key(?:[_-]?id)?|credentials?|auth)")
# A flag whose value is a secret: any secret word, or a key (`--key`, `--stripe-key`).
_SECRET_FLAG = rf"--?[A-Za-z0-9_-]*(?:{_SECRET_WORD}|(?<![A-Za-z])key)"
# longest first; in one order in every process (a set's order changes with the hash seed, and the pattern's text
# names the compiled databases cached across runs)
_QUERY_NAMES = "|".join(re.escape(name) for name in sorted(CREDENTIAL_QUERY_NAMES, key=lambda name: (-len(name), name)))
# Secret-looking values the pattern library does not know. Each is (what redact replaces, with the part to keep in
# group `keep` and, when only part of it is the secret, that part in group `value`; what the prefilter looks for in
# serialized JSON — portable: no lookaround, no backreference — or None when another entry's prefilter finds it).
_MORE_VALUES = (
    (r"sk-[A-Za-z0-9_\-]{16,}", r"sk-[A-Za-z0-9_\-]{16}"),
    (r"(?:hf|api_org)_[A-Za-z0-9]{30,}", r"(?:hf|api_org)_[A-Za-z0-9]{30}"),
    (r"gsk_[A-Za-z0-9]{40,}", r"gsk_[A-Za-z0-9]{40}"),
    (r"xai-[A-Za-z0-9]{40,}", r"xai-[A-Za-z0-9]{40}"),
    (r"npm_[A-Za-z0-9]{36,}", r"npm_[A-Za-z0-9]{36}"),
    (r"(?P<keep>[Bb]earer\s+)[A-Za-z0-9._~+/=\-]{8,}", r"[Bb]earer\s+[A-Za-z0-9._~+/=\-]{8}"),
    (r"AIza[0-9A-Za-z_\-]{30,}", r"AIza[0-9A-Za-z_\-]{30}"),
    (r"github_pat_[A-Za-z0-9_]{20,}", r"github_pat_[A-Za-z0-9_]{20}"),
    (r"(?P<keep>discord(?:app)?\.com/api/webhooks/[0-9]+/)[A-Za-z0-9_\-]{20,}", r"discord(?:app)?\.com/api/webhooks/"),
    (r"(?:FwoGZXIvYXdz|IQoJb3JpZ2lu)[A-Za-z0-9/+=]{20,}", r"FwoGZXIvYXdz|IQoJb3JpZ2lu"),
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
     r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY"),
    # a scheme is at most 32 characters here: unbounded, a long run of letters was scanned again from each of them
    (r"(?P<keep>[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s/@:]*:)[^\s/@]+(?=@)", r"://[^\s/@]*:[^\s/@]*@"),
    # a URL's credential parameter (format.credentials), as a server echoing the URL writes it (the URL of a recorded
    # request has it masked already)
    (rf"(?P<keep>[?&](?i:{_QUERY_NAMES})=)(?P<value>[^&\s\\\"'#<>]{{4,}})", rf"[?&](?i:{_QUERY_NAMES})="),
    # an Authorization or Cookie header written in text: its whole value (the scheme kept)
    (r"(?P<keep>(?i:(?:proxy-)?authorization)[\\\"']*[ \t]*[:=][ \t]*[\\\"']*(?:[A-Za-z]+ +(?=[^\s\\\"']))?)"
     r"(?P<value>[^\s\\\"',;]{4,})",
     r"(?i:authorization)[\\\"']{0,3}[ \t]*[:=]"),
    (r"(?P<keep>(?i:(?:set-)?cookie)[\\\"']*[ \t]*:[ \t]*[\\\"']*)(?P<value>[^\r\n\\\"']{4,})",
     r"(?i:cookie)[\\\"']{0,3}[ \t]*:"),
    # a labelled value (`password=…`, `"client_secret": "…"`) and a flag's (`--token X`): one prefilter for both
    (rf"(?P<keep>(?i:{_SECRET_WORD})[\\\"']*[ \t]*[:=][ \t]*[\\\"']*)(?P<value>[^\s\\\"',;&<>(){{}}\[\]]{{4,}})"
     r"(?=[\s\\\"',;&<>]|\Z)",
     rf"(?i:{_SECRET_WORD})(?:[\\\"']{{0,3}}[ \t]*[:=]|[ \t])"),
    (rf"(?P<keep>(?:^|\s){_SECRET_FLAG}(?:=|[ \t]+(?!-)))(?P<value>[^\s\"']+)", r"-[A-Za-z0-9_-]*(?i:key)(?:=|[ \t])"),
)
_NOT_SECRETS = frozenset({"null", "none", "true", "false", "undefined", "required", "optional"})
# SECRET_KEY as it appears in serialized JSON: the key's quoted text followed by `":`. Over-matching
# (the same text inside a string value) only costs a structural check, never a leak.
SERIALIZED_SECRET_KEY = (
    r'"[^"]*(?i:api[_-]?key|access[_-]?key|private[_-]?key|secret|passw(?:or)?d|passphrase|cookie'
    r'|subscription[_-]?key|functions[_-]?key)[^"]*":'
    r'|"[^"]*(?i:token|credentials?)":'
    r'|"(?i:(?:proxy-)?authorization|auth|private-token)":'
)
# An argv item that is a secret flag (`--token`, `--key`) or `-p`, whose value is the next item.
_SERIALIZED_FLAG = rf'"-{{1,2}}[A-Za-z0-9_-]*(?i:{_SECRET_WORD}|key)"|"-p"'
CONTENT_KEYS = frozenset(
    {"content", "text", "prompt", "completion", "input", "output", "instructions", "system", "arguments"}
)
# Where a stream's chunks carry the text a message is assembled from (sse.assemble, eventstream.assemble).
_DELTA_KEYS = frozenset({"content", "text", "delta", "partial_json", "arguments", "thinking", "reasoning"})
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")
_LIBRARY_GROUP = 8  # a library pattern's group this long or longer is the secret (else its whole match is)
_SHORTEST_FOUND = 8  # no value pattern matches fewer characters (a known secret value is looked for in any string)
_CONTEXT = frozenset(" \t\r\n\"'=:")
_CONTEXT_AFTER = frozenset(" \t\r\n\"'")


@functools.cache
def prefilter_patterns() -> tuple[str, ...]:
    """Every pattern the prefilter compiles: secret keys, argv flags, this module's values and the library's."""
    from openwop_cli.format.detectors import library_patterns, portable_forms

    forms = portable_forms([(pattern, flags) for _, pattern, flags in library_patterns()])
    library = ["" if form is None else form for form in forms]  # "" matches everything: slower, never a miss
    return (SERIALIZED_SECRET_KEY, _SERIALIZED_FLAG, *(looked_for for _, looked_for in _MORE_VALUES if looked_for),
            *library)


class _Patterns:
    """The regular expressions `redact` and `scrub_text` apply, compiled on first use: most runs of a small
    program never need them, and compiling them costs more than its whole capture. With Hyperscan, a value pattern
    is compiled only once a text may hold what it finds (`candidates`)."""

    def __init__(self) -> None:
        from openwop_cli.format.detectors import library_patterns

        aws_key_id = r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}"
        # every value pattern (source, flags) with the function finding its spans; the last one is the AWS key id's
        # (its spans are the secret keys beside it)
        self._sources: list[tuple[str, int, Any]] = [
            *((found, 0, _own_spans) for found, _ in _MORE_VALUES),
            *((pattern, flags, _library_spans) for _, pattern, flags in library_patterns()),
            (aws_key_id, 0, _aws_secret_spans)]
        self._compiled: list[re.Pattern[str] | None] = [None] * len(self._sources)
        self.selector = _selector([(source, flags) for source, flags, _ in self._sources])
        if self.selector is None:
            self.values = [self._value(index) for index in range(len(self._sources))]
            own_text = "|".join(f"(?:{found})" for found, _ in _MORE_VALUES)
            self.any_secret_value = re.compile(own_text.replace("?P<keep>", "").replace("?P<value>", "") + "".join(
                f"|{_scoped(compiled)}" for compiled, found in self.values if found is _library_spans)
                + f"|{aws_key_id}")
        self.aws_secret_key = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")  # beside a key id
        self.secret_flag = re.compile(_SECRET_FLAG, re.IGNORECASE)
        self.password_word = re.compile(r"(?:passw(?:or)?d|passphrase|pwd)\W*$", re.IGNORECASE)
        self.header_label = re.compile(r"(?:proxy-)?authorization|(?:set-)?cookie", re.IGNORECASE)
        self.password_like = re.compile(r"(?=.*[A-Za-z])(?=.*[^A-Za-z])\S{4,}")
        self.module_name = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|no:\S*")

    def candidates(self, text: str) -> list[tuple[re.Pattern[str], Any]]:
        """(compiled value pattern, its spans function) of every pattern that may match text."""
        if self.selector is not None:
            return [self._value(index) for index in sorted(self.selector.matched(text.encode("utf-8", "surrogatepass")))]
        return self.values if self.any_secret_value.search(text) is not None else []

    def _value(self, index: int) -> tuple[re.Pattern[str], Any]:
        compiled = self._compiled[index]
        source, flags, spans = self._sources[index]
        if compiled is None:
            compiled = self._compiled[index] = re.compile(source, flags)
        return compiled, spans


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


class UnknownProfile(ValueError):
    """A redaction profile name that is not none, default or strict."""


class Redactor:
    """Removes secrets (and, in strict, contents) from event data before it is serialized to disk or shown."""

    def __init__(self, profile: str = DEFAULT_PROFILE, secrets: Iterable[str] = ()) -> None:
        if profile not in PROFILES:
            raise UnknownProfile(f"unknown redaction profile {profile!r}: use one of {', '.join(PROFILES)}")
        self.profile = profile
        self.active = profile != "none"
        self.strict = profile == "strict"
        self.secrets = tuple(sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=lambda s: (-len(s), s)))
        self._prefilter: Any = None  # compiled at the first scan: a replay of a program that calls nothing never scans

    @classmethod
    def from_environment(cls, profile: str = DEFAULT_PROFILE, environ: Mapping[str, str] | None = None) -> "Redactor":
        """A redactor that also knows the values of this process's secret-named environment variables."""
        env = os.environ if environ is None else environ
        return cls(profile, secret_env_values(env))

    @classmethod
    def of_capture(cls, manifest: Mapping[str, Any]) -> "Redactor":
        """from_environment with the profile a capture was made with (default when it names none wop knows): what
        today's data is redacted by before it is compared with, or shown beside, the capture's."""
        redaction = manifest.get("redaction")
        profile = redaction.get("profile") if isinstance(redaction, dict) else None
        return cls.from_environment(profile if profile in PROFILES else DEFAULT_PROFILE)

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
        return self.redact_flagged_written(value)[0]

    def redact_flagged_written(self, value: Any) -> tuple[Any, bytes | None]:
        """redact_flagged(value), and value's JSON as the prefilter read it (orjson's compact form; None when it was not
        written: no profile, or not JSON as it stands). A served call hands it on to the request comparison
        (replay.compare), which would otherwise write the same request again."""
        if not self.active:
            return value, None
        try:
            written = orjson.dumps(value)
        except TypeError:  # not JSON as it stands: walk it
            return self._redact(value, False), None
        return (self._redact(value, False) if self.suspicious(written) else value), written

    def redact_event(self, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
        """An event's data with the profile applied, and kept consistent with what was removed: every chunk of a stream
        whose text held a secret is redacted, strict removes the OS entropy the program read, and a `valueHash` or
        `cacheKey` is computed over the data as kept (no hash of a redacted value stays)."""
        if not self.active:
            return data
        if type(data) is not dict:
            return self._redact(data, False)
        stream = data.get("stream")
        if type(stream) is list:  # its chunks are redacted together, as the text they add up to
            kept = self._redact({key: value for key, value in data.items() if key != "stream"}, False)
            kept["stream"] = self._redact_stream(stream)
        else:
            kept = self._redact(data, False)
        if self.strict and event_type == "nondeterministic" and kept.get("source") == "entropy" and "value" in kept:
            kept["value"] = REDACTED
        if "valueHash" in kept:
            from openwop_cli.format.canonical import content_hash

            kept["valueHash"] = content_hash(kept.get("value"))
        if event_type == "llm_request" and "cacheKey" in kept and kept.get("request") != data.get("request"):
            from openwop_cli.format.cachekey import request_keys
            from openwop_cli.format.events import tagged_bytes

            kept.pop("toolSchemaHash", None)
            kept.update(request_keys(str(kept.get("provider", "")), str(kept.get("model", "")),
                                     tagged_bytes(kept.get("request"))))
        return kept

    def shown(self, events: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        """Events as wop shows them (report, export): each one's data redacted where the prefilter flags it, so a
        capture made before a format was known, or holding a secret of today's environment, shows none."""
        for event in events:
            data = event.get("data")
            if type(data) is dict and self.active and self.suspicious(orjson.dumps(data, default=repr)):
                event = {**event, "data": self.redact_event(str(event.get("type")), data)}
            yield event

    def scrub_text(self, text: str) -> str:
        """A string with secret-looking values (see the module docstring) and known secret values replaced."""
        spans = self.secret_spans(text)
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(REDACTED)
            last = end
        out.append(text[last:])
        return "".join(out)

    def secret_spans(self, text: str) -> list[tuple[int, int]]:
        """Where text holds secrets: sorted, disjoint (start, end) spans, each to be replaced by one marker."""
        spans = []
        for secret in self.secrets:
            start = text.find(secret)
            while start >= 0:
                spans.append((start, start + len(secret)))
                start = text.find(secret, start + len(secret))
        if len(text) < _SHORTEST_FOUND:
            return spans
        for pattern, found in _patterns().candidates(text):
            spans.extend(found(pattern, text))
        return _merged(spans) if len(spans) > 1 else spans

    def is_secret_key(self, key: str) -> bool:
        """True when the profile redacts the whole value stored under this key."""
        return SECRET_KEY.search(key) is not None

    def _redact(self, value: Any, content: bool) -> Any:
        kind = type(value)
        if kind is str:
            if content:
                return REDACTED
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
        """A list's items redacted; an item after a secret flag (`["--token", "X"]`, an argv) is a secret, and so is
        one after `-p` that looks like a password (not a number, a path, a module or a `no:` plugin, a plain word)."""
        out: list[Any] = []
        after_flag: str | bool = False  # "-p", or whether the item before is a secret flag
        patterns = _patterns()
        for child in items:
            out.append(REDACTED if after_flag and type(child) is str and _is_flag_value(child, after_flag)
                       else self._redact(child, content))
            after_flag = (type(child) is str and ("-p" if child == "-p" else patterns.secret_flag.fullmatch(child)
                                                  is not None))
        return out

    def _redact_stream(self, stream: list[Any]) -> list[Any]:
        """A stream's chunks redacted: each chunk's text where the text the chunks add up to holds a secret (one split
        across chunks among them: the first chunk of a secret gets the marker, the others lose their part of it), then
        each chunk's payload as any JSON value (parsed, so a pattern never cuts through its JSON)."""
        payloads = [_chunk_payload(chunk) for chunk in stream]
        chunk_leaves = [_delta_leaves(payload[0]) if payload is not None else [] for payload in payloads]
        leaves = [leaf for found in chunk_leaves for leaf in found]
        text = "".join(container[key] for container, key in leaves)
        cut = _cut_out(leaves, text, self.secret_spans(text))
        kept = []
        for chunk, payload, found in zip(stream, payloads, chunk_leaves):
            if payload is None:
                kept.append(self._redact(chunk, False))
                continue
            rest = self._redact({key: value for key, value in chunk.items() if key != "data"}, False)
            value = self._redact(payload[0], False)
            changed = value != payload[0] or any(id(container) in cut for container, _ in found)
            data = _payload_text(value, payload[1]) if changed else chunk["data"]  # else its bytes as they were sent
            kept.append({key: data if key == "data" else rest[key] for key in chunk})
        return kept


def _cut_out(leaves: list[tuple[Any, str]], text: str, spans: list[tuple[int, int]]) -> set[int]:
    """Rewrite the leaves (whose strings, joined, are text) without the spans: the leaf where a span starts gets the
    marker in its place, every leaf it runs through loses its part. Returns the ids of the containers rewritten."""
    position, span_index, cut = 0, 0, set()
    for container, key in leaves:
        start, end = position, position + len(container[key])
        position = end
        if span_index >= len(spans) or spans[span_index][0] >= end:
            continue
        kept, cursor = [], start
        while span_index < len(spans) and spans[span_index][0] < end:
            secret_start, secret_end = spans[span_index]
            if secret_start >= cursor:
                kept.append(text[cursor:secret_start])
                kept.append(REDACTED)
            cursor = max(cursor, min(secret_end, end))
            if secret_end > end:
                break
            span_index += 1
        kept.append(text[cursor:end])
        container[key] = "".join(kept)
        cut.add(id(container))
    return cut


def _is_flag_value(value: str, flag: Any) -> bool:
    """Whether the argv item after a flag is its secret value: always after a secret flag; after `-p` only when it
    looks like a password."""
    if flag != "-p":
        return True
    patterns = _patterns()
    return (patterns.password_like.fullmatch(value) is not None and patterns.module_name.fullmatch(value) is None
            and "/" not in value and not value.startswith("-") and not os.path.exists(value))


def _own_spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The spans one of _MORE_VALUES replaces: the match after its `keep` group (the `value` group when it has one and
    the value is worth hiding)."""
    spans = []
    for match in pattern.finditer(text):
        groups = match.groupdict()
        keep, value = groups.get("keep") or "", groups.get("value")
        if value is not None and not _hides_a_secret(keep, value):
            continue
        start = match.start("keep") + len(keep) if groups.get("keep") is not None else match.start()
        spans.append((start, match.end()))
    return spans


def _library_spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The spans a library pattern finds: its longest group when that is long enough to be the secret (a labelled
    value), else the whole match; either runs on to the end of the token (a key longer than the pattern asks for)."""
    spans = []
    for match in pattern.finditer(text):
        start, end = match.span()
        while start < end and text[start] in _CONTEXT:  # what a pattern matches around a token (`(?:\s|=|"|^)AKC…`)
            start += 1
        while end > start and text[end - 1] in _CONTEXT_AFTER:
            end -= 1
        if pattern.groups:
            longest = max(range(1, pattern.groups + 1), key=lambda group: len(match.group(group) or ""))
            if len(match.group(longest) or "") >= _LIBRARY_GROUP:
                start, end = match.span(longest)
        tail = _TOKEN_TAIL.match(text, end)
        spans.append((start, tail.end() if tail else end))
    return spans


def _selector(patterns: list[tuple[str, int]]) -> Any:
    """A Hyperscan matcher telling which of patterns ((source, flags)) may match a text (their portable forms,
    compiled once and cached like the prefilter's), so a string pays one scan and only the patterns it may hold run
    in Python; None without Hyperscan (a string then pays one `re` pass over all of them first)."""
    from openwop_cli.format.detectors import portable_forms

    forms = portable_forms([(source, flags & (re.IGNORECASE | re.DOTALL | re.MULTILINE)) for source, flags in patterns])
    translated = [form for form in forms if form is not None]
    if len(translated) < len(forms):
        return None
    try:
        return HyperscanMatcher(translated)
    except ImportError:
        return None


def _aws_secret_spans(key_id: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The spans of 40-character AWS secret keys in a text that holds an access key id (the id itself is the library's
    to find)."""
    if key_id.search(text) is None:
        return []
    return [match.span() for match in _patterns().aws_secret_key.finditer(text)]


def _scoped(compiled: re.Pattern[str]) -> str:
    """A compiled pattern as a group carrying its flags, to join with others."""
    letters = "".join(letter for flag, letter in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
                      if compiled.flags & flag)
    return f"(?{letters}:{compiled.pattern})" if letters else f"(?:{compiled.pattern})"


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans sorted and joined where they overlap or touch."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(span for span in spans if span[1] > span[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _chunk_payload(chunk: Any) -> tuple[Any, str] | None:
    """A stream chunk's parsed JSON payload and where it came from (`data`, or the base64 `bytes` inside it of a Bedrock
    InvokeModel stream), or None for a chunk without one."""
    if type(chunk) is not dict or type(chunk.get("data")) is not str:
        return None
    try:
        payload = orjson.loads(chunk["data"])
    except orjson.JSONDecodeError:
        return None
    if type(payload) is dict and type(payload.get("bytes")) is str and len(payload) == 1:
        import base64
        import binascii

        try:
            return orjson.loads(base64.b64decode(payload["bytes"], validate=True)), "bytes"
        except (binascii.Error, orjson.JSONDecodeError):
            return None
    return payload, "data"


def _delta_leaves(payload: Any) -> list[tuple[Any, str]]:
    """(container, key) of every string in a chunk's payload under a key a message's text is assembled from, in order."""
    leaves, pending = [], [payload]
    while pending:
        item = pending.pop()
        if type(item) is dict:
            for key, value in item.items():
                if type(value) is str and key in _DELTA_KEYS:
                    leaves.append((item, key))
            pending.extend(reversed([value for value in item.values() if type(value) in (dict, list)]))
        elif type(item) is list:
            pending.extend(reversed([value for value in item if type(value) in (dict, list)]))
    return leaves


def _payload_text(value: Any, source: str) -> str:
    """A chunk's payload written back as its `data` text (re-serialized: it parses the same, only redacted parts
    differ), into base64 `bytes` again for a Bedrock InvokeModel chunk."""
    if source == "bytes":
        import base64

        return orjson.dumps({"bytes": base64.b64encode(orjson.dumps(value)).decode("ascii")}).decode()
    return orjson.dumps(value).decode()


def secret_env_values(environ: Mapping[str, str]) -> list[str]:
    """Values of environment variables whose names look like secrets (API keys, tokens, passwords, `*KEY*`, `*PASS*`,
    `*_PAT`), leaving out what is plainly no secret: a boolean word or an existing path."""
    return [value for name, value in environ.items()
            if (SECRET_ENV_NAME.search(name) or SECRET_KEY.search(name)) and len(value) >= MIN_SECRET_LENGTH
            and value.lower() not in _NOT_SECRETS and not (value.startswith(("/", "~")) and os.path.exists(value))]


PREFILTER_ENGINES = ("hyperscan", "re2", "re")


def compile_prefilter(secrets: Iterable[str], engine: str | None = None) -> Any:
    """The hot-path matcher over serialized bytes (secret keys, secret-looking values, known secrets):
    an object whose `search(data)` is truthy on a possible secret, on `engine` or the fastest installed.

    Compiled once per set of secrets in a process (a batch of replays shares one; matchers are thread-safe)."""
    return _compiled_prefilter(tuple(secrets), engine)


@functools.lru_cache(maxsize=8)
def _compiled_prefilter(secrets: tuple[str, ...], engine: str | None) -> Any:
    literals = [re.escape(orjson.dumps(secret)[1:-1].decode()) for secret in secrets]
    patterns = prefilter_patterns()
    for name in (engine,) if engine else PREFILTER_ENGINES:
        try:
            if name == "hyperscan":
                return HyperscanMatcher(list(patterns), secret_parts=literals)
            if name == "re2":
                import re2

                return re2.compile("|".join([*patterns, *literals]).encode())
        except ImportError:
            if engine:
                raise
            continue
    return re.compile("|".join([*patterns, *literals]).encode())


def _hides_a_secret(label: str, value: str) -> bool:
    """Whether the value after a secret-named label is worth hiding: anything after a password label, a header's
    (`Authorization:`, `Cookie:`) or a flag,
    else a value that is neither a plain word nor a number and has the variety of a generated secret."""
    if value.lower() in _NOT_SECRETS:
        return False
    patterns = _patterns()
    if label.lstrip().startswith("-") or patterns.password_word.search(label) or patterns.header_label.match(label):
        return True
    return len(value) >= 8 and not value.isalpha() and not value.isdigit() and _entropy(value) >= 3.0


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(count / len(text) * math.log2(count / len(text)) for count in counts.values())
