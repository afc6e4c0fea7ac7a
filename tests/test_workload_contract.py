"""One contract over every registered workload and every installed stack (tiny sizes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stackwars import workloads
from stackwars.frameworks import FRAMEWORKS, Stack, all_stacks, missing_reason
from stackwars.frameworks.base import RunSettings, flatten
from stackwars.results.schema import CellSpec
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun
from stackwars.timing.timer import TimingConfig

BUILTIN = sorted(workloads.registry())
TINY_TIMING = TimingConfig(
    steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3
)


@pytest.mark.parametrize("name", BUILTIN)
def test_workload_is_complete_and_deterministic(name: str) -> None:
    workload = workloads.get(name)
    native = {info.code_key for info in FRAMEWORKS.values() if info.runs_on is None}
    assert native <= set(workload.implementations), "every native framework, no gaps"
    keys = set(FRAMEWORKS) | {info.code_key for info in FRAMEWORKS.values()}
    assert set(workload.implementations) <= keys, "keyed by registered frameworks or families"
    params = workload.resolve(workload.tiny)
    first = workload.make_inputs(params, 0)
    again = workload.make_inputs(params, 0)
    other = workload.make_inputs(params, 1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))
    reference = workload.reference(params, first)
    assert all(np.asarray(r).dtype == np.float64 for r in flatten(reference))
    work = workload.work(params)
    assert work.flops > 0 and work.bytes > 0
    assert workload.memory_bytes(params) > 0
    for param in workload.params:
        assert param.parse(str(param.default)) == param.default


OWN_PROCESS = "needs a process of its own: test_torch_xla.py runs every workload on it"


def marks(stack: Stack) -> Any:
    """Skipped where the stack needs a process of its own; slow where its mode compiles."""
    if stack.info.needs_own_process(stack.mode):
        return pytest.mark.skip(reason=OWN_PROCESS)
    return pytest.mark.slow if stack.mode != "eager" else ()


CELLS = [
    pytest.param(name, str(stack), id=f"{name}-{stack}", marks=marks(stack))
    for name in BUILTIN
    for stack in all_stacks()
    # Keras picks its backend once per process: test_keras.py runs its stacks in workers.
    if stack.info.runs_on is None
]


@pytest.mark.parametrize(("name", "stack"), CELLS)
def test_every_stack_matches_the_reference_at_tiny_size(
    name: str, stack: str, tmp_path: Path
) -> None:
    framework = stack.partition(":")[0]
    if missing_reason(framework):
        pytest.skip(missing_reason(framework) or "")
    workload = workloads.get(name)
    params = workload.resolve(workload.tiny)
    declared = workload.unsupported(params, framework, stack.partition(":")[2])
    if declared:  # planned as unsupported with this reason: no worker would start
        pytest.skip(declared)
    spec = CellSpec(name, params, stack)
    request = Request(spec, RunSettings(cache_dir=str(tmp_path)), TINY_TIMING)
    cell = CellRun(request).run()
    assert cell.status == "ok", cell.reason
    assert cell.parity.ok
    assert cell.parity.computed_dtype == spec.params.get("dtype", cell.parity.computed_dtype)
    assert cell.steady.median_s is not None and cell.steady.median_s > 0
    assert cell.times.first_run_s is not None and cell.times.first_run_s > 0
    assert cell.runs_to_steady is not None


def test_tiny_parameters_are_small() -> None:
    for name in BUILTIN:
        workload = workloads.get(name)
        params = workload.resolve(workload.tiny)
        assert workload.memory_bytes(params) < 64 * 2**20, name
