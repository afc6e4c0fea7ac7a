"""FFN: GPT-2's MLP block, y = gelu(x·W1 + b1)·W2 + b2 (seed 001's FFN, GPT-2 small shapes).

GELU is the tanh approximation on every stack, as GPT-2 uses it, so that every stack computes
the same function. Weights have one layout, [in, out], as GPT-2's checkpoints and JAX store
them; the torch builder hands F.linear their transpose, a view, since F.linear takes
[out, in]. With task=grad the result is (y, dx, dW1, db1, dW2, db2) for L = sum(y * ct); the
numpy stack runs the hand-written backward below in the input dtype, as NumPy has no autodiff.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads import register
from stackwars.workloads._gradients import TASK, for_task
from stackwars.workloads._inputs import BIAS_STD, DTYPE, in_float64, memory_estimate, normal
from stackwars.workloads._numpy_ops import bias_grad, weight_grad
from stackwars.workloads.base import DTYPE_BYTES, Param, Work, Workload

GELU_C = math.sqrt(2.0 / math.pi)
GELU_A = 0.044715
# 0.5*x*(1 + tanh(c*(x + a*x*x*x))): three multiplies for a*x*x*x, add, multiply by c, tanh,
# add 1, multiply by x and by 0.5.
GELU_FLOPS_PER_ELEMENT = 9
# d/dx times the incoming gradient, t = tanh(...) kept from the forward: t*t, 1-t*t, x*x,
# 3a*x*x, +1, *c, the product of those two, 0.5*x and times it, 1+t, 0.5*(1+t), their sum,
# times the incoming gradient.
GELU_GRAD_FLOPS_PER_ELEMENT = 13


def gelu(x: Any) -> Any:
    """GPT-2's GELU, the tanh approximation."""
    import numpy as np

    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + GELU_A * x * x * x)))


def gelu_grad(x: Any) -> Any:
    import numpy as np

    t = np.tanh(GELU_C * (x + GELU_A * x * x * x))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_A * x * x)


def ffn_forward(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    return gelu(x @ w1 + b1) @ w2 + b2


def ffn_grad(*arrays: Any) -> tuple[Any, ...]:
    """(y, dx, dW1, db1, dW2, db2) of L = sum(y * ct), by hand, for arrays
    (x, w1, b1, w2, b2, ct)."""
    x, w1, b1, w2, b2, ct = arrays
    pre = x @ w1 + b1
    hidden = gelu(pre)
    d_pre = (ct @ w2.T) * gelu_grad(pre)
    y = hidden @ w2 + b2
    return (
        y,
        d_pre @ w1.T,
        weight_grad(x, d_pre),
        bias_grad(d_pre),
        weight_grad(hidden, ct),
        bias_grad(ct),
    )


def _inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    b, s, d, f, dtype = (params[k] for k in ("batch", "seq", "d_model", "d_ff", "dtype"))
    # Weights scaled by 1/sqrt(fan-in) keep every activation near unit variance at any size.
    arrays = [
        normal(rng, (b, s, d), dtype),
        normal(rng, (d, f), dtype, 1.0 / math.sqrt(d)),
        normal(rng, (f,), dtype, BIAS_STD),
        normal(rng, (f, d), dtype, 1.0 / math.sqrt(f)),
        normal(rng, (d,), dtype, BIAS_STD),
    ]
    if params["task"] == "grad":
        arrays.append(normal(rng, (b, s, d), dtype))
    return tuple(arrays)


def _reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    compute = ffn_forward if params["task"] == "forward" else ffn_grad
    return compute(*in_float64(inputs))


def _numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    return ffn_forward if params["task"] == "forward" else ffn_grad


def _jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax

    def ffn(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        return jax.nn.gelu(x @ w1 + b1, approximate=True) @ w2 + b2

    return for_task("jax", params, ffn)


def _torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch.nn.functional as F

    def ffn(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        hidden = F.gelu(F.linear(x, w1.T, b1), approximate="tanh")
        return F.linear(hidden, w2.T, b2)

    return for_task("torch", params, ffn)


def _tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    def ffn(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        hidden = tf.nn.gelu(tf.matmul(x, w1) + b1, approximate=True)
        return tf.matmul(hidden, w2) + b2

    return for_task("tensorflow", params, ffn)


def _keras(params: Mapping[str, Any]) -> Callable[..., Any]:
    from keras import ops

    def ffn(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        hidden = ops.gelu(ops.matmul(x, w1) + b1, approximate=True)
        return ops.matmul(hidden, w2) + b2

    return for_task("keras", params, ffn)


def _sizes(params: Mapping[str, Any]) -> tuple[int, int, int]:
    """Elements of x (and of y and ct), of all weights and biases, and of one hidden layer."""
    b, s, d, f = (params[k] for k in ("batch", "seq", "d_model", "d_ff"))
    return b * s * d, d * f + f + f * d + d, b * s * f


def _work(params: Mapping[str, Any]) -> Work:
    b, s, d, f = (params[k] for k in ("batch", "seq", "d_model", "d_ff"))
    tokens, (x, weights, hidden) = b * s, _sizes(params)
    matmul = 2.0 * tokens * (d * f + f * d)
    # Bias adds, then GELU on the hidden layer.
    flops = matmul + hidden * (1 + GELU_FLOPS_PER_ELEMENT) + x
    elements = x + weights + x
    if params["task"] == "grad":
        # Each forward matmul needs two of the same size backward (input and weight grads);
        # the bias grads are sums over tokens.
        flops += 2 * matmul + hidden * (GELU_GRAD_FLOPS_PER_ELEMENT + 1) + x
        elements += x + x + weights
    return Work(flops=flops, bytes=float(elements * DTYPE_BYTES[params["dtype"]]))


def _memory(params: Mapping[str, Any]) -> int:
    x, weights, hidden = _sizes(params)
    grad = params["task"] == "grad"
    inputs = x + weights + (x if grad else 0)
    outputs = x + (x + weights if grad else 0)
    # Pre-activation, GELU output and its temporaries; backward adds the hidden gradients.
    activations = hidden * (7 if grad else 4)
    return memory_estimate(params["dtype"], inputs, activations, outputs)


def _error_growth(params: Mapping[str, Any]) -> float:
    """Rounding grows like the square root of the longest sums: x·W1 over d_model, then ·W2
    over d_ff, and for grad the weight gradients' sums over tokens.

    Measured at the default size in float32, max |error| / RMS(reference) over all outputs:
    forward numpy 2.3e-6, jax 2.7e-6, torch 1.7e-6, torch:xla 2.7e-6, tensorflow 3.7e-6 (xla
    2.7e-6); grad numpy 3.7e-6, jax 3.7e-6, torch 3.4e-6, tensorflow 5.3e-6 (xla 3.0e-6).
    Parity would pass them all with a factor of 1.8; this gives 21, while exact GELU in place
    of the tanh approximation needs over 300 (over 160 at the tiny size, where this gives 2).
    """
    b, s, d, f = (params[k] for k in ("batch", "seq", "d_model", "d_ff"))
    depth = d + f + (b * s if params["task"] == "grad" else 0)
    return max(2.0, math.sqrt(depth) / 3.0)


ffn = register(
    Workload(
        name="ffn",
        description="GPT-2 MLP gelu(x·W1+b1)·W2+b2, tanh GELU (seed 001 at GPT-2 small shapes)",
        params=(
            Param("batch", int, 2, "sequences", minimum=1),
            Param("seq", int, 64, "tokens per sequence", minimum=1),
            Param("d_model", int, 768, "model width", minimum=1),
            Param("d_ff", int, 3072, "hidden width", minimum=1),
            TASK,
            DTYPE,
        ),
        make_inputs=_inputs,
        reference=_reference,
        work=_work,
        memory_bytes=_memory,
        implementations={
            "numpy": _numpy,
            "jax": _jax,
            "torch": _torch,
            "tensorflow": _tensorflow,
            "keras": _keras,
        },
        tiny={
            "batch": 2,
            "seq": 4,
            "d_model": 8,
            "d_ff": 16,
            "task": "forward",
            "dtype": "float32",
        },
        error_growth=_error_growth,
    )
)
