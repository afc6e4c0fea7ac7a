"""The unified stacks: Keras 3 on JAX, PyTorch and TensorFlow (issue 15).

Keras reads its backend once per process, so everything that runs Keras runs in a process of
its own: one per backend for the tiny workloads (every op workload, forward and gradients, and
the six models, inference and a train step, through the worker's own CellRun), and real
workers for the command-line run with a hostile ``KERAS_BACKEND``.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.frameworks import (
    FRAMEWORKS,
    default_stacks,
    implementation_for,
    load_framework,
    parse_stacks,
    stack_missing_reason,
)
from stackwars.results.schema import Cell, CellSpec
from stackwars.runner import plan
from stackwars.runner.crosscheck import crosscheck
from stackwars.suites import UNIFIED_STACKS, get_suite
from stackwars.workloads.models import SPECS

KERAS = [name for name, info in FRAMEWORKS.items() if info.family == "keras"]
BACKENDS = {name: FRAMEWORKS[name].runs_on for name in KERAS}
OPS = ("gemm", "selu", "poly", "ffn", "mha", "layernorm", "softmax")
MODELS = tuple(spec.name for spec in SPECS)


def test_keras_is_a_family_of_one_stack_per_backend() -> None:
    assert set(BACKENDS.values()) == {"jax", "torch", "tensorflow"}
    for name, backend in BACKENDS.items():
        assert name == f"keras-{backend}"
        # The modes Keras applies are its backend's compilers, named as there.
        assert set(FRAMEWORKS[name].modes) <= set(FRAMEWORKS[str(backend)].modes)
    assert [str(s) for s in parse_stacks("keras")] == [
        f"{name}:{mode}" for name in KERAS for mode in FRAMEWORKS[name].modes
    ]
    assert str(parse_stacks("keras-torch:compile")[0]) == "keras-torch:compile"


def test_runs_that_name_no_stacks_leave_the_keras_layer_out() -> None:
    assert not any(stack.info.family == "keras" for stack in default_stacks())
    assert {s.framework for s in default_stacks()} == {
        name for name, info in FRAMEWORKS.items() if info.runs_on is None
    }


def test_every_op_workload_is_written_once_for_every_keras_stack() -> None:
    for name in OPS:
        workload = workloads.get(name)
        builders = {implementation_for(workload.implementations, fw) for fw in KERAS}
        assert builders == {workload.implementations["keras"]}, name
    for name in MODELS:
        assert set(KERAS) <= set(workloads.get(name).implementations), name


@pytest.mark.parametrize("name", KERAS)
def test_a_mode_keras_does_not_offer_is_refused_before_anything_is_imported(name: str) -> None:
    framework = load_framework(name)
    with pytest.raises(ValueError, match=f"{name} has no mode 'bogus'"):
        framework.prepare(lambda x: x, "bogus")


def test_a_workload_without_keras_code_is_planned_unsupported_with_the_reason() -> None:
    spec = CellSpec("derivatives", workloads.get("derivatives").resolve({}), "keras-jax:jit")
    assert plan.skip_reason(spec) == "workload 'derivatives' has no keras-jax implementation"


def test_a_missing_backend_names_the_extra_that_installs_it(monkeypatch: Any) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    reason = stack_missing_reason("keras-torch", "eager")
    assert reason == "torch is not installed; fix: pip install 'stackwars[keras-torch]'"


def test_the_unified_suite_puts_each_keras_stack_beside_its_native_stack() -> None:
    suite = get_suite("unified")
    planned = {cell.stack for cell in plan.suite_cells(suite, None, "cpu")}
    assert planned == set(UNIFIED_STACKS), "a suite's own stacks run without --stacks"
    narrowed = plan.suite_cells(suite, parse_stacks("keras-jax"), "cpu")
    assert {cell.stack for cell in narrowed} == {"keras-jax:jit"}
    assert {entry.workload for entry in suite.entries} >= {*OPS, "resnet50", "vit-b16"}
    stacks = [s.partition(":") for s in UNIFIED_STACKS]
    for framework, _, mode in stacks:
        if framework in BACKENDS:
            assert (BACKENDS[framework], "", mode) in [(f, "", m) for f, _, m in stacks]


# Every op workload (forward, and gradients where there are some) on every mode, the models
# on the backend's first compiled mode (torch: eager; torch.compile takes 10-60 s a model on
# two cores), all at tiny size, in one process per backend.
DRIVER = textwrap.dedent(
    """
    import json, sys
    from stackwars import workloads
    from stackwars.frameworks import FRAMEWORKS
    from stackwars.frameworks.base import RunSettings
    from stackwars.results.schema import CellSpec
    from stackwars.runner.protocol import Request
    from stackwars.runner.worker import CellRun
    from stackwars.timing.timer import TimingConfig

    name, modes, model_mode, folder = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4]
    timing = TimingConfig(steady_budget_s=0.01, min_steady_s=0.0, warmup_budget_s=0.01,
                          min_blocks=3, latency_budget_s=0.0)
    cells = []
    def run(workload, given, mode):
        params = workloads.get(workload).resolve(given)
        spec = CellSpec(workload, params, f"{name}:{mode}")
        cells.append(CellRun(Request(spec, RunSettings(cache_dir=folder), timing)).run().to_dict())
    for mode in modes:
        for op in %(ops)r:
            tiny = workloads.get(op).tiny
            run(op, tiny, mode)
            if op in ("ffn", "mha"):
                run(op, {**tiny, "task": "grad"}, mode)
    for model in %(models)r:
        for task in ("infer", "train"):
            run(model, {"scale": "tiny", "task": task}, model_mode)
    print(json.dumps(cells))
    """
)
PLAN = {  # framework -> (op modes, model mode); keras-jax:eager runs in the selftest
    "keras-jax": ("jit", "jit"),
    "keras-torch": ("eager", "eager"),
    "keras-tensorflow": ("eager,graph,xla", "graph"),
}


def shared_folder(factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this test run sees (this process's own without xdist)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    folder = factory.getbasetemp().parent / f"keras-{run}" if run else factory.getbasetemp()
    folder.mkdir(exist_ok=True)
    return folder


CellsOf = Callable[[str, bool], list[Cell] | None]


@pytest.fixture(scope="module")
def tiny_cells(tmp_path_factory: pytest.TempPathFactory) -> CellsOf:
    """Each Keras framework's tiny cells, run in a process of its own, once per test run: the
    answer is kept in a file the xdist workers share, so that the tests reading one framework's
    cells may run on any worker. While another worker makes a framework's answer, ``wait``
    False returns None at once rather than wait for it."""
    folder = shared_folder(tmp_path_factory)
    script = DRIVER % {"ops": OPS, "models": MODELS}

    def cells_of(name: str, wait: bool) -> list[Cell] | None:
        answer = folder / f"{name}.json"
        with (folder / f"{name}.lock").open("w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None
            if not answer.exists():
                modes, model_mode = PLAN[name]
                (folder / name).mkdir(exist_ok=True)  # a failed attempt's, if any
                argv = [sys.executable, "-c", script, name, modes, model_mode, str(folder / name)]
                done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=True)
                answer.write_text(done.stdout.splitlines()[-1], encoding="utf-8")
        return [Cell.from_dict(data) for data in json.loads(answer.read_text(encoding="utf-8"))]

    return cells_of


def installed() -> list[str]:
    return [
        name for name, (_, model_mode) in PLAN.items() if not stack_missing_reason(name, model_mode)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PLAN))
def test_every_keras_stack_runs_the_ops_and_models_with_parity(
    name: str, tiny_cells: CellsOf
) -> None:
    if name not in installed():
        pytest.skip(stack_missing_reason(name, PLAN[name][1]) or "")
    cells = tiny_cells(name, True) or []
    assert len(cells) == len(PLAN[name][0].split(",")) * (len(OPS) + 2) + 2 * len(MODELS)
    for cell in cells:
        where = f"{cell.workload} {cell.params} on {cell.stack}"
        assert cell.status == "ok", (where, cell.reason)
        framework = cell.settings["framework"]
        assert framework["keras_backend"] == BACKENDS[name], where
        if cell.params.get("task") != "train":
            assert cell.parity.ok, where
        # The backend's own compile counter, through the Keras framework object.
        compiled = cell.stack.partition(":")[2] in ("jit", "compile", "graph", "xla")
        if compiled:
            assert cell.compiles.first_run and cell.compiles.first_run >= 1, where
            assert cell.compiles.steady == 0, where
            assert cell.first_run_breakdown, where


@pytest.mark.slow
def test_train_steps_agree_across_the_keras_backends(
    tiny_cells: CellsOf,
) -> None:
    """The parent's cross-stack check, as a run applies it: every backend's first AdamW step
    on every model agrees with the first backend's."""
    names = installed()
    if len(names) < 2:
        pytest.skip("needs two Keras backends installed")
    found: dict[str, list[Cell]] = {}
    for wait in (False, True):  # the frameworks no other worker is running first
        for name in (name for name in names if name not in found):
            cells = tiny_cells(name, wait)
            if cells is not None:
                found[name] = cells
    trains = [c for name in names for c in found[name] if c.params.get("task") == "train"]
    earlier: list[Cell] = []
    for cell in trains:
        crosscheck(cell, earlier)
        earlier.append(cell)
        assert cell.status == "ok", (cell.workload, cell.stack, cell.reason)
    compared = [c for c in trains if c.parity.compared_with]
    assert len(compared) == len(MODELS) * (len(names) - 1)


@pytest.mark.slow
def test_a_users_keras_backend_never_changes_what_a_keras_stack_runs_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    out = tmp_path / "run.json"
    stacks = "keras-jax:jit,keras-torch:eager,keras-tensorflow:xla"
    argv = ["run", "--workload", "gemm", "--param", "n=32", "--stacks", stacks]
    argv += ["--budget", "0.05", "--second-look", "0"]
    assert main([*argv, "--quiet", "--json", str(out)]) == 0
    cells = json.loads(out.read_text())["cells"]
    assert [c["stack"] for c in cells] == stacks.split(",")
    for cell in cells:
        backend = BACKENDS[cell["stack"].partition(":")[0]]
        assert cell["status"] == "ok", cell["reason"]
        assert cell["settings"]["environment"]["KERAS_BACKEND"] == backend
        assert cell["settings"]["framework"]["keras_backend"] == backend
        assert "KERAS_BACKEND" not in cell["settings"]["inherited_environment"]
    assert os.environ["KERAS_BACKEND"] == "torch"  # the parent's own environment is untouched
