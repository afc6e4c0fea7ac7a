"""Sweeps and crossovers on synthetic cells with known answers."""

from __future__ import annotations

import pytest

from stackwars.results.crossover import crossovers, find_sweeps
from stackwars.results.schema import Cell, Steady


def cell(stack: str, n: int, median: float, spread: float = 0.01, **params: object) -> Cell:
    return Cell(
        workload="poly",
        params={"n": n, "dtype": "float32", **params},
        stack=stack,
        status="ok",
        steady=Steady(
            median_s=median, ci95_low_s=median * (1 - spread), ci95_high_s=median * (1 + spread)
        ),
    )


def sweep_cells(spread: float = 0.01) -> list[Cell]:
    # numpy: t = n² ns; jax: 1 ms overhead + n²/4 ns. Equal where n² * 3/4 ns = 1 ms.
    cells = []
    for n in (256, 512, 1024, 2048, 4096):
        cells.append(cell("numpy:eager", n, n * n * 1e-9, spread))
        cells.append(cell("jax:jit", n, 1e-3 + n * n * 0.25e-9, spread))
    return cells


def test_crossover_is_found_between_the_bracketing_sizes() -> None:
    (sweep,) = find_sweeps(sweep_cells())
    assert sweep.param == "n"
    (found,) = crossovers(sweep)
    assert found.below == "numpy:eager" and found.above == "jax:jit"
    assert found.between == (1024, 2048)
    # Interpolation in log-log space lands near the exact crossing, sqrt(4/3e-6) ≈ 1155.
    assert found.at == pytest.approx(1155, rel=0.1)
    assert not found.uncertain
    assert "jax:jit is faster than numpy:eager above n ≈" in found.describe()


def test_overlapping_intervals_make_the_crossover_uncertain() -> None:
    (sweep,) = find_sweeps(sweep_cells(spread=0.5))
    (found,) = crossovers(sweep)
    assert found.uncertain
    assert "within the noise" in found.describe()


def test_no_crossover_when_one_stack_is_always_faster() -> None:
    cells = [cell("a:eager", n, 1e-3 * n) for n in (1, 2, 4)]
    cells += [cell("b:eager", n, 2e-3 * n) for n in (1, 2, 4)]
    (sweep,) = find_sweeps(cells)
    assert crossovers(sweep) == []


def test_sweeps_keep_other_parameters_apart_and_skip_failures() -> None:
    cells = sweep_cells() + [cell("numpy:eager", n, 1.0, dtype="float64") for n in (1, 2)]
    cells.append(
        Cell(workload="poly", params={"n": 9999, "dtype": "float32"}, stack="jax:jit", status="oom")
    )
    sweeps = find_sweeps(cells)
    assert len(sweeps) == 2
    float32 = next(s for s in sweeps if ("dtype", "float32") in s.fixed)
    assert 9999.0 not in float32.series["jax:jit"]


def test_a_single_size_is_not_a_sweep() -> None:
    assert find_sweeps([cell("a:eager", 8, 1.0), cell("b:eager", 8, 2.0)]) == []
