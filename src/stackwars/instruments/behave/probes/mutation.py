"""In-place mutation of an input: does the write reach the caller's array?

NumPy's semantics are the expectation stated in each description: ``x[0] = 1`` and ``x += 1``
change the caller's array, and a copy-then-set leaves it alone. The worker compares the
caller's argument after the call with what NumPy would leave there (``Probe.input_after``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.instruments.behave.probes import Prepare, Probe, register
from stackwars.instruments.behave.probes._arrays import NATIVE_FRAMEWORKS, f64, small

Fn = Callable[..., Any]


def _first_set(x: Any) -> Any:
    y = f64(x)
    y[0] = 1
    return y


# 1. x[0] = 1, the NumPy idiom, written as is on every framework.


def _setitem(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def set_first(x: Any) -> Any:
        x[0] = 1
        return x * 2

    return prepare(set_first)


register(
    Probe(
        name="setitem-input",
        description="x[0] = 1 on the input, then x * 2: the result and the caller's x both "
        "hold the 1 (NumPy semantics)",
        calls=lambda: [(small(),)],
        reference=lambda args: _first_set(args[0]) * 2,
        implementations=dict.fromkeys(NATIVE_FRAMEWORKS, _setitem),
        input_after=lambda args: _first_set(args[0]),
    )
)


# 2. x += 1: in place in NumPy (and torch's x.add_(1)); a new array bound to x in JAX and TF.


def _iadd(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def increment(x: Any) -> Any:
        x += 1
        return x

    return prepare(increment)


def _add_torch(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def increment(x: Any) -> Any:
        x.add_(1)
        return x

    return prepare(increment)


register(
    Probe(
        name="inplace-add",
        description="x += 1 on the input (torch: x.add_(1)), then return x: the caller's x is "
        "incremented too (NumPy semantics)",
        calls=lambda: [(small(),)],
        reference=lambda args: f64(args[0]) + 1,
        implementations={"numpy": _iadd, "jax": _iadd, "torch": _add_torch, "tensorflow": _iadd},
        input_after=lambda args: f64(args[0]) + 1,
    )
)


# 3. The functional update (JAX's x.at[0].set(1)): a new array, the caller's untouched.


def _at_set_jax(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    return prepare(lambda x: x.at[0].set(1))


def _copy_set_numpy(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def set_first(x: Any) -> Any:
        y = x.copy()
        y[0] = 1
        return y

    return prepare(set_first)


def _clone_set_torch(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def set_first(x: Any) -> Any:
        y = x.clone()
        y[0] = 1
        return y

    return prepare(set_first)


def _scatter_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    return prepare(lambda x: tf.tensor_scatter_nd_update(x, [[0]], tf.ones([1], x.dtype)))


register(
    Probe(
        name="functional-set",
        description="y = x.at[0].set(1) (jax; numpy copy(), torch clone(), then y[0] = 1; tf "
        "tensor_scatter_nd_update): y holds the 1, the caller's x is unchanged",
        calls=lambda: [(small(),)],
        reference=lambda args: _first_set(args[0]),
        implementations={
            "numpy": _copy_set_numpy,
            "jax": _at_set_jax,
            "torch": _clone_set_torch,
            "tensorflow": _scatter_tensorflow,
        },
        input_after=lambda args: f64(args[0]),
    )
)
