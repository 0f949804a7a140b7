"""docs/conformance.md is generated from the conformance tests and never stale; each test names its spec and section."""

import ast
import importlib.util

from tests.conformance.spec import HOST_ONLY, SPECS, slug
from tests.conftest import ROOT


def generator():
    spec = importlib.util.spec_from_file_location("make_conformance", ROOT / "docs" / "make_conformance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_conformance_page_is_up_to_date():
    expected = generator().page()
    on_disk = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    assert on_disk == expected, "run `python docs/make_conformance.py`"
    assert "(docs/conformance.md)" in (ROOT / "README.md").read_text(encoding="utf-8"), "the README links the page"


def test_every_conformance_test_proves_a_requirement_and_is_named_after_its_spec_and_section():
    rows = generator().requirements()
    proven = {row["test"].split("::")[-1]: row for row in rows}
    for path in sorted((ROOT / "tests" / "conformance").glob("test_conformance_*.py")):
        if path.name in ("test_conformance_doc.py", "test_conformance_host_only.py"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                assert node.name in proven, f"{path.name}::{node.name} carries no @requirement"
    for name, row in proven.items():
        assert name.startswith(f"test_{SPECS[row['spec']]}_{slug(row['section'])}"), (name, row["section"])
    assert len({(row["spec"], row["text"]) for row in rows}) == len(rows), "one test per requirement"
    assert {spec for spec, *_ in HOST_ONLY} <= set(SPECS)
