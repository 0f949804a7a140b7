"""`[tool.wop]` in pyproject.toml: project defaults read by the CLI and the pytest plugin.

    [tool.wop]
    capture_dir = "tests/captures"   # where the pytest plugin keeps one capture per test
    redact = "default"               # none | default | strict
    policy = "strict"                # strict | lenient
    record = "once"                  # the pytest plugin's record mode when --wop-record is not given
    ignore = ["$.response.id"]       # JSON paths `wop diff` leaves out
    ambient = true                   # record clock/uuid/random reads of unmodified code (wop capture, the plugin)
    replay = ["tests/runs"]          # directories whose captures pytest collects as tests, one per capture
    telemetry = ["metrics.example.com"]  # more telemetry hosts a replay serves without comparing (replay.telemetry)
"""

import re
from pathlib import Path
from typing import Any, NamedTuple

from openwop_cli.errors import UsageError

RECORD_MODES = ("none", "once", "new", "all")
REDACT_PROFILES = ("none", "default", "strict")  # weakest first
# The key `wop` as TOML can write it (bare or quoted; in a table header, a dotted key or an inline table): a
# pyproject.toml without it has no [tool.wop] and is not parsed (importing tomllib costs more than a small capture).
_WOP_KEY = re.compile(r"""(?:^|[\s.\[{,"'])wop(?:[\s.=\]"']|$)""", re.MULTILINE)


class Settings(NamedTuple):
    """The project's wop settings (defaults when there is no [tool.wop]); a named tuple, not a dataclass, because
    `wop capture` reads it before it starts the program, when importing dataclasses would cost that start."""

    root: Path
    capture_dir: Path
    redact: str
    policy: str
    record: str
    ignore: list[str]
    ambient: bool
    replay: list[Path]
    telemetry: list[str] = []
    source: Path | None = None  # the pyproject.toml that set `redact`, if one did


def read_json_file(path: Path, label: str) -> tuple[bytes, Any]:
    """A JSON file a user pointed wop at (label: the option, e.g. --workflow): its bytes and its value.

    Only a regular file of at most MAX_INPUT_BYTES is read (never a FIFO or a device); anything else, or
    an unreadable or non-JSON file, is a UsageError naming the option and the file."""
    import orjson

    from openwop_cli.format.files import MAX_INPUT_BYTES, read_regular

    try:
        raw = read_regular(Path(path), MAX_INPUT_BYTES, UsageError, f"{label} {path}", follow=True)
    except OSError as exc:
        raise UsageError(f"cannot read {label} {path}: {exc.strerror or exc}") from None
    try:
        return raw, orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{label} {path} is not JSON: {exc}") from None


def load_settings(start: Path | None = None) -> Settings:
    """[tool.wop] of the nearest pyproject.toml at or above start (the current directory by default)."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            table = _wop_table(pyproject)
            return _from_table(directory, table)._replace(source=pyproject if "redact" in table else None)
    return _from_table(here, {})


def redaction_off_warning(settings: Settings) -> str | None:
    """The warning for redaction turned off by a config file rather than the command line (a project's
    pyproject.toml, in any directory above this one, must not silently record this user's secrets in clear)."""
    if settings.redact != "none" or settings.source is None:
        return None
    return (f'redaction is off: [tool.wop] redact = "none" in {settings.source}; secrets this run sees are '
            "recorded in clear (--redact default turns it back on)")


def stronger_profile(*profiles: Any) -> str:
    """The strongest of redaction profiles (none < default < strict); one wop does not know counts as strict."""
    known = [profile if profile in REDACT_PROFILES else "strict" for profile in profiles]
    return max(known, key=REDACT_PROFILES.index)


def replay_profile(source_manifest: dict[str, Any]) -> str:
    """The redaction profile a replay or fork of a capture records with: the stronger of this user's ([tool.wop]
    redact, else default) and the capture's own, so a received capture recorded with `none` never makes this run
    write this user's secrets in clear."""
    redaction = source_manifest.get("redaction")
    recorded = redaction.get("profile") if isinstance(redaction, dict) else None
    return stronger_profile(load_settings().redact, recorded if recorded is not None else "default")


def _wop_table(pyproject: Path) -> dict[str, Any]:
    """[tool.wop] of pyproject, read once per process while the file stays the one read (its inode, size and
    modification time): a replay reads the settings before it starts the program and again for its redaction
    profile, the pytest plugin for every test."""
    try:
        status = pyproject.stat()
        identity = (status.st_ino, status.st_size, status.st_mtime_ns)
        known = _tables.get(pyproject)
        if known is not None and known[0] == identity:
            return known[1]
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read [tool.wop] from {pyproject}: {exc}") from None
    table = _parsed_table(pyproject, text) if _WOP_KEY.search(text) else {}
    _tables[pyproject] = (identity, table)
    return table


_tables: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}  # pyproject → (its identity, [tool.wop])


def _parsed_table(pyproject: Path, text: str) -> dict[str, Any]:
    """[tool.wop] of a pyproject.toml whose text names the key (tomllib is imported here only: see _WOP_KEY)."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"cannot read [tool.wop] from {pyproject}: {exc}") from None
    tool = data.get("tool", {})
    table = tool.get("wop", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise UsageError(f"[tool.wop] in {pyproject} must be a table")
    return table


def _from_table(root: Path, table: dict[str, Any]) -> Settings:
    choices = {"redact": REDACT_PROFILES, "policy": ("strict", "lenient"), "record": RECORD_MODES}
    for key, allowed in choices.items():
        if key in table and table[key] not in allowed:
            raise UsageError(f"[tool.wop] {key} = {table[key]!r}: use one of {', '.join(allowed)}")
    ignore = table.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(path, str) for path in ignore):
        raise UsageError("[tool.wop] ignore must be a list of JSON paths")
    ambient = table.get("ambient", True)
    if not isinstance(ambient, bool):
        raise UsageError(f"[tool.wop] ambient = {ambient!r}: use true or false")
    replay = table.get("replay", [])
    if not isinstance(replay, list) or not all(isinstance(path, str) and path for path in replay):
        raise UsageError("[tool.wop] replay must be a list of directories, e.g. replay = [\"tests/runs\"]")
    telemetry = table.get("telemetry", [])
    if not isinstance(telemetry, list) or not all(isinstance(host, str) and host for host in telemetry):
        raise UsageError("[tool.wop] telemetry must be a list of host names, e.g. telemetry = [\"metrics.example.com\"]")
    capture_dir = table.get("capture_dir", "tests/captures")
    if not isinstance(capture_dir, str) or not capture_dir:
        raise UsageError(f"[tool.wop] capture_dir = {capture_dir!r}: use a directory, "
                         "e.g. capture_dir = \"tests/captures\"")
    return Settings(root=root, capture_dir=root / capture_dir,
                    redact=table.get("redact", "default"), policy=table.get("policy", "strict"),
                    record=table.get("record", "once"), ignore=ignore, ambient=ambient,
                    replay=[root / path for path in replay], telemetry=telemetry)
