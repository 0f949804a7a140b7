"""Check the package's import graph on its own, without import-linter: every import counts, those inside functions too.

Prints each import cycle between modules, each program-side module that imports the host side, and each import that
points up the layers of docs/architecture.md. Exit 0 when there is none, 1 otherwise. Usage:
    python scripts/check_imports.py [--graph]   (--graph prints every internal import, module -> module)
"""

import ast
import sys
from pathlib import Path

PACKAGE = "openwop_cli"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Lowest first. A module may import its own layer's and lower layers' modules, never a higher layer's.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "home", "_version", "heldsignals"),  # no wop import but each other's
    ("format",),  # the capture contract
    ("config", "trust", "store"),  # settings and the store, read by both processes
    ("wire",),  # what the program's processes and `wop` send each other
    ("channels",),  # pure: reducers, checks and the fold
    ("replay",),  # pure: matching, the engine, keys, divergences
    ("diff",),  # pure: two runs compared
    ("runtime",),  # inside the recorded program
    ("host",),  # the `wop` process around a program
    ("report",),  # rendering
    ("export", "importers"),
    ("cli", "pytest_plugin", "__main__", "__init__"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1]) if parts[-1] == "__init__" else ".".join(parts)


def imports_of(path: Path, name: str) -> set[str]:
    """The package modules a module imports, at any depth of its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}")
    return found


def resolve(target: str, modules: set[str]) -> str | None:
    """The module an imported name lives in: the longest known module prefix of it."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in ROOT.rglob("*.py") if "_bootstrap" not in path.parts}
    modules = set(paths)
    edges: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets = {resolve(target, modules) for target in imports_of(path, name)}
        edges[name] = {target for target in targets if target and target != name and target != PACKAGE}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for number, names in enumerate(LAYERS):
        if top in names:
            return number
    raise SystemExit(f"check_imports: {module} is in no layer; add its top-level name to LAYERS")


def upward(edges: dict[str, set[str]]) -> list[str]:
    return [f"{source} -> {target}" for source in sorted(edges) for target in sorted(edges[source])
            if layer_of(target) > layer_of(source)]


def main() -> int:
    edges = graph()
    if "--graph" in sys.argv:
        for source in sorted(edges):
            for target in sorted(edges[source]):
                print(f"{source} -> {target}")
        return 0
    problems = [f"cycle: {' <-> '.join(component)}" for component in cycles(edges)]
    problems += [f"upward import: {edge}" for edge in upward(edges)]
    for problem in problems:
        print(problem)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports: "
          f"{'no cycle, none upward' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
