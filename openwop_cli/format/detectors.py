"""The secret formats of a maintained pattern library: the regular expressions of detect-secrets' regex plugins.

detect-secrets (Yelp's, on PyPI: the upstream every fork extends) keeps one plugin per credential format (AWS, Azure
storage, GitHub, GitLab, Slack, Stripe, SendGrid, npm, PyPI, Telegram, Discord, JWT, private keys, …), each a
`denylist` of regular expressions. Importing it takes about 0.2 s, more than a small capture's whole run, so its
patterns are read from it once per installed version and kept in the user's cache directory as JSON; every later
process (a recorded program among them) reads that file in microseconds and never imports the library. Its IP
address plugin is left out (an address is no credential), and so are its keyword and entropy plugins, which are no
regular expressions (the redactor has its own rules for secret-named labels).

`portable` rewrites one of these expressions into the form the prefilter compiles (Hyperscan, RE2 or `re`, over
serialized JSON): a lookaround that must hold is matched instead, one that must not and an anchor are dropped (the
result only needs to match more, never less), and every
part that may match a character JSON escapes or writes as several bytes (whitespace, quotes, `.`, negated classes,
non-ASCII) widened to also match its escaped or UTF-8 form, its repeat count left open.
"""

import hashlib
import os
import re
import re._constants as sre  # the parser's node names; re._parser is what re.compile itself uses
import re._parser as sre_parse
from typing import Any

import orjson

LIBRARY = "detect_secrets"
LEFT_OUT = frozenset({"IPPublicDetector"})
_FLAGS_KEPT = re.IGNORECASE | re.DOTALL | re.MULTILINE
_EXTRACTION = 1  # bump when what is read from the library changes, so caches made before are read again
_JSON_ESCAPE = r"\\(?:u[0-9a-fA-F]{4}|[^u])"  # a character JSON writes escaped: \n, \", \\, \u0001
_MULTIBYTE = r"[\x80-\xff]{2,4}"  # a non-ASCII character in orjson's UTF-8
_LONGEST_BOUND = 200  # a repeat bounded above this is left open: Hyperscan refuses very large bounded repeats
_LOWEST_WIDENED = 8


def library_patterns() -> list[tuple[str, str, int]]:
    """(plugin name, regular expression, re flags) of every regex pattern of the installed detect-secrets, from the
    user cache when this version was read before; [] when the library is not installed."""
    import importlib.util

    spec = importlib.util.find_spec(LIBRARY)
    if spec is None or not spec.submodule_search_locations:
        return []
    location = list(spec.submodule_search_locations)[0]
    path = _cache_path(location)
    try:
        with open(path, "rb") as handle:
            return [tuple(entry) for entry in orjson.loads(handle.read())]
    except (OSError, orjson.JSONDecodeError, TypeError):
        pass
    patterns = _read_library()
    write_cache_file(path, orjson.dumps(patterns))
    return patterns


def _cache_path(location: str) -> str:
    """The cache file for the library installed at location: named by its version, where it is and when its
    plugins were installed (a reinstall is read again)."""
    plugins = os.path.join(location, "plugins")
    try:
        with open(os.path.join(location, "__version__.py"), "rb") as handle:
            version = handle.read()
        installed = os.stat(plugins).st_mtime_ns
    except OSError:
        version, installed = b"", 0
    key = hashlib.sha256(orjson.dumps([_EXTRACTION, location, version.decode("latin-1"), installed])).hexdigest()
    from platformdirs import user_cache_dir

    return os.path.join(user_cache_dir("wop", appauthor=False), f"secret-patterns-{key[:32]}.json")


def _read_library() -> list[tuple[str, str, int]]:
    """The library's regex plugins' patterns, read by importing it (the slow path, once per version)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    patterns: list[tuple[str, str, int]] = []
    detectors: dict[str, Any] = get_mapping_from_secret_type_to_class()
    for plugin in sorted(detectors.values(), key=lambda detector: detector.__name__):
        if not issubclass(plugin, RegexBasedDetector) or plugin.__name__ in LEFT_OUT:
            continue
        for expression in plugin().denylist:
            flags = expression.flags & _FLAGS_KEPT
            if expression.flags & re.VERBOSE:  # written out so the cache holds one plain form
                expression = re.compile(_without_verbose_layout(expression.pattern), flags)
            patterns.append((plugin.__name__, expression.pattern, flags))
    return patterns


def _without_verbose_layout(pattern: str) -> str:
    """A re.VERBOSE pattern without its layout (unescaped whitespace and # comments outside classes)."""
    out, index, in_class = [], 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index:index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char.isspace():
            index += 1
            continue
        elif char == "#":
            newline = pattern.find("\n", index)
            index = len(pattern) if newline < 0 else newline
            continue
        out.append(char)
        index += 1
    return "".join(out)


def write_cache_file(path: str, data: bytes) -> None:
    """Write the cache file whole or not at all (another process may be writing it too)."""
    import threading

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError:
        pass


class NotPortable(ValueError):
    """A construct `portable` cannot widen (a backreference): the caller falls back to a pattern matching anything."""


def portable_forms(patterns: list[tuple[str, int]]) -> list[str | None]:
    """Each (pattern, flags) as `portable` writes it (None where it raises NotPortable), from the user cache when
    this code translated these patterns before: parsing a hundred patterns costs more than a small capture."""
    identity = orjson.dumps([_translator_digest(), patterns])
    from platformdirs import user_cache_dir

    path = os.path.join(user_cache_dir("wop", appauthor=False),
                        f"portable-patterns-{hashlib.sha256(identity).hexdigest()[:32]}.json")
    try:
        with open(path, "rb") as handle:
            forms = orjson.loads(handle.read())
        if type(forms) is list and len(forms) == len(patterns) and all(form is None or type(form) is str
                                                                          for form in forms):
            return forms
    except (OSError, orjson.JSONDecodeError):
        pass
    forms = [_portable_or_none(pattern, flags) for pattern, flags in patterns]
    write_cache_file(path, orjson.dumps(forms))
    return forms


def _portable_or_none(pattern: str, flags: int) -> str | None:
    try:
        return portable(pattern, flags)
    except NotPortable:
        return None


def _translator_digest() -> str:
    """What names this version of `portable` (a cache made by another translation is never read)."""
    with open(__file__, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def portable(pattern: str, flags: int = 0) -> str:
    """pattern (Python syntax) as a prefilter pattern over serialized JSON that matches wherever pattern matches in
    a string JSON holds (see the module docstring). Raises NotPortable."""
    text, _ = _sequence(sre_parse.parse(pattern, flags))
    return f"(?i:{text})" if flags & re.IGNORECASE else text


def _sequence(nodes: Any) -> tuple[str, bool]:
    """A parsed sequence as (pattern text, safe): safe when everything it matches is written by JSON as it is."""
    parts, safe = [], True
    for op, argument in nodes:
        text, part_safe = _node(op, argument)
        parts.append(text)
        safe = safe and part_safe
    return "".join(parts), safe


def _node(op: Any, argument: Any) -> tuple[str, bool]:
    if op is sre.LITERAL:
        return _literal(argument)
    if op is sre.NOT_LITERAL:
        return _widened(f"[^{_class_char(argument)}]")
    if op is sre.ANY:
        return _widened(".")
    if op is sre.IN:
        return _in(argument)
    if op is sre.CATEGORY:
        return _in([(op, argument)])
    if op is sre.BRANCH:
        alternatives = [_sequence(branch) for branch in argument[1]]
        return "(?:" + "|".join(text for text, _ in alternatives) + ")", all(safe for _, safe in alternatives)
    if op is sre.SUBPATTERN:
        _, add_flags, _, nodes = argument
        text, safe = _sequence(nodes)
        return ("(?i:" if add_flags & re.IGNORECASE else "(?:") + text + ")", safe
    if op is getattr(sre, "ATOMIC_GROUP", None):
        text, safe = _sequence(argument)
        return f"(?:{text})", safe
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
        return _repeat(*argument)
    if op is sre.ASSERT:  # what must come before or after: matched instead (where it holds, the match holds too)
        text, _ = _sequence(argument[1])
        return f"(?:{text})", False
    if op is sre.AT and argument in _EDGES:  # a string's or line's edge: in JSON, a quote or an escaped line break
        return _EDGES[argument], False
    if op in (sre.AT, sre.ASSERT_NOT):
        return "", True  # dropped: matching more is all a prefilter may do
    raise NotPortable(f"{op} has no portable form")


def _repeat(low: int, high: int, nodes: Any) -> tuple[str, bool]:
    """A repeat; one of a widened part is left open above and asks for at most _LOWEST_WIDENED below (each copy is
    an alternation: Hyperscan refuses a pattern of dozens)."""
    text, safe = _sequence(nodes)
    if not safe:
        return f"(?:{text}){{{min(low, _LOWEST_WIDENED)},}}", False
    bound = str(low) if low == high else f"{low},{high}" if high <= _LONGEST_BOUND else f"{low},"
    return f"(?:{text}){{{bound}}}", high <= _LONGEST_BOUND


def _literal(code: int) -> tuple[str, bool]:
    char = chr(code)
    if 0x20 <= code < 0x7F and char not in '"\\':
        return re.escape(char), True
    if code >= 0x80:
        return "".join(f"\\x{byte:02x}" for byte in char.encode("utf-8")), True
    return f"(?:{_class_char(code)}|{_JSON_ESCAPE})", False


def _in(items: Any) -> tuple[str, bool]:
    """A character class; widened unless every character it takes is one JSON writes as it is."""
    out, safe = [], True
    for op, argument in items:
        if op is sre.NEGATE:
            out.append("^")
            safe = False
        elif op is sre.LITERAL:
            if argument < 0x80:
                out.append(_class_char(argument))
            safe = safe and 0x20 <= argument < 0x7F and chr(argument) not in '"\\'
        elif op is sre.RANGE:
            low, high = argument
            if low < 0x80:
                out.append(f"{_class_char(low)}-{_class_char(min(high, 0x7F))}")
            safe = safe and low >= 0x20 and high < 0x7F and not (low <= 0x22 <= high or low <= 0x5C <= high)
        elif op is sre.CATEGORY:
            out.append(_CATEGORIES[argument])
            safe = safe and argument is sre.CATEGORY_DIGIT
        else:
            raise NotPortable(f"{op} in a character class has no portable form")
    text = "[" + "".join(out) + "]"
    return (text, True) if safe else _widened(text)


def _widened(atom: str) -> tuple[str, bool]:
    """An atom that may match what JSON escapes or writes as several bytes, also matching those forms."""
    return f"(?:{atom}|{_JSON_ESCAPE}|{_MULTIBYTE})", False


def _class_char(code: int) -> str:
    char = chr(code)
    return char if char.isalnum() and code < 0x80 else f"\\x{code:02x}"


_EDGES = {
    **dict.fromkeys((sre.AT_BEGINNING, sre.AT_BEGINNING_STRING, sre.AT_BEGINNING_LINE), r'(?:^|"|\\[nr])'),
    **dict.fromkeys((sre.AT_END, sre.AT_END_STRING, sre.AT_END_LINE), r'(?:$|\\?"|\\[nr])'),
}
_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W",
}
