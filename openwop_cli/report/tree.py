"""JSON values as rich trees: one branch per object key or array index."""

from typing import Any

import orjson
from rich.text import Text
from rich.tree import Tree

from openwop_cli.report.escape import clean


def json_tree(value: Any, label: str = "event") -> Tree:
    """A tree of a JSON value; scalars are shown as JSON on their key's line."""
    tree = Tree(Text(label, style="bold"))
    _add(tree, value)
    return tree


def _add(branch: Tree, value: Any) -> None:
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        name = f"[{key}]" if isinstance(key, int) else clean(key)
        if isinstance(child, (dict, list)) and child:
            kind = "{…}" if isinstance(child, dict) else f"[{len(child)}]"
            _add(branch.add(Text.assemble((name, "path"), " ", (kind, "muted"))), child)
        else:
            branch.add(Text.assemble((name, "path"), ": ", _scalar(child)))


def _scalar(value: Any) -> str:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return clean(orjson.dumps(value).decode())
