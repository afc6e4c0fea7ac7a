"""The unified stack's comparisons from synthetic cells: the cost of the Keras abstraction
against the native stack of the same backend and mode, and the race between Keras backends."""

from __future__ import annotations

import pytest

from stackwars.report.derived import derived_tables
from stackwars.results.schema import Cell, Memory, Steady, Times
from stackwars.results.unified import abstraction_costs, backend_races, native_counterpart

PARAMS = {"scale": "full", "task": "infer"}


def cell(stack: str, median: float, repeat: int = 0, workload: str = "bert-base") -> Cell:
    samples = [median * (1 + 0.002 * ((i * 7 + repeat) % 5)) for i in range(20)]
    return Cell(
        workload,
        dict(PARAMS),
        stack,
        repeat=repeat,
        status="ok",
        times=Times(first_run_s=median * 100),
        steady=Steady(median_s=median, samples_s=samples),
        memory=Memory(peak_rss_bytes=int(1e9 * (2 if stack.startswith("keras") else 1))),
        runs_to_steady=1,
    )


def test_each_keras_stack_is_compared_with_its_backends_own_stack_in_the_same_mode() -> None:
    assert native_counterpart("keras-jax:jit") == "jax:jit"
    assert native_counterpart("keras-torch:compile") == "torch:compile"
    assert native_counterpart("keras-tensorflow:xla") == "tensorflow:xla"
    assert native_counterpart("jax:jit") is None


def test_the_cost_is_keras_over_native_with_an_interval_across_workers() -> None:
    cells = [cell("jax:jit", 1.0, r) for r in range(3)]
    cells += [cell("keras-jax:jit", 1.5 + 0.01 * r, r) for r in range(3)]
    cells += [cell("keras-torch:eager", 9.0)]  # torch:eager did not run: no row
    (cost,) = abstraction_costs(cells)
    assert (cost.keras_stack, cost.native_stack) == ("keras-jax:jit", "jax:jit")
    assert cost.steady is not None and cost.steady.unit == "worker"
    assert cost.steady.ratio == pytest.approx(1.51, rel=0.01)
    assert cost.steady.ci_low > 1.4 and cost.steady.verdict == "slower"
    assert cost.first_run_ratio == pytest.approx(1.51, rel=0.01)
    assert cost.memory_ratio == pytest.approx(2.0)


def test_one_worker_a_side_is_judged_within_its_process_and_says_so() -> None:
    (cost,) = abstraction_costs(
        [cell("tensorflow:graph", 1.0), cell("keras-tensorflow:graph", 1.0)]
    )
    assert cost.steady is not None and cost.steady.unit == "block"
    assert cost.steady.verdict == "equivalent"
    tables, markdown = derived_tables(
        [cell("tensorflow:graph", 1.0), cell("keras-tensorflow:graph", 1.0)]
    )
    assert "within one process" in markdown
    assert [t.title for t in tables] == ["What compiling buys", "What the Keras abstraction costs"]


def test_the_race_takes_each_backends_fastest_mode_and_the_margin_of_the_slowest() -> None:
    cells = [
        cell("keras-jax:eager", 9.0),
        cell("keras-jax:jit", 1.0),
        cell("keras-torch:eager", 2.0),
        cell("keras-tensorflow:graph", 1.5),
        cell("keras-tensorflow:xla", 1.2),
        cell("jax:jit", 0.5),  # native stacks are not in the race
    ]
    (race,) = backend_races(cells)
    assert race.fastest_by_backend == {
        "jax": ("keras-jax:jit", 1.0),
        "torch": ("keras-torch:eager", 2.0),
        "tensorflow": ("keras-tensorflow:xla", 1.2),
    }
    assert (race.fastest, race.slowest) == ("jax", "torch")
    assert race.margin == pytest.approx(1.0) and race.within_published
    (far,) = backend_races([cell("keras-jax:jit", 1.0), cell("keras-torch:eager", 5.0)])
    assert not far.within_published  # 400 % is beyond the published 350 %


def test_failed_cells_and_runs_without_keras_have_no_rows() -> None:
    failed = cell("keras-jax:jit", 1.0)
    failed.status = "error"
    assert abstraction_costs([cell("jax:jit", 1.0), failed]) == []
    assert backend_races([cell("jax:jit", 1.0), cell("torch:eager", 2.0)]) == []
    assert "Keras" not in derived_tables([cell("jax:jit", 1.0), failed])[1]
