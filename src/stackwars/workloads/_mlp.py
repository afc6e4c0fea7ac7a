"""A small MLP and its squared-error loss, shared by the ``hvp`` workload (derivatives.py) and
the per-example gradients of ``vmap-grad`` (vmap.py): seeded weights, the gradients written by
hand in NumPy (the float64 references, and what a NumPy user writes without autodiff), and the
loss as each framework's user writes it. Registers no workload.

The model is o = tanh(x·W1 + b1)·W2 + b2, weights in [in, out] layout, and one example's loss
is ½·|o - y|². With x of shape [batch, features] the loss is the sum over the batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads._inputs import BIAS_STD, normal
from stackwars.workloads.base import Param

BATCH = Param("batch", int, 64, "examples", minimum=1)
FEATURES = Param("features", int, 64, "inputs per example", minimum=1)
HIDDEN = Param("hidden", int, 128, "hidden units", minimum=1)
OUTPUTS = Param("outputs", int, 8, "outputs per example", minimum=1)
SIZES = (BATCH, FEATURES, HIDDEN, OUTPUTS)
TINY = {"batch": 3, "features": 4, "hidden": 5, "outputs": 2}


def dims(params: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(batch, features, hidden, outputs)."""
    return params["batch"], params["features"], params["hidden"], params["outputs"]


def weight_count(params: Mapping[str, Any]) -> int:
    _, d, h, o = dims(params)
    return d * h + h + h * o + o


def weights(params: Mapping[str, Any], rng: Any) -> list[Any]:
    """W1, b1, W2, b2; weights scaled by 1/sqrt(fan-in) keep activations near unit variance."""
    _, d, h, o = dims(params)
    dtype = params["dtype"]
    return [
        normal(rng, (d, h), dtype, 1.0 / math.sqrt(d)),
        normal(rng, (h,), dtype, BIAS_STD),
        normal(rng, (h, o), dtype, 1.0 / math.sqrt(h)),
        normal(rng, (o,), dtype, BIAS_STD),
    ]


def data(params: Mapping[str, Any], rng: Any) -> list[Any]:
    """Examples x [batch, features] and targets y [batch, outputs]."""
    b, d, _, o = dims(params)
    return [normal(rng, (b, d), params["dtype"]), normal(rng, (b, o), params["dtype"])]


def example_grad(*arrays: Any) -> tuple[Any, ...]:
    """Gradients of one example's loss, by hand, for arrays (W1, b1, W2, b2, x, y) with x of
    shape [features] and y [outputs]."""
    import numpy as np

    w1, b1, w2, b2, x, y = arrays
    h = np.tanh(x @ w1 + b1)
    r = h @ w2 + b2 - y
    dz = (r @ w2.T) * (1 - h * h)
    return np.outer(x, dz), dz, np.outer(h, r), r


def example_grads(*arrays: Any) -> tuple[Any, ...]:
    """Every example's gradients at once (a leading batch axis on each), by hand, for arrays
    (W1, b1, W2, b2, x, y) with x of shape [batch, features] and y [batch, outputs]."""
    import numpy as np

    w1, b1, w2, b2, x, y = arrays
    h = np.tanh(x @ w1 + b1)
    r = h @ w2 + b2 - y
    dz = (r @ w2.T) * (1 - h * h)
    return np.einsum("bi,bj->bij", x, dz), dz, np.einsum("bi,bj->bij", h, r), r


def hvp(*arrays: Any) -> tuple[Any, ...]:
    """The Hessian of the batch-mean loss times the tangents (V1, c1, V2, c2), for arrays
    (W1, b1, W2, b2, x, y, V1, c1, V2, c2): the gradient written by hand, differentiated along
    the tangents by hand (Pearlmutter's R-operator), exact up to rounding."""
    import numpy as np

    w1, b1, w2, b2, x, y, v1, c1, v2, c2 = arrays
    batch = x.shape[0]
    h = np.tanh(x @ w1 + b1)
    slope = 1 - h * h
    d_out = (h @ w2 + b2 - y) / batch
    d_hidden = d_out @ w2.T
    # Directional derivatives (R{.}) of the forward, then of every gradient term.
    r_h = slope * (x @ v1 + c1)
    r_out = (r_h @ w2 + h @ v2 + c2) / batch
    r_z = (r_out @ w2.T + d_out @ v2.T) * slope - 2 * h * r_h * d_hidden
    return x.T @ r_z, r_z.sum(axis=0), r_h.T @ d_out + h.T @ r_out, r_out.sum(axis=0)


def jax_loss() -> Callable[..., Any]:
    import jax.numpy as jnp

    def loss(weights: Any, x: Any, y: Any) -> Any:
        w1, b1, w2, b2 = weights
        r = jnp.tanh(x @ w1 + b1) @ w2 + b2 - y
        return 0.5 * jnp.sum(r * r)

    return loss


def torch_loss() -> Callable[..., Any]:
    import torch

    def loss(weights: Any, x: Any, y: Any) -> Any:
        w1, b1, w2, b2 = weights
        r = torch.tanh(x @ w1 + b1) @ w2 + b2 - y
        return 0.5 * torch.sum(r * r)

    return loss


def tensorflow_loss() -> Callable[..., Any]:
    import tensorflow as tf

    def loss(weights: Any, x: Any, y: Any) -> Any:
        # tf.matmul takes matrices: x is [examples, features], one example as [1, features].
        w1, b1, w2, b2 = weights
        r = tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2) + b2 - y
        return 0.5 * tf.reduce_sum(r * r)

    return loss
