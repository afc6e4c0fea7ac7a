"""Parity: does a stack's result agree with the float64 NumPy reference?

Runs inside the worker, outside timing. Each result array is compared with its reference
array: an element passes when ``|out - ref| <= atol + rtol * |ref|``, where ``rtol`` depends
on the dtype the stack actually computed and ``atol`` is ``rtol`` times the RMS of the
reference, so that elements near zero are judged against the size of the whole result.
Random draws (``Workload.sampled``) are judged by their statistics instead: each must land
within what chance alone allows of the value the reference gives for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from stackwars.frameworks.base import flatten
from stackwars.results.schema import Parity
from stackwars.workloads.base import Sampled, Tolerance, Workload

FINGERPRINT_SAMPLES = 16
# A float32 result may be this many times further from the float64 reference than plain
# float32 rounding of the same computation (the workload's control) is: other summation orders,
# fused kernels and library approximations stay well inside it, a wrong result does not.
CONTROL_FACTOR = 10
# A miss within this many tolerances (and this far from the reference, relative to its RMS)
# looks like rounding rather than a wrong result, which misses by far more: a sum over k terms
# gathers rounding error with k, and a workload that declares no error_growth gets a hint.
ROUNDING_HINT_TOLERANCES = 1000
ROUNDING_HINT_MAX_RELATIVE = 0.05
# The --rtol a miss suggests sits this far above the smallest that passes: printed to two
# digits, the smallest itself could round below what it must be.
SUGGESTED_MARGIN = 1.1
NOT_ROUNDING = (
    "an error this size is not rounding: a wider tolerance would hide a wrong result; look for "
    "a difference in the implementation, or a dtype narrower than the inputs'"
)
NON_FINITE = (
    "no tolerance accepts NaN or inf (an overflow, or a division by zero the reference avoids)"
)


def computed_dtype(arrays: list[np.ndarray]) -> str:
    names = sorted({str(a.dtype) for a in arrays if np.issubdtype(a.dtype, np.inexact)})
    return ",".join(names) or (str(arrays[0].dtype) if arrays else "none")


# Float32 matmuls in TF32 (--matmul-precision high, or a GPU framework's default) round each
# product's inputs to 10 mantissa bits: every product is off by up to 2^-10 of itself, an error
# that, unlike the sum's rounding, does not grow with its length. Relative to the result's RMS
# it stays a few units of 2^-11: GEMM 8192² on an H100 (2026-11-26) missed by 2e-3 at most.
TF32_RTOL = 10 * 2.0**-11


@dataclass(frozen=True)
class Asked:
    """The run's own tolerance (--rtol, --atol), replacing the workload's where given: the
    relative part, and the absolute part (by default rtol times the reference's RMS); and
    whether float32 matmuls may have run in TF32 (``tf32``: then a float32 result gets at
    least TF32_RTOL)."""

    rtol: float | None = None
    atol: float | None = None
    tf32: bool = False


def _tolerance(
    workload: Workload,
    params: Mapping[str, Any],
    dtype: str,
    ref: np.ndarray,
    control: np.ndarray | None,
    *,
    asked: Asked,
) -> tuple[Tolerance, float]:
    """The tolerance for one output, with the RMS of the reference: the run's own where it
    asked for one, else the workload's; a float32 result's widened to TF32_RTOL where its
    matmuls may have run in TF32, and to CONTROL_FACTOR times the float32 control's own error
    when there is a control."""
    scale = float(np.sqrt(np.mean(ref * ref))) if ref.size else 0.0
    tolerance = workload.tolerance(params, dtype, scale)
    if asked.rtol is not None or asked.atol is not None:
        rtol = tolerance.rtol if asked.rtol is None else asked.rtol
        atol = rtol * scale if asked.atol is None else asked.atol
        return Tolerance(rtol=rtol, atol=atol), scale
    if dtype != "float32":
        return tolerance, scale
    rtol = max(tolerance.rtol, TF32_RTOL) if asked.tf32 else tolerance.rtol
    if control is not None:
        control_rel = float(np.abs(control - ref).max(initial=0.0)) / max(scale, 1e-300)
        rtol = max(rtol, CONTROL_FACTOR * control_rel)
    return Tolerance(rtol=rtol, atol=rtol * scale), scale


def check(
    workload: Workload,
    params: Mapping[str, Any],
    outputs: list[np.ndarray],
    reference: Any,
    *,
    computed: str | None = None,
    control: Any = None,
    asked: Asked | None = None,
) -> tuple[Parity, str]:
    """Parity of ``outputs`` against ``reference``; the reason is empty when they agree.
    ``computed`` names the dtype the stack computed in when its outputs were widened for the
    host (NumPy has no bfloat16); by default it is read from the outputs. ``control`` is the
    workload's float32 control, if it has one (see ``Workload.control``); ``asked`` the run's
    own tolerance. A miss says how far off the result is, what was allowed, and what would
    change the verdict."""
    if workload.sampled is not None:
        return _check_sampled(workload.sampled, params, outputs, reference, computed)
    expected = [np.asarray(r, dtype=np.float64) for r in flatten(reference)]
    controls = (
        None if control is None else [np.asarray(c, dtype=np.float64) for c in flatten(control)]
    )
    dtype = computed or computed_dtype(outputs)
    parity = Parity(
        computed_dtype=dtype, requested_dtype=params.get("dtype"), reference="numpy float64"
    )
    if len(outputs) != len(expected):
        parity.ok = False
        return parity, f"returned {len(outputs)} arrays, the reference has {len(expected)}"
    worst_abs = worst_rel = 0.0
    failures = []
    for index, (out, ref) in enumerate(zip(outputs, expected, strict=True)):
        if out.shape != ref.shape:
            parity.ok = False
            return parity, f"output {index} has shape {out.shape}, the reference {ref.shape}"
        own = controls[index] if controls and controls[index].shape == ref.shape else None
        kind = computed or str(out.dtype)
        tolerance, scale = _tolerance(workload, params, kind, ref, own, asked=asked or Asked())
        error = np.abs(out.astype(np.float64) - ref)
        if not np.all(np.isfinite(error)):
            failures.append(f"output {index} has non-finite values: {NON_FINITE}")
            worst_abs = worst_rel = float("inf")
            continue
        allowed = tolerance.atol + tolerance.rtol * np.abs(ref)
        worst_abs = max(worst_abs, float(error.max(initial=0.0)))
        worst_rel = max(worst_rel, float(error.max(initial=0.0)) / max(scale, 1e-300))
        parity.rtol, parity.atol = tolerance.rtol, tolerance.atol
        if np.any(error > allowed):
            failures.append(_miss(index, error, ref, tolerance, scale))
    parity.max_abs_err, parity.max_rel_err = worst_abs, worst_rel
    parity.ok = not failures
    if failures and controls is None:
        failures.extend(filter(None, [_error_growth_hint(workload, params, parity)]))
    return parity, "; ".join(failures)


def _miss(
    index: int, error: np.ndarray, ref: np.ndarray, tolerance: Tolerance, scale: float
) -> str:
    """One output's miss: how many elements, the largest error relative to the result's RMS,
    what was allowed, and the --rtol that would accept it (with atol following rtol, as by
    default), or why this is not rounding."""
    beyond = int(np.sum(error > tolerance.atol + tolerance.rtol * np.abs(ref)))
    relative = float(error.max(initial=0.0)) / max(scale, 1e-300)
    # The smallest rtol with atol = rtol * RMS under which every element passes.
    needed = float(np.max(error / np.maximum(scale + np.abs(ref), 1e-300)))
    text = (
        f"output {index}: {beyond} of {error.size} elements beyond the tolerance, the largest "
        f"error {relative:.2g} of the result's RMS where rtol={tolerance.rtol:.2g} and "
        f"atol={tolerance.atol:.2g} were allowed; --rtol {needed * SUGGESTED_MARGIN:.2g} "
        "would accept it"
    )
    if not rounding_sized(relative, tolerance.rtol):
        text += f" ({NOT_ROUNDING})"
    return text


def rounding_sized(relative: float, rtol: float) -> bool:
    """Whether a miss of ``relative`` (of the result's RMS) against ``rtol`` looks like
    rounding rather than a wrong result (see ROUNDING_HINT_TOLERANCES)."""
    return relative <= min(ROUNDING_HINT_TOLERANCES * rtol, ROUNDING_HINT_MAX_RELATIVE)


def _error_growth_hint(workload: Workload, params: Mapping[str, Any], parity: Parity) -> str:
    """How to declare accumulated rounding, when the miss is rounding-sized and the workload
    allows its dtype's base tolerance only (no ``error_growth``)."""
    if workload.error_growth(params) != 1.0 or parity.rtol is None or parity.max_rel_err is None:
        return ""
    times = parity.max_rel_err / parity.rtol
    if not rounding_sized(parity.max_rel_err, parity.rtol):
        return ""
    return (
        f"an error {times:.0f}x the tolerance is the size of rounding: if the result sums many "
        "terms (a matmul, a reduction) or is a long expression, its rounding error grows with "
        "their number; declare it with Workload(error_growth=...), e.g. lambda params: "
        "math.sqrt(params['n']) for sums of n terms, which multiplies the tolerance"
    )


def _check_sampled(
    sampled: Sampled,
    params: Mapping[str, Any],
    outputs: list[np.ndarray],
    reference: Any,
    computed: str | None,
) -> tuple[Parity, str]:
    """Each output's statistics against their expected values (the reference), each within
    what chance alone allows; the reason is empty when all are."""
    expected = [np.asarray(r, dtype=np.float64) for r in flatten(reference)]
    allowed = np.asarray(sampled.allowed(params), dtype=np.float64)
    parity = Parity(
        computed_dtype=computed or computed_dtype(outputs),
        requested_dtype=params.get("dtype"),
        reference="expected statistics",
        rtol=0.0,
        atol=float(allowed.max(initial=0.0)),
    )
    if len(outputs) != len(expected):
        parity.ok = False
        return parity, f"returned {len(outputs)} arrays, the reference has {len(expected)}"
    failures, worst = [], 0.0
    for index, (out, want) in enumerate(zip(outputs, expected, strict=True)):
        got = np.asarray(sampled.statistics(np.ravel(out).astype(np.float64)), dtype=np.float64)
        error = np.abs(got - want)
        # NaN statistics compare false: they fail, as they should.
        if not np.all(error <= allowed):
            failures.append(
                f"output {index}: statistics {_listed(got)} where {_listed(want)} "
                f"± {_listed(allowed)} expected"
            )
        finite = np.all(np.isfinite(error))
        worst = max(worst, float(error.max(initial=0.0))) if finite else float("inf")
    parity.max_abs_err, parity.ok = worst, not failures
    return parity, "; ".join(failures)


def _listed(values: np.ndarray) -> str:
    return ", ".join(f"{v:.4g}" for v in np.ravel(values))


def fingerprint(
    outputs: list[np.ndarray],
    inputs: tuple[Any, ...],
    params: Mapping[str, Any],
    computed: str | None,
) -> Parity:
    """What the parent compares across stacks when no reference exists: a train step, whose
    first output is the loss and whose other outputs are the new values of the first inputs
    (the weights). Kept: the loss whole, and FINGERPRINT_SAMPLES evenly spaced elements of
    every new weight and of its step (new minus old), so that a billion weights fit in a
    result file."""
    values = [float(v) for v in np.ravel(outputs[0]).astype(np.float64)]
    steps: list[float] = []
    counts: list[int] = []
    for new, old in zip(outputs[1:], inputs, strict=False):
        flat = np.ravel(new).astype(np.float64)
        picks = np.linspace(0, flat.size - 1, min(FINGERPRINT_SAMPLES, flat.size)).astype(int)
        values.extend(flat[picks].tolist())
        counts.append(picks.size)
        steps.extend((flat[picks] - np.ravel(old)[picks].astype(np.float64)).tolist())
    return Parity(
        ok=None,
        computed_dtype=computed or computed_dtype(outputs),
        requested_dtype=params.get("dtype"),
        reference="stacks",
        fingerprint=values,
        fingerprint_head=int(np.size(outputs[0])),
        fingerprint_steps=steps,
        fingerprint_counts=counts,
    )
