"""Seed 000's JIT pitfalls and their fixes, Python side effects, and retracing on a new shape.

Each builder is what a user of that framework writes for the same intent; where a framework
has its own idiom (``tf.boolean_mask``, ``tf.reshape`` with a shape tensor), that idiom is used,
since the question is what happens to that user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.instruments.behave.probes import Prepare, Probe, register
from stackwars.instruments.behave.probes._arrays import NATIVE_FRAMEWORKS, affine

Fn = Callable[..., Any]


def _vector(n: int = 10, seed: int = 0) -> Any:
    import numpy as np

    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _f64(x: Any) -> Any:
    import numpy as np

    return np.asarray(x, dtype=np.float64)


# 1. Dynamic shapes: boolean indexing makes the result's shape depend on the values.


def _negatives_numpy(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    return prepare(lambda x: x[x < 0])


def _negatives_jax(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def get_negatives(x: Any) -> Any:
        return x[x < 0]

    return prepare(get_negatives)


def _negatives_torch(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def get_negatives(x: Any) -> Any:
        return x[x < 0]

    return prepare(get_negatives)


def _negatives_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    def get_negatives(x: Any) -> Any:
        return tf.boolean_mask(x, x < 0)

    return prepare(get_negatives)


register(
    Probe(
        name="boolean-mask",
        description="x[x < 0]: the negatives of a vector (the result's shape depends on values)",
        calls=lambda: [(_vector(),)],
        reference=lambda args: _f64(args[0])[_f64(args[0]) < 0],
        implementations={
            "numpy": _negatives_numpy,
            "jax": _negatives_jax,
            "torch": _negatives_torch,
            "tensorflow": _negatives_tensorflow,
        },
    )
)


# 2. Value-dependent control flow, and the fix: the flag as a static argument.


def _negate(x: Any, neg: bool) -> Any:
    return -x if neg else x


def _value_if(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    return prepare(_negate)


def _value_if_static_jax(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import jax

    # The seed's fix: neg is known when tracing, one compilation per value.
    return jax.jit(_negate, static_argnames=["neg"]) if mode == "jit" else _negate


_FLAGS = (True, False, True)
# jax gets the seed's own code; every other framework the same plain function.
_SAME_FRAMEWORKS = tuple(name for name in NATIVE_FRAMEWORKS if name != "jax")

register(
    Probe(
        name="value-if",
        description="-x if neg else x, called with neg True, False, True (a Python bool)",
        calls=lambda: [(_vector(), neg) for neg in _FLAGS],
        reference=lambda args: -_f64(args[0]) if args[1] else _f64(args[0]),
        implementations=dict.fromkeys(("jax", *_SAME_FRAMEWORKS), _value_if),
    )
)
register(
    Probe(
        name="value-if-static",
        description="the fix: neg a static argument (jax static_argnames; elsewhere the same "
        "code), one compilation per value of neg",
        calls=lambda: [(_vector(), neg) for neg in _FLAGS],
        reference=lambda args: -_f64(args[0]) if args[1] else _f64(args[0]),
        implementations={"jax": _value_if_static_jax, **dict.fromkeys(_SAME_FRAMEWORKS, _value_if)},
        expected_compiles=2,
    )
)


# 3. A shape computed as an array, and the fix: the product of the static shape.


def _flatten_traced_jax(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import jax.numpy as jnp

    return prepare(lambda x: x.reshape(jnp.array(x.shape).prod()))


def _flatten_traced_numpy(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import numpy as np

    return prepare(lambda x: x.reshape(np.array(x.shape).prod()))


def _flatten_traced_torch(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import torch

    return prepare(lambda x: x.reshape(torch.tensor(x.shape).prod()))


def _flatten_traced_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    return prepare(lambda x: tf.reshape(x, [tf.reduce_prod(tf.shape(x))]))


def _flatten_static(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import numpy as np

    return prepare(lambda x: x.reshape((int(np.prod(x.shape)),)))


def _flatten_static_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import numpy as np
    import tensorflow as tf

    return prepare(lambda x: tf.reshape(x, (int(np.prod(x.shape)),)))


def _matrix() -> Any:
    return _vector(6).reshape(2, 3)


register(
    Probe(
        name="array-shape",
        description="x.reshape(array(x.shape).prod()): a shape computed as an array",
        calls=lambda: [(_matrix(),)],
        reference=lambda args: _f64(args[0]).reshape(-1),
        implementations={
            "numpy": _flatten_traced_numpy,
            "jax": _flatten_traced_jax,
            "torch": _flatten_traced_torch,
            "tensorflow": _flatten_traced_tensorflow,
        },
    )
)
register(
    Probe(
        name="static-shape",
        description="the fix: x.reshape((np.prod(x.shape),)), the shape known when tracing",
        calls=lambda: [(_matrix(),)],
        reference=lambda args: _f64(args[0]).reshape(-1),
        implementations={
            "numpy": _flatten_static,
            "jax": _flatten_static,
            "torch": _flatten_static,
            "tensorflow": _flatten_static_tensorflow,
        },
    )
)


# 4. A Python side effect (a print, an append) inside the function, over three calls.


def _side_effect(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    def double(x: Any) -> Any:
        tally()  # stands for print(x) or log.append(x): Python, not an array operation
        return x * 2

    return prepare(double)


register(
    Probe(
        name="side-effect",
        description="a print inside the function: does it run on each of 3 calls?",
        calls=lambda: [(_vector(),) for _ in range(3)],
        reference=lambda args: _f64(args[0]) * 2,
        implementations=dict.fromkeys(NATIVE_FRAMEWORKS, _side_effect),
        side_effect_per_call=True,
    )
)


# 5. A new shape on the third call: how many compilations?


register(
    Probe(
        name="new-shape",
        description="x * 2 + 1 on shapes (4,), (4,), (8,): one compilation expected",
        calls=lambda: [(_vector(4),), (_vector(4),), (_vector(8),)],
        reference=lambda args: _f64(args[0]) * 2 + 1,
        implementations=dict.fromkeys(NATIVE_FRAMEWORKS, affine),
    )
)


# 6. A global the function reads, changed between calls: does the second call see it?


def _captured_global(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    settings = {"scale": 2.0}  # stands for a module-level global the function reads
    compiled = prepare(lambda x: x * settings["scale"])

    def call(x: Any, scale: float) -> Any:
        settings["scale"] = scale  # the user's code changes the global between calls
        return compiled(x)

    return call


register(
    Probe(
        name="captured-global",
        description="x * SCALE with the global SCALE 2.0, then 3.0: does call 2 see 3.0?",
        calls=lambda: [(_vector(), 2.0), (_vector(), 3.0)],
        reference=lambda args: _f64(args[0]) * args[1],
        implementations=dict.fromkeys(NATIVE_FRAMEWORKS, _captured_global),
    )
)
