"""What comes back: a float64 input when 64-bit is not enabled, and an index out of bounds.

The expectation is NumPy's, as a user arriving from it holds it: float64 in, float64 out
(``Probe.dtype_matters``), and ``IndexError`` for an index past the end (the reference raises
it, so the worker expects that class).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.instruments.behave.probes import Prepare, Probe, register
from stackwars.instruments.behave.probes._arrays import NATIVE_FRAMEWORKS, affine, f64, small

Fn = Callable[..., Any]


register(
    Probe(
        name="float64-input",
        description="x * 2 + 1 on a float64 vector, 64-bit not enabled anywhere: float64 "
        "comes back, as in NumPy",
        calls=lambda: [(small("float64"),)],
        reference=lambda args: f64(args[0]) * 2 + 1,
        implementations=dict.fromkeys(NATIVE_FRAMEWORKS, affine),
        dtype_matters=True,
    )
)


def _take(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    return prepare(lambda x, i: x[i])


def _gather_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    def take(x: Any, i: Any) -> Any:
        return tf.gather(x, i)

    return prepare(take)


def _indices() -> Any:
    import numpy as np

    return np.array([1, 10], dtype=np.int32)


register(
    Probe(
        name="out-of-bounds",
        description="x[i] with i = [1, 10] on x = [0, 1, 2, 3] (tf.gather): an IndexError, "
        "as NumPy raises",
        calls=lambda: [(small(), _indices())],
        reference=lambda args: f64(args[0])[args[1]],
        implementations={
            "numpy": _take,
            "jax": _take,
            "torch": _take,
            "tensorflow": _gather_tensorflow,
        },
    )
)
