"""Stacks in a Python environment of their own (frameworks/environments.py,
runner/environments.py, service/environments.py): naming them, finding them missing or broken
without a traceback, and the fix each message names. The torch_xla stack itself, in the real
environment, is tests/test_torch_xla.py's."""

from __future__ import annotations

import json
import re
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.errors import UsageError
from stackwars.frameworks import (
    Stack,
    environments,
    installed_version,
    missing_reason,
    parse_stack,
    parse_stacks,
    split_stack,
)
from stackwars.results.schema import CellSpec
from stackwars.runner import environments as running
from stackwars.runner import plan
from stackwars.service import environments as service

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_checks() -> None:
    running.forget_problems()


def test_base_pins_are_the_constraints_versions() -> None:
    """A worker in an environment imports stackwars: its dependencies at the project's pins."""
    pinned = dict(
        line.split("==")
        for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line and not line.startswith("#")
    )
    for pin in environments.BASE_PINS:
        name, version = pin.split("==")
        assert pinned[name] == version, pin


def test_a_framework_of_its_own_environment_is_never_called_not_installed_here() -> None:
    # Made or not, torch_xla cannot be imported beside the main torch: a skip or refusal in
    # this process says where its stacks run, not a fix that would leave it unimportable.
    assert missing_reason("torch-xla") == (
        "torch_xla is not importable in this process: its stacks run in workers of the "
        "'torch-xla' environment (stackwars env create torch-xla makes it)"
    )


def test_a_stack_names_its_environment_and_keeps_it_through_parsing() -> None:
    stack = parse_stack("jax:jit@jax-0.9.2")
    assert stack == Stack("jax", "jit", "jax-0.9.2")
    assert str(stack) == "jax:jit@jax-0.9.2"
    assert split_stack(str(stack)) == ("jax", "jit", "jax-0.9.2")
    assert stack.runs_in == "jax-0.9.2"
    assert parse_stack("torch-xla:lazy").runs_in == "torch-xla"  # its framework's own
    assert parse_stack("jax:jit").runs_in == ""
    assert parse_stacks("jax:jit,jax@old") == [
        Stack("jax", "jit"),
        Stack("jax", "eager", "old"),
        Stack("jax", "jit", "old"),
    ]
    cell = CellSpec("gemm", {"n": 8}, "jax:jit@old")
    assert (cell.framework, cell.mode, cell.environment) == ("jax", "jit", "old")


def test_a_bad_environment_name_is_refused_in_one_line() -> None:
    with pytest.raises(UsageError, match="environment name 'Bad Name'"):
        parse_stack("jax:jit@Bad Name")


def test_a_missing_environment_is_unsupported_with_the_command_that_makes_it() -> None:
    (cell,) = plan.plan([CellSpec("gemm", {"n": 8}, "torch-xla:lazy")], budget=2**34)
    assert cell.skip_status == "unsupported"
    assert cell.skip_reason == (
        "environment 'torch-xla' is not created; fix: stackwars env create torch-xla"
    )
    (mine,) = plan.plan([CellSpec("gemm", {"n": 8}, "jax:jit@mine")], budget=2**34)
    assert "stackwars env create mine --pin" in mine.skip_reason


def _describe(name: str, spec: dict[str, object]) -> Path:
    folder = environments.folder(name)
    folder.mkdir(parents=True)
    description = {"format": environments.ENVIRONMENT_FORMAT, "spec": spec}
    (folder / environments.DESCRIPTION_FILE).write_text(json.dumps(description), "utf-8")
    return folder


def test_an_environment_whose_python_is_gone_says_so_with_the_fix() -> None:
    _describe("gone", {"name": "gone", "packages": ["jax==0.9.2"]})
    (cell,) = plan.plan([CellSpec("gemm", {"n": 8}, "jax:jit@gone")], budget=2**34)
    assert cell.skip_status == "unsupported"
    assert "has no Python at" in cell.skip_reason
    assert cell.skip_reason.endswith("--force")


def test_a_framework_in_its_own_environment_has_that_environments_version() -> None:
    # The lent H100 (2026-11-26) listed torch-xla 2.11.0: the torch beside stackwars, not a
    # torch_xla (it had none). Only the environment's record can say which torch_xla runs.
    assert installed_version("torch-xla") is None, "not made here: no version"
    folder = _describe("torch-xla", {"name": "torch-xla", "packages": ["torch_xla==2.9.0"]})
    description = json.loads((folder / environments.DESCRIPTION_FILE).read_text("utf-8"))
    description["versions"] = {"torch": "2.9.0", "torch-xla": "2.9.1"}
    (folder / environments.DESCRIPTION_FILE).write_text(json.dumps(description), "utf-8")
    try:
        assert installed_version("torch-xla") == "2.9.1"
    finally:  # the scratch root is the whole session's: other tests need torch-xla missing
        shutil.rmtree(folder)


def test_pins_are_compared_with_what_is_installed() -> None:
    found = {"torch": "2.13.0+cpu", "torch-xla": "2.9.0"}
    assert running.pin_mismatches(["torch==2.9.0", "torch_xla==2.9.0"], found) == [
        "torch 2.13.0+cpu, not the pinned 2.9.0"
    ]
    assert running.pin_mismatches(["jax==0.9.2"], found) == ["no jax (pinned 0.9.2)"]


def test_create_refuses_what_it_cannot_make() -> None:
    with pytest.raises(UsageError, match="built in with the project's pins"):
        service.spec_for("torch-xla", ["torch==2.13.0"])
    with pytest.raises(UsageError, match="--pin PACKAGE==VERSION"):
        service.spec_for("nothing-given", [])
    with pytest.raises(UsageError, match="pin an exact version"):
        service.spec_for("loose", ["jax>=0.9"])
    spec = service.spec_for("jax-old", ["jax==0.9.2", "jaxlib==0.9.2"])
    assert spec.imports == ("jax", "jaxlib")
    assert spec.requirements()[-len(environments.BASE_PINS) :] == environments.BASE_PINS


def test_env_create_without_pins_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "create", "nothing-given"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--pin PACKAGE==VERSION" in err


def _borrowing_environment(name: str, spec: dict[str, object]) -> None:
    """An environment made in a second: a venv whose site-packages point at this one's (so a
    worker there can start), with the spec given."""
    folder = _describe(name, spec)
    venv = folder / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    (venv / "pyvenv.cfg").write_text(
        f"home = {Path(sys.executable).resolve().parent}\ninclude-system-site-packages = false\n",
        "utf-8",
    )
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    site.mkdir(parents=True)
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", "utf-8")


@pytest.mark.slow
def test_a_broken_environment_is_one_line_never_a_traceback() -> None:
    """A wrong version of a pinned package, a module that does not import, and an environment
    where stackwars' own dependencies are missing: each an unsupported cell with one line."""
    _borrowing_environment("wrong", {"name": "wrong", "packages": ["numpy==0.0.1"]})
    _borrowing_environment(
        "noxla", {"name": "noxla", "packages": [], "imports": ["torch_xla_is_not_here"]}
    )
    bare = _describe("bare", {"name": "bare", "packages": []}) / "venv" / "bin"
    bare.mkdir(parents=True)
    (bare / "python").symlink_to(Path(sys.executable).resolve())  # no site-packages of ours
    cells = [
        CellSpec("gemm", {"n": 8}, f"numpy:eager@{name}") for name in ("wrong", "noxla", "bare")
    ]
    reasons = [planned.skip_reason for planned in plan.plan(cells, budget=2**34)]
    assert re.search(r"holds numpy 2\.\S+, not the pinned 0\.0\.1; fix: .* --force$", reasons[0])
    assert "cannot import torch_xla_is_not_here (ModuleNotFoundError" in reasons[1]
    assert "cannot run a stackwars worker (ModuleNotFoundError" in reasons[2]
    assert all("\n" not in reason and "Traceback" not in reason for reason in reasons)


def _shadowing_distribution(name: str, distribution: str, version: str) -> None:
    """In environment ``name``'s own site-packages, which its Python searches before the
    borrowed one: a record of ``distribution`` at ``version``, so that a worker there finds
    that version (the package's code is still the borrowed one)."""
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = environments.folder(name) / "venv" / "lib" / python / "site-packages"
    record = site / f"{distribution}-{version}.dist-info"
    record.mkdir()
    metadata = f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
    (record / "METADATA").write_text(metadata, "utf-8")


@pytest.mark.slow
def test_a_run_in_another_environment_records_what_its_worker_ran_with(tmp_path: Path) -> None:
    """The same stack twice in one run, once in an environment of its own whose numpy is
    recorded at another version: each cell records the versions its own worker found, so the
    two differ (a cell recorded with the parent's versions, or measured in the parent's
    Python, would read this process's numpy)."""
    here = installed_version("numpy")
    assert here is not None
    _borrowing_environment("twin", {"name": "twin", "packages": []})
    _shadowing_distribution("twin", "numpy", f"{here}+twin")
    out = tmp_path / "run.json"
    argv = ["run", "--workload", "gemm", "--param", "n=32", "--stacks", "numpy,numpy@twin"]
    assert main([*argv, "--budget", "0.1", "--second-look", "0", "--json", str(out)]) == 0
    cells = json.loads(out.read_text(encoding="utf-8"))["cells"]
    assert [(c["stack"], c["status"], c["settings"]["versions"]["numpy"]) for c in cells] == [
        ("numpy:eager", "ok", here),
        ("numpy:eager@twin", "ok", f"{here}+twin"),
    ]
    for cell in cells:
        assert cell["settings"]["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))


def test_ir_of_a_stack_whose_environment_is_missing_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ir", "--workload", "gemm", "--param", "n=8", "--stacks", "torch-xla:lazy"]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "stackwars: error: torch-xla:lazy: environment 'torch-xla' is not created; "
        "fix: stackwars env create torch-xla"
    ]


def test_a_worker_whose_python_is_gone_ends_as_an_error_without_starting(tmp_path: Path) -> None:
    from stackwars.runner.child import Interpreter, Limits, run_child

    gone = Interpreter(python=str(tmp_path / "venv" / "bin" / "python"))
    end = run_child("stackwars.runner.worker", "timing", {}, Limits(5, 2**30), interpreter=gone)
    assert (end.status, end.detail) == (
        "error",
        f"the worker's Python {gone.python} does not exist",
    )
