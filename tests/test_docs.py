"""Documentation that states facts about the code stays true to it: the error tree, the
seeds' definition, references that resolve inside the repository, the names, commands and
verdicts the documents use, and the registry as the one table of frameworks."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import stackwars
from stackwars import errors
from stackwars.commands import discover
from stackwars.frameworks import FRAMEWORKS
from stackwars.timing.compare import VERDICTS

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


def test_every_stackwars_name_the_documents_use_exists() -> None:
    """`stackwars.X` in a document or the service layer's docstring is a public name or a
    module (service/__init__ once named stackwars.time, which is stackwars.measure)."""
    texts = [ROOT / "ARCHITECTURE.md", ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    texts.append(PACKAGE / "service" / "__init__.py")
    named = {
        (path.name, name)
        for path in texts
        for name in re.findall(r"`stackwars\.(\w+)", path.read_text(encoding="utf-8"))
    }
    missing = [
        (document, name)
        for document, name in sorted(named)
        if not hasattr(stackwars, name) and not (PACKAGE / name).exists()
        and not (PACKAGE / f"{name}.py").exists()
    ]  # fmt: skip
    assert missing == []


def test_the_architecture_lists_every_command() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    listing = text[text.index("## Layout") : text.index("## Layers")]
    names = [add.__name__.removeprefix("add_") for add in discover()]
    assert [name for name in names if not re.search(rf"\b{name}\b", listing)] == []


def test_the_methodology_names_only_verdicts_the_gate_gives() -> None:
    """Every quoted verdict-like phrase ('no clear difference' once) is one of VERDICTS,
    except where the text says it was the old rule's."""
    text = (ROOT / "docs" / "methodology.md").read_text(encoding="utf-8")
    quoted = set(re.findall(r"[`\"](no [a-z ]*difference|[a-z]+, [a-z ]+)[`\"]", text))
    assert quoted - set(VERDICTS) == set()


def test_only_the_framework_registry_keeps_a_table_of_frameworks() -> None:
    """No module outside frameworks/ lists three or more framework names (probes once had
    two such tables): they read the registry (ARCHITECTURE.md, Boundaries)."""
    tables = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent == PACKAGE / "frameworks":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 3:
                values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
                if len(values) == len(node.elts) and set(values) <= set(FRAMEWORKS):
                    tables.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert tables == []


def test_the_readme_renders_what_the_default_run_takes() -> None:
    """The quick start states the default run's time as the newest stored measurement renders
    it (tests/test_rendered_docs.py renders the block again), and results.md lists every
    measurement: no time of the main job is typed."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Fresh machine")
    quick_start = readme[start : readme.index("\n## ", start + 1)]
    data = "docs/data/default-run"
    assert f"<!-- rendered: python benchmarks/default_run.py render {data} --readme -->" in (
        quick_start
    )
    assert "--second-look 0" in quick_start
    results = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert f"<!-- rendered: python benchmarks/default_run.py render {data} -->" in results
    typed = re.sub(r"<!-- rendered.*?<!-- end rendered -->", "", results, flags=re.S)
    assert not re.search(r"\*\*\d+ s\*\*", typed), "a wall time typed in results.md"


def _anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown document's headings."""
    headings = re.findall(r"^#+ (.*)$", text, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_of_the_documents_resolves() -> None:
    """A link in the README, ARCHITECTURE.md or docs/ names a file that exists, and a heading
    of it where it names one (the README's sections moved to docs pages, issue 53)."""
    broken = []
    for document in [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *(ROOT / "docs").glob("*.md")]:
        text = re.sub(r"```.*?```", "", document.read_text(encoding="utf-8"), flags=re.DOTALL)
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", link):
                continue
            path, _, anchor = link.partition("#")
            target = (document.parent / path) if path else document
            if not target.exists() or (
                anchor
                and target.suffix == ".md"
                and anchor not in _anchors(target.read_text(encoding="utf-8"))
            ):
                broken.append(f"{document.name}: {link}")
    assert broken == []
