"""The package's layers: cli -> commands -> api -> {runner, report} -> results -> the
foundations, with nothing pointing up (read from the import statements of every module)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "stackwars"
# Top-level module or subpackage -> layer; a module imports only from lower layers or from
# its own subpackage. The package's __init__ (the public facade) may re-export any layer.
LAYERS = {
    "errors": 0,
    "version": 0,
    "frameworks": 1,
    "timing": 1,
    "config": 2,
    "workloads": 2,
    "ir": 2,
    "suites": 2,
    "probes": 2,
    "results": 3,
    "suite_files": 3,
    "claims": 3,
    "profiling": 3,
    "runner": 4,
    "report": 4,
    "service": 6,
    # stackwars bisect composes the service layer's environments and A/B rounds, and is
    # registered by the commands: one folder of its own between them.
    "bisect": 8,
    "commands": 9,
    "cli": 10,
    "__main__": 11,
    "ab_worker": 11,
}


def part_of(path: Path) -> str:
    return path.relative_to(PACKAGE).with_suffix("").parts[0]


def imported_parts(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
            if node.module == "stackwars":
                # The package's own attributes (__version__) belong to no layer.
                names = [alias.name for alias in node.names if not alias.name.startswith("__")]
                modules = [f"stackwars.{name}" for name in names]
        else:
            continue
        found.update(name.split(".")[1] for name in modules if name.startswith("stackwars."))
    return found


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue
        part = part_of(path)
        for imported in imported_parts(path) - {part}:
            if LAYERS[imported] >= LAYERS[part]:
                found.append(f"{path.relative_to(PACKAGE)} ({part}) imports {imported}")
    return found


# Within the service package: each module imports only from the ones below it.
SERVICE_LAYERS = {
    "stored": 0,
    "choices": 0,
    "instruments": 0,
    "environments": 0,
    "api": 1,
    "inprocess": 1,
    "behave": 1,
    "adaptive": 2,
    "ab": 2,
    "claimcheck": 3,
}


def service_violations() -> list[str]:
    found = []
    for path in sorted((PACKAGE / "service").glob("*.py")):
        if path.stem == "__init__":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "stackwars.service":
                inner = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "stackwars.service."
            ):
                inner = [(node.module or "").split(".")[2]]
            else:
                continue
            for name in inner:
                if SERVICE_LAYERS[name] >= SERVICE_LAYERS[path.stem]:
                    found.append(f"service/{path.name} imports {name}")
    return found


def test_the_service_modules_import_only_downward() -> None:
    assert set(SERVICE_LAYERS) == {
        path.stem for path in (PACKAGE / "service").glob("*.py") if path.stem != "__init__"
    }
    assert service_violations() == []


def test_every_module_has_a_layer() -> None:
    parts = {part_of(path) for path in PACKAGE.rglob("*.py") if path != PACKAGE / "__init__.py"}
    assert parts == set(LAYERS)


def test_nothing_imports_upward_or_sideways() -> None:
    assert violations() == []


def test_no_command_imports_another() -> None:
    """A command module may import the shared options (commands/options.py), no other."""
    commands = PACKAGE / "commands"
    for path in commands.glob("*.py"):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                shared = node.module == "stackwars.commands.options"
                assert shared or not node.module.startswith("stackwars.commands"), path.name


def test_the_check_reads_both_import_forms(tmp_path: Path) -> None:
    upward = tmp_path / "upward.py"
    upward.write_text("from stackwars.service.api import run\nimport stackwars.report.table\n")
    assert imported_parts(upward) == {"service", "report"}


PUBLIC_SERVICE = {"api", "environments", "inprocess", "behave", "adaptive", "ab", "claimcheck"}


def test_commands_use_only_the_service_layers_public_modules() -> None:
    found = []
    for path in sorted((PACKAGE / "commands").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "stackwars.service":
                names = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "stackwars.service."
            ):
                names = {(node.module or "").split(".")[2]}
            else:
                continue
            found += [f"commands/{path.name} imports {name}" for name in names - PUBLIC_SERVICE]
    assert found == []


def test_nothing_inside_imports_the_package_root() -> None:
    """The root imports every layer (its public facade), so a module that imports the root
    closes a cycle through it; the version comes from stackwars/version.py."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            bare = isinstance(node, ast.Import) and any(a.name == "stackwars" for a in node.names)
            names = node.names if isinstance(node, ast.ImportFrom) else []
            rooted = isinstance(node, ast.ImportFrom) and node.module == "stackwars"
            attributes = [a.name for a in names if not (PACKAGE / a.name).exists()]
            attributes = [name for name in attributes if not (PACKAGE / f"{name}.py").exists()]
            if bare or (rooted and attributes):
                found.append(f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', '?')}")
    assert found == []


# Modules named in strings ("module:function"), imported by name in workers: edges the import
# check above cannot see. The framework registry names each framework's worker-side code (its
# implementation class, IR capturers, profilers) without importing it: those are the only
# upward ones allowed, and only into these packages.
STRING_EDGES_ALLOWED = {"frameworks": {"frameworks", "ir", "profiling"}}
NAMED_MODULE = re.compile(r"""["'](stackwars\.[a-z_.]+):[A-Za-z_]+["']""")


def named_modules() -> dict[str, set[str]]:
    """Per package, the modules its files name in "module:function" strings."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for module in NAMED_MODULE.findall(path.read_text(encoding="utf-8")):
            found.setdefault(part_of(path), set()).add(module)
    return found


def test_modules_named_in_strings_exist_and_point_only_where_allowed() -> None:
    named = named_modules()
    assert named, "the registry names its workers' code"
    for part, modules in named.items():
        targets = {module.split(".")[1] for module in modules}
        upward = {t for t in targets if LAYERS[t] > LAYERS[part]}
        assert upward <= STRING_EDGES_ALLOWED.get(part, set()), (part, upward)
        for module in modules:
            relative = Path(*module.split(".")[1:])
            assert PACKAGE.joinpath(relative).with_suffix(".py").exists(), module
