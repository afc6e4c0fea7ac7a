"""Parity across stacks, in the parent, for cells no single process can check (a train step).

Each such cell's worker leaves a fingerprint (see ``parity.fingerprint``). The first stack of a
cell that ends ``ok`` becomes the anchor; every later stack of the same workload, parameters and
device is compared with it and becomes ``mismatch`` when it disagrees: its loss, or any sampled
updated weight, beyond the dtype's tolerance.

What one AdamW step can show, and what it cannot: AdamW's first step moves a weight by
``lr·g/(|g|+eps)`` (plus weight decay), the full learning rate whenever ``|g|`` is well above
``eps``, whatever the gradient's size. So the updated weights check each gradient's sign, not
its magnitude (the loss checks the forward). Two kinds of weights have a sign set by rounding:

* gradients within about a hundred ``eps`` of zero take a partial step; those that are zero
  in exact arithmetic, such as an attention key bias (softmax ignores a constant added to
  every score), do so on every stack. Weights whose step falls short of FULL_STEP_SHARE of the
  typical (median) step on both stacks are left out of the comparison;
* gradients that are small only relative to the float32 sums that produce them (a conv kernel
  element summed over 25 000 positions) can come out with either sign. At full size 0.5-1 %
  of ResNet-50's sampled weights do so between any two stacks (jax eager and jit included).
  Up to MAX_FLIP_SHARE of the compared weights, and MAX_TENSOR_FLIP_SHARE of any one weight
  tensor's, may therefore disagree: rounding scatters its flips over many tensors, while a
  stack that skips or inverts a tensor's update disagrees on all of that tensor's samples.

Both counts are reported in a warning when they are not zero.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from stackwars import workloads
from stackwars.results.schema import Cell

FULL_STEP_SHARE = 0.99
MAX_FLIP_SHARE = 0.02
MAX_TENSOR_FLIP_SHARE = 0.25
# What every disagreement adds: how far apart, what was allowed, and what sets it (a run's
# --rtol reaches only the check against a reference, in the worker).
ACROSS_STACKS_FIX = (
    "the largest difference {error:.2g} of the weights' RMS where rtol={rtol:.2g} was allowed; "
    "the workload's error_growth sets that tolerance for steps compared across stacks"
)


def _same_cell(a: Cell, b: Cell) -> bool:
    return (a.workload, a.params, a.device) == (b.workload, b.params, b.device)


def anchor_for(cell: Cell, earlier: Sequence[Cell]) -> Cell | None:
    for other in earlier:
        if other.status == "ok" and other.parity.fingerprint and _same_cell(cell, other):
            return other
    return None


def crosscheck(cell: Cell, earlier: Sequence[Cell]) -> None:
    """Compare ``cell`` with its anchor among ``earlier`` and set its parity and status."""
    parity = cell.parity
    if cell.status != "ok" or parity.reference != "stacks" or not parity.fingerprint:
        return
    anchor = anchor_for(cell, earlier)
    if anchor is None:
        cell.warnings.append(
            "no other stack has run this cell yet: the stacks that run it later are compared "
            "with this one"
        )
        return
    reason = _disagreement(cell, anchor)
    parity.compared_with = anchor.stack
    parity.ok = not reason
    if reason:
        sizes = ACROSS_STACKS_FIX.format(error=parity.max_rel_err or 0.0, rtol=parity.rtol or 0.0)
        cell.status, cell.reason = "mismatch", f"disagrees with {anchor.stack}: {reason}; {sizes}"


def _disagreement(cell: Cell, anchor: Cell) -> str:
    # NumPy only here: the parent stays light until a cross-stack comparison is due.
    import numpy as np

    parity, head = cell.parity, cell.parity.fingerprint_head or 1
    values: Any = np.array(parity.fingerprint)
    expected: Any = np.array(anchor.parity.fingerprint)
    if values.shape != expected.shape:
        return f"fingerprint has {values.size} values, {expected.size} expected"
    workload = workloads.get(cell.workload)
    dtype = parity.computed_dtype or "float32"
    error = np.abs(values - expected)
    weights = expected[head:]
    scale = float(np.sqrt(np.mean(weights**2))) if weights.size else 1.0
    loss_tol = workload.tolerance(cell.params, dtype, float(np.abs(expected[:head]).max()))
    tol = workload.tolerance(cell.params, dtype, scale)
    parity.rtol, parity.atol = tol.rtol, tol.atol
    parity.max_abs_err = float(error.max(initial=0.0))
    parity.max_rel_err = parity.max_abs_err / max(scale, 1e-300)
    if np.any(error[:head] > loss_tol.atol + loss_tol.rtol * np.abs(expected[:head])):
        return f"loss {values[:head].tolist()} vs {expected[:head].tolist()}"
    compared = _moved(cell, anchor)
    outside = (error[head:] > tol.atol + tol.rtol * np.abs(weights)) & compared
    return _judge(cell, compared, outside, f"atol={tol.atol:.2g}+rtol={tol.rtol:.2g}*|ref|")


def _judge(cell: Cell, compared: Any, outside: Any, tolerance: str) -> str:
    """The verdict on the sampled weights, given which were compared and which disagree."""
    import numpy as np

    skipped, disagree, total = int((~compared).sum()), int(outside.sum()), int(compared.sum())
    counts = cell.parity.fingerprint_counts or [compared.size]
    bounds = np.cumsum([0, *counts])
    worst = max(
        (outside[a:b].sum() / max(compared[a:b].sum(), 1) for a, b in itertools.pairwise(bounds)),
        default=0.0,
    )
    if disagree > MAX_FLIP_SHARE * total or worst > MAX_TENSOR_FLIP_SHARE:
        return (
            f"{disagree} of {total} sampled updated weights beyond {tolerance} "
            f"(up to {MAX_FLIP_SHARE:.0%} may move the other way; the worst weight tensor has "
            f"{worst:.0%} of its samples off)"
        )
    if skipped or disagree:
        cell.warnings.append(
            f"of {compared.size} sampled weights, {skipped} took a partial AdamW step on both "
            f"stacks (gradient near zero) and were not compared, and {disagree} moved the other "
            "way (gradient at rounding level); see docs/methodology.md"
        )
    return ""


def _moved(cell: Cell, anchor: Cell) -> Any:
    """Which sampled weights took a full step on either stack (see the module docstring)."""
    import numpy as np

    steps = np.abs(np.array(cell.parity.fingerprint_steps or []))
    anchor_steps = np.abs(np.array(anchor.parity.fingerprint_steps or []))
    if steps.shape != anchor_steps.shape or not steps.size:
        size = len(cell.parity.fingerprint or []) - (cell.parity.fingerprint_head or 1)
        return np.ones(size, bool)
    floor = FULL_STEP_SHARE * float(np.median(anchor_steps))
    return (steps >= floor) | (anchor_steps >= floor)
