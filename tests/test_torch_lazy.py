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
from pathlib import Path
from typing import Any

import pytest

from conftest import USER_ENVIRONMENTS
from stackwars.cli import main
from stackwars.frameworks import environments
from stackwars.runner import environments as running

pytestmark = pytest.mark.slow
QUICK = ["--budget", "0.1", "--second-look", "0", "--quiet"]


@pytest.fixture
def torch_xla_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's torch-xla environment, ready; CI must have made it (README's test command)."""
    monkeypatch.setenv(environments.ROOT_VARIABLE, USER_ENVIRONMENTS)
    problem = running.problem("torch-xla", ("torch_xla",))
    if problem and os.environ.get("CI"):
        pytest.fail(f"CI runs the torch_xla tests: {problem}")
    if problem:
        pytest.skip(problem)


def _run(tmp_path: Path, *argv: str) -> list[dict[str, Any]]:
    out = tmp_path / "run.json"
    assert main(["run", *argv, *QUICK, "--json", str(out), "--db", str(tmp_path / "db")]) == 0
    return json.loads(out.read_text(encoding="utf-8"))["cells"]


MODELS = ["--suite", "models", "--param", "scale=tiny"]


@pytest.mark.usefixtures("torch_xla_environment")
def test_the_six_models_infer_against_the_reference_and_compile_once(tmp_path: Path) -> None:
    """Inference is judged against the float64 NumPy reference; its second run compiles
    nothing (the set-up's own copies are cut before timing)."""
    cells = _run(tmp_path, *MODELS, "--param", "task=infer", "--stacks", "torch-xla:lazy")
    assert len(cells) == 6
    assert [
        (c["workload"], c["status"], c["reason"][-200:]) for c in cells if c["status"] != "ok"
    ] == []
    for cell in cells:
        assert cell["parity"]["reference"], cell["workload"]
        assert cell["compiles"]["second_run"] == 0, cell["workload"]
        assert cell["compiles"]["steady"] == 0, cell["workload"]


@pytest.mark.usefixtures("torch_xla_environment")
def test_the_six_models_train_as_torch_eager_does_and_compile_twice(tmp_path: Path) -> None:
    """Training is checked against torch:eager's step (no reference can say what a step
    should give); a train step's second run compiles again (the optimizer state appears after
    the first step). Two tests, so that the parallel pass can run them side by side."""
    stacks = ["--stacks", "torch-xla:lazy,torch:eager"]
    cells = _run(tmp_path, *MODELS, "--param", "task=train", *stacks)
    lazy = [cell for cell in cells if cell["stack"] == "torch-xla:lazy"]
    assert len(lazy) == 6
    assert [
        (c["workload"], c["status"], c["reason"][-200:]) for c in cells if c["status"] != "ok"
    ] == []
    # Of two stacks, the one measured second is compared with the first.
    eager = {c["workload"]: c for c in cells if c["stack"] == "torch:eager"}
    for cell in lazy:
        pair = {cell["parity"]["compared_with"], eager[cell["workload"]]["parity"]["compared_with"]}
        assert pair & {"torch:eager", "torch-xla:lazy"}, cell["workload"]
        assert cell["compiles"]["second_run"] >= 1, cell["workload"]
        assert cell["compiles"]["steady"] == 0, cell["workload"]


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
