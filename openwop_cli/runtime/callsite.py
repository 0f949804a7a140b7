"""Where in the code a call was made: the frame a recorded event is attributed to.

Every source file is put once in one of five places — wop itself, the standard library, an installed
package that only carries calls (plumbing), another installed package, or the program — and the answer
is cached by file name, so
finding a call site costs a walk up the stack with one dictionary lookup per frame.

- `program_site()`: the first frame in the program's own code (not the stdlib, not installed
  packages, not wop). This is `origin.site` on boundary events.
- `caller_site(depth)`: the frame that called into an intercepted stdlib function, or None when
  that caller is the stdlib, wop, or a package that only carries calls (HTTP clients, AWS signing,
  retries, telemetry: PLUMBING_PACKAGES) — their clock and random reads are internals. Other
  installed packages count as callers: LangGraph minting a checkpoint id is recorded.

A site is `{"file", "line", "function"}`; `file` is relative to the program's root (the working
directory the run started in) for program files, and relative to its site-packages directory for
installed packages, so a site is the same on every machine that runs the program.
"""

import linecache
import os
import sys
import zlib
from typing import Any

WOP = 0
STDLIB = 1
PLUMBING = 2
PACKAGE = 3
PROGRAM = 4

# Installed packages that carry calls rather than make them: HTTP clients, AWS signing, SDK base clients,
# event loops, retries, telemetry and terminal output. Their clock and random reads go into headers,
# signatures, retry delays, trace ids and progress bars — never into what a replay compares — so, like the
# standard library's, they are not recorded, and the frame that opened a connection is looked for above them.
PLUMBING_PACKAGES = frozenset({
    "requests", "urllib3", "httpx", "httpcore", "httpx2", "httpcore2", "h11", "h2", "hpack", "aiohttp",
    "aiohappyeyeballs", "aiosignal", "yarl", "multidict", "frozenlist", "anyio", "sniffio", "trio", "websockets",
    "wsproto", "certifi", "idna", "charset_normalizer", "botocore", "boto3", "s3transfer", "awscrt", "dateutil",
    "tenacity", "backoff", "opentelemetry", "langsmith", "sentry_sdk", "grpc", "rich", "tqdm", "click", "typer",
    "google/auth", "google/api_core", "jiter", "distro",
})
PLUMBING_FILES = frozenset({"_base_client.py"})  # the Stainless SDKs' (openai, anthropic, …) transport layer

_WOP_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_PACKAGE_DIRS = ("site-packages", "dist-packages")
_places: dict[str, tuple[int, str]] = {}
_outside_program: set[str] = set()  # files place() found not to be the program's: see program_site
_sites: dict[int, tuple[Any, dict[int, dict[str, Any]]]] = {}  # id(code) -> (code, {instruction offset: site})
_root: list[str] = []


def _stdlib_prefixes() -> tuple[str, ...]:
    """Where the standard library's Python files are: the directory of one of them (linecache's, loaded from a file
    wherever the stdlib is, a zip too), as given and resolved. Not sysconfig.get_paths(): it loads the build's
    configuration, a millisecond of every recorded process's start-up."""
    directory = os.path.dirname(os.path.abspath(linecache.__file__))
    return tuple(sorted({prefix.rstrip(os.sep) + os.sep for prefix in (directory, os.path.realpath(directory))}))


_STDLIB = _stdlib_prefixes()  # at start-up: worked out on a first call site, a signal handler could come mid-import


def program_root() -> str:
    """The directory program files are named relative to (the working directory at the first lookup)."""
    if not _root:
        _root.append(os.path.realpath(os.getcwd()) + os.sep)
    return _root[0]


def set_program_root(path: str) -> None:
    """Name program files relative to path (a replay runs in the recorded run's directory)."""
    _root[:] = [os.path.realpath(path) + os.sep]
    _places.clear()
    _outside_program.clear()
    _sites.clear()


def place(filename: str) -> tuple[int, str]:
    """(WOP | STDLIB | PACKAGE | PROGRAM, the file name a site shows) for a code object's file name."""
    found = _places.get(filename)
    if found is None:
        found = _places[filename] = _classify(filename)
    return found


def _classify(filename: str) -> tuple[int, str]:
    if filename.startswith("<"):
        return (STDLIB, filename) if filename.startswith("<frozen ") else (PROGRAM, filename)
    path = os.path.abspath(filename)
    if path.startswith(_WOP_ROOT):
        return WOP, path[len(_WOP_ROOT):]
    parts = path.split(os.sep)
    for marker in _PACKAGE_DIRS:
        if marker in parts:
            index = len(parts) - 1 - parts[::-1].index(marker)
            inside = parts[index + 1:]
            return _package_place(inside), "/".join(inside)
    if path.startswith(_STDLIB):
        return STDLIB, path
    root = program_root()
    if path.startswith(root):
        return PROGRAM, path[len(root):].replace(os.sep, "/")
    return PROGRAM, path


def _package_place(inside: list[str]) -> int:
    """PLUMBING for the packages that carry calls (see PLUMBING_PACKAGES), else PACKAGE."""
    if inside[0] in PLUMBING_PACKAGES or "/".join(inside[:2]) in PLUMBING_PACKAGES or inside[-1] in PLUMBING_FILES:
        return PLUMBING
    return PACKAGE


def site_of(frame: Any, file: str) -> dict[str, Any]:
    """The site of a frame whose file shows as file, remembered by code object and instruction: Python works
    f_lineno out by walking the code's line table from its start (0.7 us at the end of a 200-line module), and a
    program calls from the same few places. The same dict each time: events share it, nobody changes it."""
    code = frame.f_code
    known = _sites.get(id(code))
    if known is None or known[0] is not code:  # a new code object (or a dead one's id reused)
        known = _sites[id(code)] = (code, {})
    sites, instruction = known[1], frame.f_lasti
    site = sites.get(instruction)
    if site is None:
        site = sites[instruction] = _site(code, frame.f_lineno, file)
    return site


def _site(code: Any, line: int, file: str) -> dict[str, Any]:
    """A site that survives edits elsewhere: besides its file and line, the enclosing function's qualified name, a
    hash of the line's text and which line of that text it is in the function (`text`, `occurrence`; absent when
    the source cannot be read)."""
    site: dict[str, Any] = {"file": file, "line": line, "function": _qualified_name(code)}
    lines = linecache.getlines(code.co_filename)
    if line and 0 < line <= len(lines):
        text = _line_text(lines[line - 1])
        first = max(code.co_firstlineno, 1)
        site["text"] = f"{zlib.crc32(text.encode()):08x}"
        site["occurrence"] = sum(1 for number in range(first, line + 1) if _line_text(lines[number - 1]) == text)
    return site


def _qualified_name(code: Any) -> str:
    return code.co_qualname.replace("<locals>.", "")


def _line_text(line: str) -> str:
    """A line's code as a site knows it: without its indentation and trailing whitespace."""
    return line.strip()


def program_site(depth: int = 1) -> dict[str, Any] | None:
    """The first frame, from the caller `depth` frames up, that is in the program's own code. The frames above an
    HTTP call (its client's, wop's) are passed at one set lookup each."""
    frame: Any = sys._getframe(depth + 1)
    outside = _outside_program
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename not in outside:
            kind, file = place(filename)
            if kind == PROGRAM:
                return site_of(frame, file)
            outside.add(filename)
        frame = frame.f_back
    return None


def caller_site(depth: int = 1) -> dict[str, Any] | None:
    """The site of the frame `depth` frames above the caller, or None when it is the stdlib or wop."""
    frame: Any = sys._getframe(depth + 1)
    code = frame.f_code
    found = _places.get(code.co_filename) or place(code.co_filename)
    if found[0] <= PLUMBING:
        return None
    return site_of(frame, found[1])


def opening_site(depth: int = 1) -> dict[str, Any] | None:
    """The first frame outside the standard library and the plumbing packages, from the caller `depth` frames
    up: who opened a connection through socket/http.client/asyncio/aiohttp. None when that frame is wop's."""
    opened = opening_place(depth + 1)
    return None if opened is None else opened[1]


def opening_place(depth: int = 1) -> tuple[int, dict[str, Any]] | None:
    """opening_site, with the place (PROGRAM or PACKAGE) of its frame's code."""
    frame: Any = sys._getframe(depth + 1)
    places = _places
    while frame is not None:
        code = frame.f_code
        found = places.get(code.co_filename) or place(code.co_filename)
        if found[0] not in (STDLIB, PLUMBING):
            if found[0] == WOP:
                return None
            return found[0], site_of(frame, found[1])
        frame = frame.f_back
    return None
