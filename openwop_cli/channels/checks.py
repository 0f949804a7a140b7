"""What a compliant engine refuses (openwop-channels.md), as one set of rules for the fold and the SDK.

A write is refused for access (`channel_access_denied`), a reducer that forbids writes from another
engine (`channel_cross_engine_write_forbidden`), an older schemaVersion the current schema does
not accept (`channel_schema_breaking_change`) or a value its schema rejects (`validation_error`);
a legacy variable write to a declared channel, and a declaration with `ttlMs` out of range, are
`validation_error` too. Dependency-free (jsonschema is asked for by the caller's `schema_problem`),
so the runtime can use it inside the recorded program.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CROSS_ENGINE_FORBIDDEN = frozenset({"replace", "merge"})
MAX_TTL_MS = 365 * 24 * 60 * 60 * 1000
BREAKING_HINT = "create a new channel name and copy via a one-shot node"
SENSITIVE_WORDS = ("secret", "password", "private")
CHECKED_DECLARATION_KEYS = frozenset({"access", "schema", "schemaVersion", "compatibleWith"})

SchemaCheck = Callable[[dict[str, Any], Any], "str | None"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an engine would refuse a write or a declaration: the spec's error code and a one-line message."""

    code: str
    message: str


def write_refusal(name: str, value: Any, data: dict[str, Any], declaration: dict[str, Any], reducer: str,
                  schema_problem: SchemaCheck) -> Refusal | None:
    """The refusal of a channel write of value (data: the write in the channel.written shape), or None."""
    if not checks_writes(declaration) and "sourceEngineId" not in data and "schemaVersion" not in data:
        return None
    if not writer_allowed(declaration.get("access"), data.get("nodeId"), data.get("typeId")):
        return Refusal("channel_access_denied", f"node {data.get('nodeId')!r} may not write to channel {name!r}")
    if data.get("sourceEngineId") and reducer in CROSS_ENGINE_FORBIDDEN:
        return Refusal("channel_cross_engine_write_forbidden",
                       f"channel {name!r} uses reducer {reducer!r}, which forbids writes from engine "
                       f"{data['sourceEngineId']!r}")
    return schema_refusal(name, value, data.get("schemaVersion"), declaration, schema_problem)


def checks_writes(declaration: dict[str, Any]) -> bool:
    """True when a declaration says something a write is checked against (access, schema, schema versions); a write
    to any other channel is refused only for what it carries itself (sourceEngineId, schemaVersion)."""
    return not CHECKED_DECLARATION_KEYS.isdisjoint(declaration)


def schema_refusal(name: str, value: Any, written: Any, declaration: dict[str, Any],
                   schema_problem: SchemaCheck) -> Refusal | None:
    """The spec's fold table: a current-version write must pass the schema; an older one must be listed in
    compatibleWith AND pass the current schema (else channel_schema_breaking_change); a newer one folds."""
    current = declaration.get("schemaVersion", 1)
    if written is None:
        written = current
    older = isinstance(written, int) and isinstance(current, int) and written < current
    if older and written not in (declaration.get("compatibleWith") or []):
        return Refusal("channel_schema_breaking_change",
                       f"channel {name!r} was written with schema v{written}, which v{current} does not list in "
                       f"compatibleWith; {BREAKING_HINT}")
    schema = declaration.get("schema")
    newer = isinstance(written, int) and isinstance(current, int) and written > current
    if not isinstance(schema, dict) or newer:
        return None
    problem = schema_problem(schema, value)
    if problem is None:
        return None
    if older:
        return Refusal("channel_schema_breaking_change",
                       f"channel {name!r} has a breaking schema change between v{written} and v{current}: "
                       f"{problem}; {BREAKING_HINT}")
    return Refusal("validation_error", f"write to {name!r} fails its schema: {problem}")


def variable_refusal(key: str, declarations: dict[str, Any]) -> Refusal | None:
    """Channel-aware mode: a legacy variable write to a declared channel's name is refused."""
    if key in declarations:
        return Refusal("validation_error", f"{key!r} is a declared channel: write it with wop.state.write "
                                           "(the spec's ctx.channels.write), not as a variable")
    return None


def declaration_refusal(name: str, declaration: Any) -> Refusal | None:
    """A ChannelDeclaration an engine refuses at registration: not an object, access or compatibleWith of the wrong
    shape, or ttlMs out of 0..1 year."""
    if not isinstance(declaration, dict):
        return Refusal("validation_error", f"the declaration of channel {name!r} is not an object")
    access = declaration.get("access")
    if not (access in (None, "public", "private") or isinstance(access, dict)
            and isinstance(access.get("writers", []), list)):
        return Refusal("validation_error", f"channel {name!r}: access must be public, private or "
                                           f"{{writers: [...]}}; got {access!r}")
    if not isinstance(declaration.get("compatibleWith", []), list):
        return Refusal("validation_error", f"channel {name!r}: compatibleWith must be a list of schema versions; "
                                           f"got {declaration['compatibleWith']!r}")
    ttl = declaration.get("ttlMs")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 <= ttl <= MAX_TTL_MS):
        return Refusal("validation_error", f"channel {name!r}: ttlMs must be an integer from 1 to {MAX_TTL_MS} "
                                           f"(one year), or 0 for none; got {ttl!r}")
    return None


def looks_sensitive(name: str, declaration: dict[str, Any]) -> bool:
    """The spec's tooling hint: a channel named like secret/password/private with no access restriction (a warning
    only: an engine never enforces on naming alone)."""
    lowered = name.lower()
    return any(word in lowered for word in SENSITIVE_WORDS) and declaration.get("access") in (None, "public")


def writer_allowed(access: Any, node_id: Any, type_id: Any) -> bool:
    """The spec's access check for a write: public/absent allows, private denies, an allowlist matches
    the nodeId exactly or the typeId by dotted-prefix wildcard (`core.ai.*`); `*` alone matches every node,
    one known only by its nodeId too."""
    if access in (None, "public"):
        return True
    if access == "private":
        return False
    if not isinstance(access, dict) or "writers" not in access:
        return True
    for entry in access.get("writers") or []:
        if entry == "*" or entry == node_id:
            return True
        if isinstance(entry, str) and isinstance(type_id, str) and entry.endswith(".*") \
                and type_id.startswith(entry[:-1]):
            return True
    return False
