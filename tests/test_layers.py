"""The package's layers: cli -> commands -> service -> {runner, report} -> results -> the
foundations, with nothing pointing up (read from the import statements of every module); and
the instruments beside them, each a folder whose files take the layer of their role."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "stackwars"
INSTRUMENTS = PACKAGE / "instruments"
# The core: top-level module or subpackage -> layer; a module imports only from lower layers or
# from its own subpackage. The package's __init__ (the public facade) may re-export any layer.
LAYERS = {
    "errors": 0,
    "version": 0,
    "instruments": 0,  # its __init__ only, which imports nothing
    "frameworks": 1,
    "timing": 1,
    "config": 2,
    "workloads": 2,
    "ir": 2,
    "suites": 2,
    "results": 3,
    "suite_files": 3,
    "profiling": 3,
    "runner": 4,
    "report": 4,
    "service": 6,
    "commands": 9,
    "cli": 10,
    "__main__": 11,
}
# An instrument's file (stackwars/instruments/<instrument>/<role>.py, or a folder of a role)
# takes the layer of its role, the layer that role has in the core.
ROLES = {
    "probes": 2,  # behave's probes: written per framework, like workloads
    # What an instrument computes and keeps, as results/ does: data, pure decisions.
    "data": 3,
    "spec": 3,
    "files": 3,
    "line": 3,
    "verdict": 3,
    "plan": 3,
    "search": 3,
    # The runner's side: a worker and its parent half, the parent's predictions.
    "task": 4,
    "worker": 4,
    "predict": 4,
    "render": 4,  # the report's side
    "service": 6,
    "command": 9,
    "side": 11,  # ab's side worker: an entry point like __main__, it runs the whole CLI
}
RUNNER_SIDE = {"runner", "task", "worker", "predict"}
REPORT_SIDE = {"report", "render"}
# The core never needs an instrument, except where a core command uses one: env --peak measures
# the peak, run --find-max-batch, --capture-ir and --profile are run's options. What instruments
# keep with a run, show and the report find in their render.py (report/sections.py). A new
# instrument adds nothing here.
CORE_USES = {
    "commands/listing.py": {"peak"},
    "commands/run.py": {"ir", "maxbatch", "profile"},
}
# An instrument never imports another, except one whose subject is the others together: an
# edition (reproduce) runs the claims, the probes and the IR captures as their own services
# do, and renders the claims' results as their own render does.
COMPOSES = {"reproduce": {"claims", "behave", "ir"}}


def unit(path: Path) -> tuple[str, str]:
    """(instrument, role) for an instrument's file, ("", part) for the core's."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[0] != "instruments" or len(parts) == 2:
        return "", parts[0]
    role = parts[2] if parts[2] in ROLES else parts[-1]
    return parts[1], role


def layer(of: tuple[str, str]) -> int:
    instrument, name = of
    return ROLES[name] if instrument else LAYERS[name]


def side(of: tuple[str, str]) -> str:
    return "runner" if of[1] in RUNNER_SIDE else "report" if of[1] in REPORT_SIDE else ""


def module_unit(module: str) -> tuple[str, str]:
    """The unit of a dotted module name (``stackwars.instruments.ab.bisect.render``)."""
    parts = module.split(".")[1:]
    if parts[0] != "instruments" or len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:  # the instrument's package itself
        return parts[1], "__init__"
    role = parts[2] if parts[2] in ROLES else parts[-1]
    return parts[1], role


def imported_modules(path: Path) -> set[str]:
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
            elif node.module.startswith("stackwars.instruments"):
                # ``from stackwars.instruments.ab import service``: a module, by its name.
                names = [f"{node.module}.{alias.name}" for alias in node.names]
                modules = [n for n in names if _is_module(n)] or modules
        else:
            continue
        found.update(name for name in modules if name.startswith("stackwars."))
    return found


def _is_module(name: str) -> bool:
    relative = PACKAGE.joinpath(*name.split(".")[1:])
    return relative.with_suffix(".py").exists() or relative.is_dir()


def imported_parts(path: Path) -> set[str]:
    return {name.split(".")[1] for name in imported_modules(path)}


def modules() -> list[Path]:
    return [path for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "__init__.py"]


def edge_violation(path: Path, module: str) -> str:
    """Why ``path`` may not import ``module`` ("" when it may)."""
    source, target = unit(path), module_unit(module)
    if source == target or (not source[0] and not target[0] and source[1] == target[1]):
        return ""
    if target[1] == "__init__":
        return "an instrument's package holds nothing to import"
    composed = COMPOSES.get(source[0], set())
    if source[0] and target[0] and source[0] != target[0] and target[0] not in composed:
        return "an instrument never imports another"
    if not source[0] and target[0]:
        relative = path.relative_to(PACKAGE).as_posix()
        if target[0] not in CORE_USES.get(relative, set()):
            return "the core imports an instrument only where CORE_USES says why"
    if {side(source), side(target)} == {"runner", "report"}:
        return "runner and report never import each other"
    # An instrument's role builds on the core's layer of that role (its service on the service
    # layer's modules, its command on the shared options) and on its own roles of that layer.
    level = source[0] and (target[0] in (source[0], "") or target[0] in composed)
    if layer(target) > layer(source) or (layer(target) == layer(source) and not level):
        return "it points up or sideways"
    return ""


def violations() -> list[str]:
    found = []
    for path in modules():
        for module in sorted(imported_modules(path)):
            why = edge_violation(path, module)
            if why:
                found.append(f"{path.relative_to(PACKAGE)} imports {module}: {why}")
    return found


def package_cycles() -> list[list[str]]:
    """Cycles between packages: each core package, and each role of each instrument."""
    graph: dict[str, set[str]] = {}
    name = "{0[0]}.{0[1]}".format
    for path in modules():
        here = name(unit(path))
        for module in imported_modules(path):
            there = name(module_unit(module))
            if there != here:
                graph.setdefault(here, set()).add(there)
    cycles, done = [], set()

    def visit(node: str, trail: list[str]) -> None:
        if node in trail:
            cycles.append(trail[trail.index(node) :])
            return
        if node in done:
            return
        for after in sorted(graph.get(node, ())):
            visit(after, [*trail, node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])
    return cycles


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``stackwars.report.html.data`` for its file (a package by its ``__init__.py``)."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, wherever the import stands (inside a
    function too): ``from a import b`` names module ``a.b`` when there is one, else ``a``; an
    import of ``a.b.c`` names that module only, not the packages Python runs on the way."""
    files = {module_name(path, root): path for path in root.rglob("*.py")}

    def named(name: str) -> str:
        while name not in files and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph: dict[str, set[str]] = {}
    for here, path in files.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    inner = f"{node.module}.{alias.name}"
                    targets.add(inner if inner in files else node.module)
        ours = {named(name) for name in targets if name.split(".")[0] == "stackwars"}
        graph[here] = ours - {here}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of nodes that reach one another (Tarjan's strongly connected components of
    more than one node), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in sorted(graph.get(node, ())):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_cycle_between_modules() -> None:
    """Per module, not per package: two modules of one package (report/claims.py and
    report/html/layout.py) that import each other, even inside a function, are a cycle; the
    fix is moving what both need to where it belongs, not hiding an import in a function."""
    graph = module_graph()
    assert "stackwars.report.html.blocks" in graph["stackwars.report.html.layout"]
    assert cycles(graph) == []


def test_the_cycle_check_sees_a_cycle_through_an_import_inside_a_function(tmp_path: Path) -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    root = tmp_path / "stackwars"
    (root / "report").mkdir(parents=True)
    (root / "report" / "__init__.py").write_text("")
    (root / "report" / "claims.py").write_text("def f():\n    from stackwars.report import md\n")
    (root / "report" / "md.py").write_text("from stackwars.report.claims import f\n")
    (root / "report" / "table.py").write_text("import stackwars.report.md\n")
    graph = module_graph(root)
    assert graph["stackwars.report.table"] == {"stackwars.report.md"}
    assert cycles(graph) == [["stackwars.report.claims", "stackwars.report.md"]]


# Within the service package: each module imports only from the ones below it.
SERVICE_LAYERS = {
    "runs": 0,
    "comparisons": 1,
    "history": 1,
    "choices": 0,
    "machine": 0,
    "environments": 0,
    "api": 2,
    "inprocess": 2,
    "adaptive": 3,
    "execution": 4,
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


def test_every_module_has_a_layer_or_a_role() -> None:
    for path in modules():
        instrument, name = unit(path)
        if path.name == "__init__.py" and instrument and path.parent.name not in ROLES:
            continue  # an instrument's package: checked to import nothing below
        assert name in (ROLES if instrument else LAYERS), path.relative_to(PACKAGE)
    assert {unit(path)[1] for path in modules() if not unit(path)[0]} == set(LAYERS)


def test_an_instruments_packages_import_nothing() -> None:
    inits = [p for p in INSTRUMENTS.rglob("__init__.py") if p.parent.name not in ROLES]
    assert inits
    assert [p for p in inits if imported_modules(p)] == []


def test_nothing_imports_upward_sideways_or_across_instruments() -> None:
    assert violations() == []


def test_the_core_uses_of_instruments_are_all_still_needed() -> None:
    used = {
        path.relative_to(PACKAGE).as_posix(): {module_unit(m)[0] for m in imported_modules(path)}
        for path in modules()
        if not unit(path)[0]
    }
    assert {path: used[path] - {""} for path in CORE_USES} == CORE_USES


def test_no_cycle_between_packages() -> None:
    assert package_cycles() == []


def test_the_check_sees_an_instrument_use_another(tmp_path: Path) -> None:
    ir = INSTRUMENTS / "ir" / "command.py"
    assert edge_violation(ir, "stackwars.instruments.behave.data")
    assert edge_violation(ir, "stackwars.instruments.ir.service") == ""
    render = INSTRUMENTS / "behave" / "render.py"
    assert edge_violation(render, "stackwars.instruments.behave.task")
    assert edge_violation(render, "stackwars.instruments.behave.service")
    assert edge_violation(PACKAGE / "runner" / "plan.py", "stackwars.instruments.ir.service")
    edition = INSTRUMENTS / "reproduce" / "service.py"
    assert edge_violation(edition, "stackwars.instruments.claims.service") == ""
    assert edge_violation(edition, "stackwars.instruments.profile.service")  # not composed
    assert edge_violation(
        INSTRUMENTS / "reproduce" / "render.py", "stackwars.instruments.claims.service"
    )


def test_no_command_imports_another() -> None:
    """A command module may import the shared options (commands/options.py), no other; an
    instrument's command imports no other command."""
    commands = [*(PACKAGE / "commands").glob("*.py"), *INSTRUMENTS.rglob("command.py")]
    for path in commands:
        if path.name == "__init__.py":
            continue
        for module in imported_modules(path):
            shared = module == "stackwars.commands.options"
            other = module.startswith("stackwars.commands") or module.endswith(".command")
            assert shared or not other, path


# A command reaches what starts a process (an instrument's task.py, worker.py or predict.py, the
# core's runner/*task*.py and *worker.py) only through a service, which takes typed options and
# returns data: the command parses and prints.
STARTS_PROCESSES = re.compile(r"(?:^|_)(?:task|tasks|worker|predict)$")


def is_command(path: Path) -> bool:
    return unit(path) == ("", "commands") or (bool(unit(path)[0]) and unit(path)[1] == "command")


def starts_processes(module: str) -> bool:
    instrument, role = module_unit(module)
    if instrument:
        return role in ("task", "worker", "predict")
    parts = module.split(".")
    return parts[1] == "runner" and bool(STARTS_PROCESSES.search(parts[-1]))


def commands_reaching_tasks() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in modules():
        if is_command(path):
            reached = sorted(m for m in imported_modules(path) if starts_processes(m))
            if reached:
                found[path.relative_to(PACKAGE).as_posix()] = reached
    return found


def test_commands_reach_tasks_and_workers_only_through_a_service() -> None:
    assert commands_reaching_tasks() == {}


def test_the_command_check_sees_a_command_import_a_task() -> None:
    assert is_command(INSTRUMENTS / "selftest" / "command.py")
    assert is_command(PACKAGE / "commands" / "listing.py")
    assert not is_command(INSTRUMENTS / "selftest" / "service.py")
    assert starts_processes("stackwars.instruments.selftest.task")
    assert starts_processes("stackwars.instruments.maxbatch.predict")
    assert starts_processes("stackwars.runner.ir_task")
    assert starts_processes("stackwars.runner.devices_worker")
    assert not starts_processes("stackwars.runner.plan")
    assert not starts_processes("stackwars.instruments.selftest.service")


def test_the_check_reads_both_import_forms(tmp_path: Path) -> None:
    upward = tmp_path / "upward.py"
    upward.write_text("from stackwars.service.api import run\nimport stackwars.report.table\n")
    assert imported_parts(upward) == {"service", "report"}


PUBLIC_SERVICE = {"api", "environments", "inprocess", "adaptive", "execution"}


def test_commands_use_only_the_service_layers_public_modules() -> None:
    found = []
    for path in sorted([*(PACKAGE / "commands").glob("*.py"), *INSTRUMENTS.rglob("command.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "stackwars.service":
                names = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "stackwars.service."
            ):
                names = {(node.module or "").split(".")[2]}
            else:
                continue
            found += [
                f"{path.relative_to(PACKAGE)} imports {name}" for name in names - PUBLIC_SERVICE
            ]
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
# A worker started by its module's name (run_child("stackwars.runner.worker", ...)).
WORKER_MODULE = re.compile(r"""["'](stackwars\.[a-z_.]*(?:worker|side))["']""")


def named_modules() -> dict[str, set[str]]:
    """Per package, the modules its files name in "module:function" strings."""
    found: dict[str, set[str]] = {}
    for path in modules():
        for module in NAMED_MODULE.findall(path.read_text(encoding="utf-8")):
            found.setdefault(unit(path)[1], set()).add(module)
    return found


def test_modules_named_in_strings_exist_and_point_only_where_allowed() -> None:
    named = named_modules()
    assert named, "the registry names its workers' code"
    for part, names in named.items():
        targets = {module.split(".")[1] for module in names}
        upward = {t for t in targets if LAYERS[t] > LAYERS[part]}
        assert upward <= STRING_EDGES_ALLOWED.get(part, set()), (part, upward)
        for module in names:
            assert _is_module(module), module


def test_every_worker_started_by_name_exists_in_the_starters_instrument_or_the_core() -> None:
    started = {
        (path, module)
        for path in modules()
        for module in WORKER_MODULE.findall(path.read_text(encoding="utf-8"))
    }
    assert len(started) >= 9, started  # the worker kinds of ARCHITECTURE.md, all found
    for path, module in started:
        assert _is_module(module), (path, module)
        assert module_unit(module)[0] in ("", unit(path)[0]), (path, module)
