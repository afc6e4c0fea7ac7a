"""Parity's tolerances: float64 defaults a long elementwise expression passes (from rounding
analysis, workloads/base.py), a run's own --rtol/--atol (recorded with the run), and a miss
that always says how far off it is, what was allowed and what would change it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stackwars.errors import UsageError
from stackwars.results.schema import CellSpec
from stackwars.runner import parity
from stackwars.runner.session import request_for
from stackwars.service.choices import Measure, run_options
from stackwars.workloads.base import Param, Work, Workload

# A Chebyshev series of this degree written out as a polynomial, as code that hard-codes its
# coefficients does: 33 operations with a condition number (sum |c_k| / |f|) near 2e5, so
# kappa * n stays inside the 1e8 the float64 default admits (workloads/base.py).
DEGREE = 16


def chebyshev_inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, 2**16), rng.standard_normal(DEGREE + 1)


def horner(series: np.ndarray, x: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """The series as hard-coded monomial coefficients, by Horner's rule, in ``dtype``."""
    coefficients = np.polynomial.chebyshev.cheb2poly(series).astype(dtype)
    x = x.astype(dtype)
    result = np.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        result = result * x + c
    return result.astype(np.float64)


def clenshaw(series: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The same function by Clenshaw's recurrence on the series (other rounding)."""
    return np.polynomial.chebyshev.chebval(x, series)


def workload(error_growth: Callable[[Any], float] = lambda params: 1.0) -> Workload:
    return Workload(
        name="chebyshev",
        description="a Chebyshev series",
        params=(Param("n", int, 8, "length"),),
        make_inputs=lambda params, seed: chebyshev_inputs(seed),
        reference=lambda params, xs: clenshaw(xs[1], xs[0]),
        work=lambda params: Work(flops=1.0, bytes=1.0),
        memory_bytes=lambda params: 1,
        implementations={},
        error_growth=error_growth,
    )


def test_a_long_float64_expression_evaluated_another_way_passes_the_defaults() -> None:
    """Horner on monomials against Clenshaw on the series differ by rounding alone (1.5e-11
    of the result's scale here, beyond the former default 1e-12), well inside the float64
    default."""
    x, series = chebyshev_inputs()
    result, reason = parity.check(workload(), {}, [horner(series, x)], clenshaw(series, x))
    assert result.ok, reason
    assert result.computed_dtype == "float64" and result.max_rel_err


def test_the_float64_default_still_catches_a_result_that_went_through_float32() -> None:
    x, series = chebyshev_inputs()
    narrowed = horner(series, x, np.float32)
    result, reason = parity.check(workload(), {}, [narrowed], clenshaw(series, x))
    assert not result.ok
    assert "of the result's RMS" in reason and "--rtol" in reason


def test_a_miss_gives_the_error_the_tolerance_and_an_rtol_that_passes() -> None:
    x, series = chebyshev_inputs()
    reference = clenshaw(series, x)
    off = reference * (1 + 3e-7)  # rounding-sized for float32, far past float64's default
    result, reason = parity.check(workload(), {}, [off], reference)
    assert not result.ok and result.rtol is not None
    assert f"rtol={result.rtol:.2g}" in reason
    assert f"the largest error {result.max_rel_err:.2g} of the result's RMS" in reason
    assert "Workload(error_growth=...)" in reason  # rounding-sized, none declared
    suggested = float(reason.split("--rtol ")[1].split()[0])
    asked = parity.Asked(rtol=suggested)
    accepted, none = parity.check(workload(), {}, [off], reference, asked=asked)
    assert accepted.ok and not none and accepted.rtol == suggested


def test_a_miss_far_beyond_rounding_says_a_tolerance_would_hide_it() -> None:
    x, series = chebyshev_inputs()
    reference = clenshaw(series, x)
    grown = workload(error_growth=lambda params: 10.0)
    result, reason = parity.check(grown, {}, [reference + 1.0], reference)
    assert not result.ok
    assert parity.NOT_ROUNDING in reason and "--rtol" in reason
    assert "Workload(error_growth=...)" not in reason


def test_atol_alone_replaces_the_absolute_part_only() -> None:
    reference = np.array([0.0, 1.0, -1.0])
    near_zero = reference + np.array([1e-3, 0.0, 0.0])
    asked = parity.Asked(atol=2e-3)
    result, reason = parity.check(workload(), {}, [near_zero], reference, asked=asked)
    assert result.ok, reason
    assert result.atol == 2e-3 and result.rtol == pytest.approx(2.0**-53 * 1e8)


def test_rtol_and_atol_are_checked_recorded_and_sent_to_every_worker(tmp_path: Path) -> None:
    options = run_options(Measure(rtol=1e-6, atol=1e-9), "cpu", None, [])
    assert options.to_dict()["rtol"] == 1e-6 and options.to_dict()["atol"] == 1e-9
    request = request_for(CellSpec("selu", {"n": 8}, "numpy:eager"), options, tmp_path)
    assert (request.rtol, request.atol) == (1e-6, 1e-9)
    with pytest.raises(UsageError, match=r"--rtol -1.0 must be a positive number"):
        run_options(Measure(rtol=-1.0), "cpu", None, [])


def tf32(array: np.ndarray) -> np.ndarray:
    """``array`` (float32) with its mantissa cut to TF32's 10 bits, as a TF32 matmul reads it."""
    bits = array.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32)


def test_a_tf32_gemm_passes_only_where_tf32_may_have_run_and_a_wrong_one_never() -> None:
    # On an H100 (2026-11-26) every GEMM under --matmul-precision high failed parity: TF32 is
    # not float32. Where the precision asked for allows TF32, parity allows TF32's error.
    from stackwars import workloads

    gemm = workloads.get("gemm")
    params = gemm.resolve({"n": 256})
    a, b = gemm.make_inputs(params, 0)
    reference = gemm.reference(params, (a, b))
    tf32_result = (tf32(a).astype(np.float64) @ tf32(b).astype(np.float64)).astype(np.float32)
    _, missed = parity.check(gemm, params, [tf32_result], reference)
    assert missed, "TF32 is outside float32's tolerance"
    checked, reason = parity.check(
        gemm, params, [tf32_result], reference, asked=parity.Asked(tf32=True)
    )
    assert not reason and checked.rtol == parity.TF32_RTOL
    wrong = (tf32_result * 1.02).astype(np.float32)
    _, missed = parity.check(gemm, params, [wrong], reference, asked=parity.Asked(tf32=True))
    assert missed, "a 2 % error is no TF32 rounding"
