"""--inputs per-call: every timed call places the host inputs on the device itself; resident
(the default) places them once, before timing. Eager stacks run in this process (fast tier);
the compiling stacks are marked slow."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from stackwars import workloads
from stackwars.frameworks import missing_reason
from stackwars.frameworks.base import RunSettings
from stackwars.report.html.provenance import inputs
from stackwars.report.table import PER_CALL_MARK, PER_CALL_NOTE, build_tables, render_markdown
from stackwars.results.schema import Cell, CellSpec
from stackwars.runner import worker
from stackwars.runner.protocol import Request
from stackwars.runner.worker import PER_CALL_STATEFUL, CellRun, Prepared
from stackwars.timing.timer import TimingConfig

TINY_TIMING = TimingConfig(
    steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3
)
EAGER = ["numpy:eager", "jax:eager", "torch:eager", "tensorflow:eager"]
COMPILED = ["jax:jit", "torch:compile", "tensorflow:graph", "tensorflow:xla"]
STACKS = [
    *(pytest.param(stack, id=stack) for stack in EAGER),
    *(pytest.param(stack, id=stack, marks=pytest.mark.slow) for stack in COMPILED),
]


def count_placements(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every call of the cell's framework's ``to_device``: how many arrays it placed."""
    placed: list[int] = []
    load = worker.load_framework

    def counting(name: str, mode: str) -> Any:
        framework = load(name, mode)
        place = framework.to_device

        def to_device(arrays: Sequence[Any]) -> tuple[Any, ...]:
            placed.append(len(arrays))
            return place(arrays)

        monkeypatch.setattr(framework, "to_device", to_device)
        return framework

    monkeypatch.setattr(worker, "load_framework", counting)
    return placed


def run_cell(stack: str, inputs_mode: str, tmp_path: Path, workload: str = "poly") -> Cell:
    if missing_reason(stack.partition(":")[0]):
        pytest.skip(missing_reason(stack.partition(":")[0]) or "")
    params = workloads.get(workload).resolve(workloads.get(workload).tiny)
    settings = RunSettings(cache_dir=str(tmp_path), inputs=inputs_mode)
    return CellRun(Request(CellSpec(workload, params, stack), settings, TINY_TIMING)).run()


@pytest.mark.parametrize("stack", STACKS)
def test_per_call_places_the_inputs_in_every_timed_call(
    stack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    placed = count_placements(monkeypatch)
    cell = run_cell(stack, "per-call", tmp_path)
    assert cell.status == "ok", cell.reason
    assert cell.parity.ok
    assert cell.settings["run"]["inputs"] == "per-call"
    # Once before timing (what parity uses), then once per call: the first run, the warm-up
    # and every steady call (each sample is a block of one call or more).
    assert len(placed) >= 2 + len(cell.steady.samples_s)
    assert set(placed) == {1}  # poly has one input


@pytest.mark.parametrize("stack", STACKS)
def test_resident_places_the_inputs_once(
    stack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    placed = count_placements(monkeypatch)
    cell = run_cell(stack, "resident", tmp_path)
    assert cell.status == "ok", cell.reason
    assert cell.settings["run"]["inputs"] == "resident"
    assert placed == [1]


def test_a_model_with_per_call_inputs_is_unsupported_with_the_reason(tmp_path: Path) -> None:
    cell = run_cell("numpy:eager", "per-call", tmp_path, workload="gpt2-small")
    assert cell.status == "unsupported"
    assert cell.reason == PER_CALL_STATEFUL


class _Placing:
    """A framework whose placement is recorded: what Prepared.arguments asks of it."""

    def __init__(self) -> None:
        self.placed: list[tuple[Any, ...]] = []

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        self.placed.append(tuple(arrays))
        return tuple(f"on device: {array}" for array in arrays)


def test_prepared_arguments_are_placed_per_call_only_when_asked() -> None:
    framework = _Placing()
    resident = Prepared(framework, lambda x: x, ("placed",), lambda x: x)  # type: ignore[arg-type]
    assert resident.call() == "placed" and framework.placed == []
    per_call = Prepared(framework, lambda x: x, ("placed",), lambda x: x, ("host",))  # type: ignore[arg-type]
    assert per_call.call() == "on device: host"
    assert per_call.call() == "on device: host"
    assert framework.placed == [("host",), ("host",)]


def _cell(stack: str, inputs_mode: str | None) -> Cell:
    cell = Cell("poly", {"n": 16}, stack, status="ok")
    cell.steady.median_s, cell.steady.samples_s = 1e-3, [1e-3]
    if inputs_mode:
        cell.settings["run"] = {"inputs": inputs_mode}
    return cell


def test_tables_mark_the_cells_that_placed_inputs_per_call() -> None:
    cells = [_cell("numpy:eager", "resident"), _cell("jax:jit", "per-call")]
    markdown = render_markdown(build_tables(cells, None))
    assert f"{PER_CALL_MARK}jax:jit" in markdown
    assert f"{PER_CALL_MARK}numpy:eager" not in markdown
    assert PER_CALL_NOTE in markdown
    assert PER_CALL_NOTE not in render_markdown(build_tables(cells[:1], None))


def test_the_manifest_says_where_inputs_were() -> None:
    assert inputs(_cell("jax:jit", "per-call")).startswith("per-call")
    # Runs stored before --inputs existed placed their inputs once.
    assert inputs(_cell("jax:jit", None)).startswith("resident")
