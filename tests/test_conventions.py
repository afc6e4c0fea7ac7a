"""What users expect of a command-line tool and a Python package: --version, help for a bare
command, warnings on stderr, the version written once, type information (py.typed), versioned
JSON with a published schema, comma lists wherever a list is taken, and a mismatch that says
how to fix it."""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import stackwars
from stackwars import workloads
from stackwars.cli import main
from stackwars.errors import ParameterError
from stackwars.frameworks.base import RunSettings
from stackwars.results import schema
from stackwars.results.peak import Peak, save_peak
from stackwars.results.run import Run, now
from stackwars.results.schema import CellSpec
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun
from stackwars.service import api
from stackwars.timing.timer import TimingConfig

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "stackwars"
RUN_SCHEMA = json.loads((PACKAGE / "results" / "run.schema.json").read_text(encoding="utf-8"))
TINY_TIMING = TimingConfig(
    steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3
)


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"stackwars {importlib.metadata.version('stackwars')}\n"
    assert stackwars.__version__ == importlib.metadata.version("stackwars")


def test_a_bare_command_prints_the_help_and_how_to_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.startswith("usage: stackwars")
    assert "run" in printed.err and "--version" in printed.err
    assert printed.err.splitlines()[-1] == (
        "stackwars: no command given; 'stackwars run' runs the quick suite"
    )


def test_the_package_says_it_is_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()


@pytest.mark.slow
def test_the_wheel_holds_py_typed_the_run_schema_and_the_one_version(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", tree / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run([*build, "-w", str(tmp_path / "dist"), str(tree)], check=True)
    (wheel,) = (tmp_path / "dist").glob("stackwars-*.whl")
    assert wheel.name.startswith(f"stackwars-{stackwars.__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "stackwars/py.typed" in names
    assert "stackwars/results/run.schema.json" in names
    assert "stackwars/results/comparison.schema.json" in names


def test_warnings_go_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show`` warns that the stored peak describes another machine than the run's."""
    peak = Peak({"float32": 1e11}, 1e10, {}, "2026-11-25T00:00:00+00:00", {"cpu_model": "Z80"})
    monkeypatch.setenv("STACKWARS_PEAK", str(save_peak(peak, tmp_path / "peak.json")))
    run = Run("r1", now(), {"cpu_model": "EPYC"}, {}, ["stackwars"], status="complete")
    run.cells = [schema.Cell("gemm", {"n": 8}, "numpy:eager", status="ok")]
    run.write_json(tmp_path / "r1.json")
    db = str(tmp_path / "db.sqlite")
    assert main(["import", str(tmp_path / "r1.json"), "--db", db]) == 0
    capsys.readouterr()
    assert main(["show", "r1", "--db", db]) == 0
    printed = capsys.readouterr()
    assert "warning: the stored peak was measured on another machine" in printed.err
    assert "warning" not in printed.out and "gemm(n=8)" in printed.out


def test_workload_takes_a_comma_list_like_stacks() -> None:
    selection = api.Selection(
        workload="gemm,selu", params=("n=16,32",), stacks="numpy", workload_files=()
    )
    cells, suite = api.choose_cells(selection)
    assert suite is None
    assert [(c.workload, c.params["n"]) for c in cells] == [
        ("gemm", 16),
        ("gemm", 32),
        ("selu", 16),
        ("selu", 32),
    ]
    only_gemm = api.Selection(workload="gemm, poly", params=("dtype=float64",), stacks="numpy")
    dtypes = {(c.workload, c.params["dtype"]) for c in api.choose_cells(only_gemm)[0]}
    assert ("gemm", "float64") in dtypes and ("poly", "float64") in dtypes
    with pytest.raises(ParameterError, match="none of the workloads 'gemm,selu' has"):
        api.choose_cells(api.Selection(workload="gemm,selu", params=("heads=2",)))
    with pytest.raises(ParameterError, match="names gemm twice"):
        api.choose_cells(api.Selection(workload="gemm,gemm"))
    with pytest.raises(ParameterError, match="no parameter 'heads'"):  # one workload: strict
        api.choose_cells(api.Selection(workload="gemm", params=("heads=2",)))


def _fields(kind: type) -> set[str]:
    return {field.name for field in dataclasses.fields(kind)}


def test_the_run_schema_names_every_field_the_code_writes() -> None:
    """The schema is written by hand: a field added to a dataclass fails here until the
    schema (src/stackwars/results/run.schema.json) describes it."""
    from stackwars.instruments.behave.data import Outcome
    from stackwars.instruments.claims.verdict import ClaimResult
    from stackwars.results.compile import CompileSummary

    definitions = RUN_SCHEMA["$defs"]
    for name, kind in {
        "cell": schema.Cell,
        "times": schema.Times,
        "steady": schema.Steady,
        "compiles": schema.Compiles,
        "memory": schema.Memory,
        "cpu": schema.Cpu,
        "parity": schema.Parity,
        "work": schema.WorkCounts,
        "warm_start": schema.WarmStart,
        "compile_summary": CompileSummary,
        "claim": ClaimResult,
        "outcome": Outcome,
    }.items():
        assert set(definitions[name]["properties"]) == _fields(kind), name
    from stackwars.profiling.result import OpRow, Profile

    # A profile's JSON adds what it derives: its overhead.
    assert set(definitions["profile"]["properties"]) == _fields(Profile) | {"overhead"}
    operation = definitions["profile"]["properties"]["ops"]["items"]
    assert set(operation["properties"]) == _fields(OpRow)
    header = Run("r", now(), {}, {}, []).header()
    assert set(definitions["run"]["properties"]) == set(header)
    assert RUN_SCHEMA["properties"]["schema_version"]["maximum"] == schema.SCHEMA_VERSION
    assert definitions["cell"]["properties"]["status"]["enum"] == list(schema.STATUSES)


def test_a_run_in_memory_and_a_behave_run_match_the_schema() -> None:
    cell = schema.Cell("gemm", {"n": 8}, "numpy:eager", status="ok", wall_s=0.5)
    cell.steady = schema.Steady(median_s=1e-3, samples_s=[1e-3, float("nan")], blocks=2)
    run = Run("r", now(), {}, {}, ["stackwars"], status="complete", cells=[cell])
    jsonschema.validate(json.loads(_written(run)), RUN_SCHEMA)
    behave = Run("b", now(), {}, {}, [], kind="behave")
    behave.outcomes = [{"probe": "p", "stack": "s"}]
    behave.outcomes[0].update(outcome="works", detail="", compiles=1, calls=[[1e-3, 1]])
    jsonschema.validate(json.loads(_written(behave)), RUN_SCHEMA)
    from stackwars.profiling.result import AddsUp, OpRow, Profile

    profile = Profile("numpy:eager", "gemm", {"n": 8}, steady_s=1e-3, profiled_s=1.1e-3)
    profile.ops = [OpRow("dot", "matmul/conv", 1.0, 9e-4, 9e-4)]
    profile.adds_up, profile.steady_ci95_s = AddsUp(1e-3, 1.1e-3), (9e-4, 1.1e-3)
    run.profiles = [profile.to_dict()]
    jsonschema.validate(json.loads(_written(run)), RUN_SCHEMA)
    (read,) = Run.from_dict(json.loads(_written(run))).profiles
    assert Profile.from_dict(read) == profile
    run.keep("energy", 2, {"joules": 1.5})  # an instrument of its own, in a format of its own
    jsonschema.validate(json.loads(_written(run)), RUN_SCHEMA)
    assert Run.from_dict(json.loads(_written(run))).kept["energy"] == run.kept["energy"]
    without_cells = {"schema_version": 2, "run": {"id": "r", "started": now(), "status": "ok"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(without_cells, RUN_SCHEMA)


def _written(run: Run) -> str:
    from stackwars.results.jsonio import dump

    return dump(run.to_dict())


@pytest.mark.slow
def test_a_run_file_written_by_a_tiny_run_matches_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, out, exported = tmp_path / "db.sqlite", tmp_path / "run.json", tmp_path / "export.json"
    argv = ["run", "--workload", "gemm,selu", "--param", "n=16", "--stacks", "numpy"]
    assert main([*argv, "--budget", "0.05", "--quiet", "--db", str(db), "--json", str(out)]) == 0
    assert main(["export", "latest", "--db", str(db), "--out", str(exported)]) == 0
    capsys.readouterr()
    for path in (out, exported):
        written: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(written, RUN_SCHEMA)
        assert [cell["status"] for cell in written["cells"]] == ["ok", "ok"]


ACCUMULATING = """
import math
from stackwars.workloads import Param, Work, Workload, register

def inputs(params, seed):
    import numpy as np
    return (np.random.default_rng(seed).random(params["k"]).astype("float32"),)

def running_total(params):
    import numpy as np
    def total(x):
        return np.cumsum(x)
    return total

def backwards(params):
    import numpy as np
    def total(x):
        return np.cumsum(x[::-1])
    return total

def workload(name, implementation, **declared):
    register(Workload(
        name=name, description="running totals of a float32 vector",
        params=(Param("k", int, 100_000, "length", minimum=1),),
        make_inputs=inputs,
        reference=lambda params, xs: __import__("numpy").cumsum(xs[0].astype("float64")),
        work=lambda params: Work(flops=params["k"], bytes=8 * params["k"]),
        memory_bytes=lambda params: 24 * params["k"],
        implementations={"numpy": implementation},
        **declared,
    ))

workload("total-undeclared", running_total)
workload("total-declared", running_total, error_growth=lambda params: math.sqrt(params["k"]))
workload("total-wrong", backwards)
"""


@pytest.fixture(scope="module")
def totals(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The workload file, one path for the module: a file registers its workloads once."""
    path = tmp_path_factory.mktemp("workloads") / "totals.py"
    path.write_text(ACCUMULATING, encoding="utf-8")
    workloads.load_workload_file(str(path))  # as the worker does before it runs a cell
    return str(path)


@pytest.mark.parametrize(
    ("name", "status", "hinted"),
    [
        ("total-undeclared", "mismatch", True),
        ("total-declared", "ok", False),
        ("total-wrong", "mismatch", False),
    ],
)
def test_a_mismatch_from_accumulated_rounding_names_error_growth(
    name: str, status: str, hinted: bool, totals: str, tmp_path: Path
) -> None:
    """A float32 running total over 100 000 terms misses the float64 reference by a few times
    the base tolerance (rounding that grows with the sum's length); a wrong total misses by
    far more and gets no hint."""
    spec = CellSpec(name, {"k": 100_000}, "numpy:eager")
    settings = RunSettings(cache_dir=str(tmp_path))
    request = Request(spec, settings, TINY_TIMING, workload_files=[totals])
    cell = CellRun(request).run()
    assert cell.status == status, cell.reason
    assert ("Workload(error_growth=...)" in cell.reason) is hinted, cell.reason


# The public API, written out: adding or removing a name from `stackwars.__all__` is a
# deliberate edit of this list too (and of the docs that describe the API).
PUBLIC_NAMES = {
    "Cell",
    "FRAMEWORKS",
    "InProcessResult",
    "Measure",
    "Param",
    "Run",
    "SCHEMA_VERSION",
    "Selection",
    "Stack",
    "StackwarsError",
    "Suite",
    "SuiteEntry",
    "UsageError",
    "Work",
    "Workload",
    "__version__",
    "all_stacks",
    "compare",
    "history",
    "load_workload_file",
    "measure",
    "parse_stack",
    "register",
    "register_suite",
    "registry",
    "results_frame",
    "reproduce",
    "run",
}


def test_the_public_api_is_the_expected_list_and_every_name_resolves() -> None:
    assert len(stackwars.__all__) == len(set(stackwars.__all__)), "a name listed twice"
    assert set(stackwars.__all__) == PUBLIC_NAMES
    for name in stackwars.__all__:
        assert getattr(stackwars, name) is not None, name


# Constants the same by name and value in two modules on purpose: (name, module) -> why the
# module cannot import the other's.
SAME_CONSTANT_ALLOWED = {
    ("TASKS", "suites.py"): "suites name workloads' parameters as data; workloads is its layer",
}


def literal_constants(path: Path) -> dict[str, object]:
    """The module-level UPPER_CASE names a module assigns a literal (str, bytes, number, bool,
    None, or a tuple of those), the leading underscore dropped: ``_TIMES`` is ``TIMES``."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or not re.fullmatch(r"_?[A-Z][A-Z0-9_]*", target.id):
            continue
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError):
            continue  # an expression: computed, not written down
        if _immutable(literal):
            found[target.id.lstrip("_")] = literal
    return found


def _immutable(value: object) -> bool:
    if isinstance(value, tuple):
        return all(_immutable(item) for item in value)
    return value is None or isinstance(value, str | bytes | int | float | complex)


def test_no_constant_is_defined_twice() -> None:
    """A constant is defined once: a module-level UPPER_CASE name (``__all__`` aside, a leading
    underscore ignored) assigned a literal (str, number, bool, None, or a tuple of those) may not
    be assigned the same literal under the same name in a second module of src/stackwars; the
    second imports it. The same name with another value is another constant (each workload
    family's ``DTYPES``), and a computed value (``2**30``) is not a literal."""
    where: dict[tuple[str, object], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for name, value in literal_constants(path).items():
            if (name, relative) not in SAME_CONSTANT_ALLOWED:
                where.setdefault((name, repr(value)), []).append(relative)
    twice = {f"{name} = {value}": files for (name, value), files in where.items() if len(files) > 1}
    assert twice == {}
    for name, relative in SAME_CONSTANT_ALLOWED:  # each exception still needed
        assert name in literal_constants(PACKAGE / relative), (name, relative)


def test_the_constant_check_sees_a_constant_defined_twice(tmp_path: Path) -> None:
    one = tmp_path / "one.py"
    one.write_text('TIMES = "\\N{MULTIPLICATION SIGN}"\nGIB = 2**30\nNAMES = ("a", 1)\n')
    two = tmp_path / "two.py"
    two.write_text('_TIMES = "\\N{MULTIPLICATION SIGN}"\nREGISTRY: dict = {}\n__all__ = ["x"]\n')
    assert literal_constants(one) == {"TIMES": "\N{MULTIPLICATION SIGN}", "NAMES": ("a", 1)}
    assert literal_constants(two) == {"TIMES": "\N{MULTIPLICATION SIGN}"}
