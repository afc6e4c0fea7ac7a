"""Retracing on what a user thinks is the same call: a new dtype, and a scalar given as a 0-d
array, a Python float or a NumPy float32 (JAX's weak types: a Python float is "float32 unless
something says otherwise", a different signature from a float32 array).

The user these probes speak for expects one compilation; the worker reports each call's time
and whether it compiled, so a retrace's cost is read off the detail line. On jax:jit the
0-d array arrives placed on its device (committed, as the worker places every array), which
``jax.jit`` keys apart from an uncommitted NumPy scalar of the same dtype as well (seen in
its cache size): only the recompile of the Python float is the weak type's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.instruments.behave.probes import Prepare, Probe, register
from stackwars.instruments.behave.probes._arrays import NATIVE_FRAMEWORKS, affine, f64, small

Fn = Callable[..., Any]


register(
    Probe(
        name="new-dtype",
        description="x * 2 + 1 on float32, float64, then int32 vectors of one shape: one "
        "compilation expected",
        calls=lambda: [(small("float32"),), (small("float64"),), (small("int32"),)],
        reference=lambda args: f64(args[0]) * 2 + 1,
        implementations=dict.fromkeys(NATIVE_FRAMEWORKS, affine),
    )
)


def _scale(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    return prepare(lambda x, s: x * s)


def _scalars() -> list[tuple[Any, ...]]:
    import numpy as np

    x = small()
    return [(x, np.array(2.0, np.float32)), (x, 2.0), (x, np.float32(2.0)), (x, 3.0)]


register(
    Probe(
        name="python-scalar",
        description="x * s, s = array(2.0), the Python float 2.0, np.float32(2.0), then 3.0 "
        "(float32 all, to a NumPy user): one compilation expected",
        calls=_scalars,
        reference=lambda args: f64(args[0]) * float(args[1]),
        implementations=dict.fromkeys(NATIVE_FRAMEWORKS, _scale),
    )
)
