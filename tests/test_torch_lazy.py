"""torch-xla:lazy (PyTorch/XLA's lazy tensors, seed 001's own system) in its environment of its
own: its six models, inference and training, ok with parity; a train step compiling a second
graph in its second run; the sync proven by the selftest; its IR beside jax:jit's. Seed 001's
operations on it are the README's line, run and checked by tests/test_readme.py (lazy_ops_ok).
The environment is what ``stackwars env create torch-xla`` makes, as the README's
test command does before the tests; without it these tests skip, except in CI, where they
fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import USER_ENVIRONMENTS
from stackwars.cli import main
from stackwars.frameworks import environments
from stackwars.results.schema import Cell
from stackwars.runner import environments as running
from stackwars.runner.crosscheck import crosscheck
from stackwars.suites import MODELS as MODEL_NAMES

pytestmark = pytest.mark.slow


@pytest.fixture
def torch_xla_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's torch-xla environment, ready; CI must have made it (README's test command)."""
    monkeypatch.setenv(environments.ROOT_VARIABLE, USER_ENVIRONMENTS)
    problem = running.problem("torch-xla", ("torch_xla",))
    if problem and os.environ.get("CI"):
        pytest.fail(f"CI runs the torch_xla tests: {problem}")
    if problem:
        pytest.skip(problem)


# The models suite's six models at tiny size on a stack, each as a timing worker runs it
# (CellRun), one after another in one process: a fresh worker each imported torch_xla and
# started its runtime again (about 4 s of the suite's time a model). The command line's path
# to torch-xla:lazy is the README's line of seed 001's operations (tests/test_readme.py) and
# the tests below. Prints the cells as JSON.
SIX_MODELS = """
import json, sys
from stackwars import workloads
from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import CellSpec
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun
from stackwars.suites import MODELS
from stackwars.timing.timer import TimingConfig

stack, task, folder = sys.argv[1:4]
timing = TimingConfig(steady_budget_s=0.1, min_steady_s=0.0, warmup_budget_s=0.1, min_blocks=3)
cells = []
for name in MODELS:
    params = workloads.get(name).resolve({"scale": "tiny", "task": task})
    request = Request(CellSpec(name, params, stack), RunSettings(cache_dir=folder), timing)
    cells.append(CellRun(request).run().to_dict())
print(json.dumps(cells))
"""


def six_models(stack: str, task: str, folder: Path) -> list[Cell]:
    """The six models' cells on ``stack`` (torch-xla:lazy in its environment's Python)."""
    interpreter = running.interpreter_for("torch-xla" if stack == "torch-xla:lazy" else "")
    argv = [interpreter.python or sys.executable, "-c", SIX_MODELS, stack, task, str(folder)]
    done = subprocess.run(
        argv, env=interpreter.env(), capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [Cell.from_dict(data) for data in json.loads(done.stdout.splitlines()[-1])]


def not_ok(cells: list[Cell]) -> list[tuple[str, str, str]]:
    return [(c.workload, c.status, c.reason[-200:]) for c in cells if c.status != "ok"]


@pytest.mark.usefixtures("torch_xla_environment")
def test_the_six_models_infer_against_the_reference_and_compile_once(tmp_path: Path) -> None:
    """Inference is judged against the float64 NumPy reference; its second run compiles
    nothing (the set-up's own copies are cut before timing)."""
    cells = six_models("torch-xla:lazy", "infer", tmp_path)
    assert [cell.workload for cell in cells] == list(MODEL_NAMES)
    assert not_ok(cells) == []
    for cell in cells:
        assert cell.parity.reference, cell.workload
        assert cell.settings["versions"]["torch_xla"] == "2.9.0", cell.workload
        assert cell.compiles.second_run == 0, cell.workload
        assert cell.compiles.steady == 0, cell.workload


@pytest.mark.usefixtures("torch_xla_environment")
def test_the_six_models_train_as_torch_eager_does_and_compile_twice(tmp_path: Path) -> None:
    """Training is checked against torch:eager's step, as a run checks a later stack against
    the first (no reference can say what a step should give); a train step's second run
    compiles again (the optimizer state appears after the first step). Two tests, so that the
    parallel pass can run them side by side."""
    eager = six_models("torch:eager", "train", tmp_path / "eager")
    lazy = six_models("torch-xla:lazy", "train", tmp_path / "lazy")
    assert not_ok(eager) == [] and not_ok(lazy) == []
    for cell in lazy:
        crosscheck(cell, eager)
        assert cell.status == "ok", (cell.workload, cell.reason)
        assert cell.parity.compared_with == "torch:eager", cell.workload
        assert cell.compiles.second_run and cell.compiles.second_run >= 1, cell.workload
        assert cell.compiles.steady == 0, cell.workload


@pytest.mark.usefixtures("torch_xla_environment")
def test_the_selftest_proves_torch_xlas_sync_waits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selftest", "--stacks", "torch-xla:lazy"]) == 0
    out = capsys.readouterr().out
    assert "torch-xla:lazy" in out and "FAILED" not in out


@pytest.mark.usefixtures("torch_xla_environment")
def test_its_stablehlo_is_compared_with_jax(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ir"
    sizes = ["--param", "d_model=16", "--param", "d_ff=32", "--param", "seq=8"]
    argv = ["ir", "--workload", "ffn", *sizes, "--stacks", "jax:jit,torch-xla:lazy"]
    assert main([*argv, "--diff", "jax:jit", "torch-xla:lazy", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "stablehlo op histogram" in printed
    captured = {path.name for path in (out / "torch-xla_lazy").iterdir()}
    assert {"stablehlo.txt", "lazy_ir.txt", "hlo.txt"} <= captured, captured


@pytest.mark.usefixtures("torch_xla_environment")
def test_torch_xlas_profiler_sees_its_xla_operations(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    argv = ["profile", "--workload", "gemm", "--param", "n=128", "--stacks", "torch-xla:lazy"]
    assert main([*argv, "--out", str(tmp_path / "p"), "--json", str(out)]) == 0
    (found,) = json.loads(out.read_text(encoding="utf-8"))["profiles"]
    assert found["status"] == "ok", found["reason"]
    assert found["ops"], "the XLA operations the graph executed"
    assert "which torch operator" in found["blind_spots"]
