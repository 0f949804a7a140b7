"""The folded state as a tree: channels (with their reducer and write count), variables, findings."""

from typing import Any

from rich.console import Console
from rich.text import Text

from openwop_cli.report.escape import clean
from openwop_cli.report.tree import json_tree


def render_state(console: Console, manifest: dict[str, Any], snapshot: dict[str, Any], findings: list[Any],
                 meta: dict[str, dict[str, Any]]) -> None:
    """Print the state at snapshot['atSeq'] for people."""
    console.print(Text.assemble(("state", "bold"), " of ", (clean(manifest.get("captureId")), "bold"),
                                clean(f" {manifest.get('name') or ''}".rstrip()), "  at seq ",
                                (str(snapshot["atSeq"]), "seq")))
    for part in ("channels", "variables"):
        values = snapshot.get(part)
        if values is None:
            continue
        if not values:
            console.print(Text(f"no {part}", style="muted"))
            continue
        labelled = {_label(name, meta.get(name)) if part == "channels" else name: value for name, value in values.items()}
        console.print(json_tree(labelled, part))
    for finding in findings:
        console.print(Text.assemble(("  ! ", "warning"), (f"seq {finding.seq} ", "seq"), (clean(finding.code), "warning"),
                                    f"  {clean(finding.message)}"))


def _label(name: str, info: dict[str, Any] | None) -> str:
    if not info:
        return name
    version = f", schema v{info['schemaVersion']}" if "schemaVersion" in info else ""
    return f"{name}  ({info.get('reducer')}, {info.get('writes')} writes{version})"
