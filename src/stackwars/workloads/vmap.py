"""Seed 002's vmap ("write loops, execute on XLA"): one per-example function run three ways.

``style=loop`` calls the per-example function once per example in a Python loop and stacks the
results; ``style=vmap`` hands it to the framework's vectorising map (``jax.vmap``,
``torch.func.vmap``, ``tf.vectorized_map``); ``style=vectorised`` is batched code written by
hand. NumPy has no vectorising map (``np.vectorize`` is a Python loop, as its documentation
says), so it runs the loop and the hand-vectorised code. Under a compiler the loop is unrolled
at trace time: its compile time grows with the batch. In eager mode ``tf.vectorized_map`` wraps
its loop in a new ``tf.function`` on every call (TensorFlow's ``pfor``), so tensorflow:eager
traces on every call, and TensorFlow logs it as retracing. Why a stack cannot run a style is in
each workload's ``unsupported``.

``vmap-convolve``: seed 002's ``convolve``, ``np.convolve(x, w, mode="valid")`` of each signal
with its own kernel (as JAX's vmap tutorial batches both). Hand-vectorised, each framework's
batched convolution: a grouped convolution with one group per signal (``lax.conv_general_dilated``
with ``feature_group_count``, ``F.conv1d`` with ``groups``, ``tf.nn.depthwise_conv2d``); NumPy,
which has none, multiplies sliding windows by the kernels in one einsum.

``vmap-grad``: per-example gradients of a small MLP's loss (see _mlp.py), the case vmap was made
for: the per-example function is the framework's gradient of one example's loss; hand-vectorised
is the backward pass written by hand for a batch (what NumPy runs in both styles).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from stackwars.errors import ParameterError
from stackwars.workloads import _mlp, register
from stackwars.workloads._inputs import DTYPE, in_float64, memory_estimate, normal
from stackwars.workloads.base import DTYPE_BYTES, Param, Work, Workload
from stackwars.workloads.derivatives import refuse

STYLE = Param(
    "style",
    str,
    "vmap",
    "loop: a Python loop over examples; vmap: the framework's vectorising map; "
    "vectorised: batched code written by hand",
    choices=("loop", "vmap", "vectorised"),
)
# Checked against torchax 0.0.13, the version the xla extra pins.
TORCHAX_VMAP_NUMBERS = (
    "torchax (0.0.13) fails inside torch.func.vmap wherever a Python number meets a tensor "
    "(0.5 * the sum of squares: AttributeError: 'float' object has no attribute 'dtype')"
)
TORCHAX_VECTOR_GRAD = (
    "torchax (0.0.13) shapes the backward of a vector-matrix product (one example's x @ W1) "
    "wrongly: torch.func.grad fails with 'AddBackward0 returned an invalid gradient' "
    "(a batch of one works, but then it is not the per-example function vmap maps)"
)
NO_VMAP = (
    "NumPy has no vectorising map: np.vectorize is a Python loop over elements, as its "
    "documentation says; style=loop is what NumPy runs"
)


def _no_vmap_on_numpy(params: Mapping[str, Any], framework: str, mode: str) -> str:
    return NO_VMAP if framework == "numpy" and params["style"] == "vmap" else ""


def _pick(params: Mapping[str, Any], **styles: Callable[..., Any]) -> Callable[..., Any]:
    return styles.get(params["style"], refuse(NO_VMAP))


# --- vmap-convolve ---------------------------------------------------------------------------


def _convolve_dims(params: Mapping[str, Any]) -> tuple[int, int, int]:
    """(batch, length, kernel), refusing a kernel longer than the signal."""
    b, n, k = params["batch"], params["length"], params["kernel"]
    if k > n:
        raise ParameterError(
            f"vmap-convolve needs kernel <= length, got kernel={k}, length={n}: "
            "np.convolve's valid mode would swap them"
        )
    return b, n, k


def _convolve_inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    b, n, k = _convolve_dims(params)
    rng = np.random.default_rng(seed)
    return normal(rng, (b, n), params["dtype"]), normal(rng, (b, k), params["dtype"])


def _convolve_numpy_loop(xs: Any, ws: Any) -> Any:
    import numpy as np

    return np.stack([np.convolve(xs[i], ws[i], mode="valid") for i in range(xs.shape[0])])


def _convolve_numpy_vectorised(xs: Any, ws: Any) -> Any:
    import numpy as np

    windows = np.lib.stride_tricks.sliding_window_view(xs, ws.shape[1], axis=1)
    # Convolution flips the kernel; windows are [batch, outputs, kernel].
    return np.einsum("bok,bk->bo", windows, ws[:, ::-1])


def _convolve_reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    return _convolve_numpy_loop(*in_float64(inputs))


def _convolve_numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    return _pick(params, loop=_convolve_numpy_loop, vectorised=_convolve_numpy_vectorised)


def _convolve_jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    def convolve(x: Any, w: Any) -> Any:
        return jnp.convolve(x, w, mode="valid")

    def loop(xs: Any, ws: Any) -> Any:
        return jnp.stack([convolve(xs[i], ws[i]) for i in range(xs.shape[0])])

    mapped = jax.vmap(convolve)

    def vmap(xs: Any, ws: Any) -> Any:
        return mapped(xs, ws)

    def vectorised(xs: Any, ws: Any) -> Any:
        # One channel per signal, each its own group with its own flipped kernel.
        out = jax.lax.conv_general_dilated(
            xs[None], ws[:, None, ::-1], (1,), "VALID", feature_group_count=xs.shape[0]
        )
        return out[0]

    return _pick(params, loop=loop, vmap=vmap, vectorised=vectorised)


def _convolve_torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch
    import torch.nn.functional as F

    def convolve(x: Any, w: Any) -> Any:
        # conv1d correlates: convolution is correlation with the kernel flipped.
        return F.conv1d(x[None, None], w.flip(0)[None, None])[0, 0]

    def loop(xs: Any, ws: Any) -> Any:
        return torch.stack([convolve(xs[i], ws[i]) for i in range(xs.shape[0])])

    mapped = torch.func.vmap(convolve)

    def vmap(xs: Any, ws: Any) -> Any:
        return mapped(xs, ws)

    def vectorised(xs: Any, ws: Any) -> Any:
        return F.conv1d(xs[None], ws.flip(1)[:, None], groups=xs.shape[0])[0]

    return _pick(params, loop=loop, vmap=vmap, vectorised=vectorised)


def _convolve_tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    def convolve(x: Any, w: Any) -> Any:
        # conv1d correlates [batch, width, channels] with [width, in, out] filters.
        flipped = tf.reverse(w, [0])[:, None, None]
        return tf.nn.conv1d(x[None, :, None], flipped, stride=1, padding="VALID")[0, :, 0]

    def loop(xs: Any, ws: Any) -> Any:
        return tf.stack([convolve(xs[i], ws[i]) for i in range(xs.shape[0])])

    def vmap(xs: Any, ws: Any) -> Any:
        return tf.vectorized_map(lambda example: convolve(*example), (xs, ws))

    def vectorised(xs: Any, ws: Any) -> Any:
        # Signals as the channels of one 1×length image, each filtered by its own kernel.
        filters = tf.transpose(tf.reverse(ws, [1]))[None, :, :, None]
        images = tf.transpose(xs)[None, None]
        out = tf.nn.depthwise_conv2d(images, filters, strides=[1, 1, 1, 1], padding="VALID")
        return tf.transpose(out[0, 0])

    return _pick(params, loop=loop, vmap=vmap, vectorised=vectorised)


def _convolve_work(params: Mapping[str, Any]) -> Work:
    b, n, k = _convolve_dims(params)
    outputs = b * (n - k + 1)
    elements = b * n + b * k + outputs
    return Work(flops=2.0 * outputs * k, bytes=float(elements * DTYPE_BYTES[params["dtype"]]))


def _convolve_memory(params: Mapping[str, Any]) -> int:
    b, n, k = _convolve_dims(params)
    outputs = b * (n - k + 1)
    # NumPy's einsum may copy the sliding windows: one kernel's length per output.
    return memory_estimate(params["dtype"], b * n + b * k, outputs * k, outputs)


def _convolve_error_growth(params: Mapping[str, Any]) -> float:
    """Rounding grows like the square root of the kernel's length, each output's sum.

    Measured in float32 as in derivatives.py: at most 0.19 at the default size and 0.49 at
    kernel 256 (numpy's einsum; allowed 8 there)."""
    return max(2.0, math.sqrt(params["kernel"]) / 2.0)


vmap_convolve = register(
    Workload(
        name="vmap-convolve",
        description=(
            "seed 002's convolve (np.convolve, valid) of each signal with its own kernel: "
            "a Python loop, the framework's vmap, or batched code by hand"
        ),
        params=(
            Param("batch", int, 128, "signals, each with its own kernel", minimum=1),
            Param("length", int, 1024, "samples per signal", minimum=1),
            Param("kernel", int, 16, "samples per kernel (at most length)", minimum=1),
            STYLE,
            DTYPE,
        ),
        make_inputs=_convolve_inputs,
        reference=_convolve_reference,
        work=_convolve_work,
        memory_bytes=_convolve_memory,
        implementations={
            "numpy": _convolve_numpy,
            "jax": _convolve_jax,
            "torch": _convolve_torch,
            "tensorflow": _convolve_tensorflow,
        },
        tiny={"batch": 3, "length": 16, "kernel": 3, "style": "vmap", "dtype": "float32"},
        error_growth=_convolve_error_growth,
        unsupported=_no_vmap_on_numpy,
    )
)


# --- vmap-grad -------------------------------------------------------------------------------


def _grad_inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    return (*_mlp.weights(params, rng), *_mlp.data(params, rng))


def _grad_numpy_loop(*arrays: Any) -> Any:
    import numpy as np

    *weights, xs, ys = arrays
    grads = [_mlp.example_grad(*weights, xs[i], ys[i]) for i in range(xs.shape[0])]
    return [np.stack(per_weight) for per_weight in zip(*grads, strict=True)]


def _grad_reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    return _mlp.example_grads(*in_float64(inputs))


def _grad_numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    return _pick(params, loop=_grad_numpy_loop, vectorised=_mlp.example_grads)


def _grad_jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    grad = jax.grad(_mlp.jax_loss())

    def loop(*arrays: Any) -> Any:
        *weights, xs, ys = arrays
        grads = [grad(weights, xs[i], ys[i]) for i in range(xs.shape[0])]
        return [jnp.stack(per_weight) for per_weight in zip(*grads, strict=True)]

    mapped = jax.vmap(grad, in_axes=(None, 0, 0))

    def vmap(*arrays: Any) -> Any:
        *weights, xs, ys = arrays
        return mapped(weights, xs, ys)

    def vectorised(*arrays: Any) -> Any:
        w1, b1, w2, b2, xs, ys = arrays
        h = jnp.tanh(xs @ w1 + b1)
        r = h @ w2 + b2 - ys
        dz = (r @ w2.T) * (1 - h * h)
        return jnp.einsum("bi,bj->bij", xs, dz), dz, jnp.einsum("bi,bj->bij", h, r), r

    return _pick(params, loop=loop, vmap=vmap, vectorised=vectorised)


def _grad_torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch

    grad = torch.func.grad(_mlp.torch_loss())

    def loop(*arrays: Any) -> Any:
        *weights, xs, ys = arrays
        grads = [grad(weights, xs[i], ys[i]) for i in range(xs.shape[0])]
        return [torch.stack(per_weight) for per_weight in zip(*grads, strict=True)]

    mapped = torch.func.vmap(grad, in_dims=(None, 0, 0))

    def vmap(*arrays: Any) -> Any:
        *weights, xs, ys = arrays
        return mapped(weights, xs, ys)

    def vectorised(*arrays: Any) -> Any:
        w1, b1, w2, b2, xs, ys = arrays
        h = torch.tanh(xs @ w1 + b1)
        r = h @ w2 + b2 - ys
        dz = (r @ w2.T) * (1 - h * h)
        return torch.einsum("bi,bj->bij", xs, dz), dz, torch.einsum("bi,bj->bij", h, r), r

    return _pick(params, loop=loop, vmap=vmap, vectorised=vectorised)


def _grad_tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    loss = _mlp.tensorflow_loss()

    def grad(weights: Any, x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(weights)
            # One example as a batch of one, as tf.vectorized_map's own example does.
            example_loss = loss(weights, x[None], y[None])
        return tape.gradient(example_loss, weights)

    def loop(*arrays: Any) -> Any:
        *weights, xs, ys = arrays
        grads = [grad(weights, xs[i], ys[i]) for i in range(xs.shape[0])]
        return [tf.stack(per_weight) for per_weight in zip(*grads, strict=True)]

    def vmap(*arrays: Any) -> Any:
        *weights, xs, ys = arrays
        return tf.vectorized_map(lambda example: grad(weights, *example), (xs, ys))

    def vectorised(*arrays: Any) -> Any:
        w1, b1, w2, b2, xs, ys = arrays
        h = tf.tanh(tf.matmul(xs, w1) + b1)
        r = tf.matmul(h, w2) + b2 - ys
        dz = tf.matmul(r, w2, transpose_b=True) * (1 - h * h)
        return tf.einsum("bi,bj->bij", xs, dz), dz, tf.einsum("bi,bj->bij", h, r), r

    return _pick(params, loop=loop, vmap=vmap, vectorised=vectorised)


def _grad_unsupported(params: Mapping[str, Any], framework: str, mode: str) -> str:
    if (framework, mode) == ("torch", "xla") and params["style"] != "vectorised":
        return TORCHAX_VMAP_NUMBERS if params["style"] == "vmap" else TORCHAX_VECTOR_GRAD
    return _no_vmap_on_numpy(params, framework, mode)


def _grad_work(params: Mapping[str, Any]) -> Work:
    """Forward (x·W1 and h·W2, bias, tanh, residual) and backward (r·W2ᵀ, the tanh slope, and
    the per-example outer products that are W1's and W2's gradients)."""
    b, d, h, o = _mlp.dims(params)
    flops = 3 * b * d * h + 5 * b * h * o + 5 * b * h + 2 * b * o
    elements = _mlp.weight_count(params) * (1 + b) + b * d + b * o
    return Work(flops=float(flops), bytes=float(elements * DTYPE_BYTES[params["dtype"]]))


def _grad_memory(params: Mapping[str, Any]) -> int:
    b, d, h, o = _mlp.dims(params)
    weights = _mlp.weight_count(params)
    return memory_estimate(params["dtype"], weights + b * d + b * o, 4 * b * h, b * weights)


def _grad_error_growth(params: Mapping[str, Any]) -> float:
    """Rounding grows like the square root of the longest sums, over features and hidden
    units.

    Measured in float32 as in derivatives.py: 0.54 at the tiny size (tensorflow), 0.81 at the
    default size, 1.99 at 256 features and 512 hidden (allowed 9.2 there)."""
    _, d, h, _ = _mlp.dims(params)
    return max(4.0, math.sqrt(d + h) / 3.0)


vmap_grad = register(
    Workload(
        name="vmap-grad",
        description=(
            "per-example gradients of a tanh MLP's squared-error loss: a Python loop of grad, "
            "vmap(grad), or the batched backward by hand"
        ),
        params=(*_mlp.SIZES, STYLE, DTYPE),
        make_inputs=_grad_inputs,
        reference=_grad_reference,
        work=_grad_work,
        memory_bytes=_grad_memory,
        implementations={
            "numpy": _grad_numpy,
            "jax": _grad_jax,
            "torch": _grad_torch,
            "tensorflow": _grad_tensorflow,
        },
        tiny={**_mlp.TINY, "style": "vmap", "dtype": "float32"},
        error_growth=_grad_error_growth,
        unsupported=_grad_unsupported,
    )
)
