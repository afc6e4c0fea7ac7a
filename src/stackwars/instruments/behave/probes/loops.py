"""A Python loop over a value held in an array: a count read with ``int()``, and a ``while``
whose condition is computed from the data.

Both run eagerly everywhere. Compiling meets a value it cannot know while tracing: JAX
refuses it, torch.compile leaves its graph to ask Python (a graph break), and AutoGraph turns
both loops into a ``tf.while_loop``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.instruments.behave.probes import Prepare, Probe, register
from stackwars.instruments.behave.probes._arrays import NATIVE_FRAMEWORKS, f64, small

Fn = Callable[..., Any]


def _count(n: int) -> Any:
    import numpy as np

    return np.array(n, dtype=np.int32)


# 1. for _ in range(int(n)), n an array argument.


def _doublings(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def double_n_times(x: Any, n: Any) -> Any:
        for _ in range(int(n)):
            x = x * 2
        return x

    return prepare(double_n_times)


register(
    Probe(
        name="range-loop",
        description="for _ in range(int(n)): x = x * 2, n an array (2, then 3): one "
        "compilation, the loop run n times",
        calls=lambda: [(small(), _count(2)), (small(), _count(3))],
        reference=lambda args: f64(args[0]) * 2 ** int(args[1]),
        implementations=dict.fromkeys(NATIVE_FRAMEWORKS, _doublings),
    )
)


# 2. while the largest magnitude exceeds 1: halve. The number of passes depends on the data.


def _halve_numpy(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import numpy as np

    def halve_until_small(x: Any) -> Any:
        while np.abs(x).max() > 1:
            x = x / 2
        return x

    return prepare(halve_until_small)


def _halve_jax(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import jax.numpy as jnp

    def halve_until_small(x: Any) -> Any:
        while jnp.abs(x).max() > 1:
            x = x / 2
        return x

    return prepare(halve_until_small)


def _halve_torch(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def halve_until_small(x: Any) -> Any:
        while x.abs().max() > 1:
            x = x / 2
        return x

    return prepare(halve_until_small)


def _halve_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    def halve_until_small(x: Any) -> Any:
        while tf.reduce_max(tf.abs(x)) > 1:
            x = x / 2
        return x

    return prepare(halve_until_small)


def _halved(x: Any) -> Any:
    y = f64(x)
    while abs(y).max() > 1:
        y = y / 2
    return y


register(
    Probe(
        name="while-loop",
        description="while max |x| > 1: x = x / 2, on [0..3] then [0..300] (2, then 9 "
        "passes): one compilation, the loop run until the data say stop",
        calls=lambda: [(small(),), (small() * 100,)],
        reference=lambda args: _halved(args[0]),
        implementations={
            "numpy": _halve_numpy,
            "jax": _halve_jax,
            "torch": _halve_torch,
            "tensorflow": _halve_tensorflow,
        },
    )
)
