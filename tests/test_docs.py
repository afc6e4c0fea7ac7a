"""Documentation that states facts about the code stays true to it: the error tree, the
seeds' definition, and references that resolve inside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from stackwars import errors

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "stackwars"


def error_classes() -> set[str]:
    """Every class in the package that derives, directly or not, from StackwarsError."""
    bases: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names = {base.id for base in node.bases if isinstance(base, ast.Name)}
                bases.setdefault(node.name, set()).update(names)
    found = {"StackwarsError"}
    while True:
        more = {name for name, parents in bases.items() if parents & found} - found
        if not more:
            return found
        found |= more


def test_the_error_tree_draws_every_error() -> None:
    drawn = set(re.findall(r"\b([A-Z]\w*Error)\b", errors.__doc__ or ""))
    assert error_classes() - drawn == set(), "draw these in errors.py's tree"
    assert {"RayMissingError", "RayConnectError", "PeakError"} <= drawn


def test_the_seeds_are_defined_once_and_linked_from_the_readme() -> None:
    seeds = (ROOT / "docs" / "seeds.md").read_text(encoding="utf-8")
    for number in ("000", "001", "002"):
        assert f"| seed {number} |" in seeds
    assert "(docs/seeds.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/seeds.md" in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def test_no_document_or_module_cites_a_file_outside_the_repository() -> None:
    texts = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "ARCHITECTURE.md"]
    texts.append(ROOT / "README.md")
    citing = [
        str(path.relative_to(ROOT))
        for path in texts
        if re.search(r"\.\./shared|\bdesign\.md\b", path.read_text(encoding="utf-8"))
    ]
    assert citing == []
