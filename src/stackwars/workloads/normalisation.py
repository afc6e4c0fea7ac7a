"""LayerNorm and softmax over the last axis, the normalisations of a GPT-2 block (seed 001).

LayerNorm is written as each framework's users write it: F.layer_norm in torch; in JAX the
way Flax's LayerNorm does it (mean of x and of x², rsqrt); tf.nn.moments with
tf.nn.batch_normalization in TensorFlow, as Keras 2's LayerNormalization did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads import register
from stackwars.workloads._inputs import DTYPE, in_float64, memory_estimate, normal
from stackwars.workloads._numpy_ops import SOFTMAX_FLOPS_PER_ELEMENT, softmax
from stackwars.workloads.base import DTYPE_BYTES, Param, Work, Workload

EPS = 1e-5  # GPT-2's and torch's default
# Sum for the mean, subtract it, square, sum for the variance, scale, multiply by gamma, add
# beta; the per-row rsqrt is negligible.
LAYERNORM_FLOPS_PER_ELEMENT = 7


def layer_norm(x: Any, gamma: Any, beta: Any) -> Any:
    import numpy as np

    centered = x - np.mean(x, axis=-1, keepdims=True)
    variance = np.mean(centered * centered, axis=-1, keepdims=True)
    return centered / np.sqrt(variance + EPS) * gamma + beta


def _layernorm_inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    b, s, d, dtype = (params[k] for k in ("batch", "seq", "d_model", "dtype"))
    # An offset and a spread away from 0 and 1, so that dropping the mean or the variance
    # shows; gamma and beta near GPT-2's trained values.
    return (
        normal(rng, (b, s, d), dtype, std=2.0, mean=0.5),
        normal(rng, (d,), dtype, std=0.1, mean=1.0),
        normal(rng, (d,), dtype, std=0.1),
    )


def _layernorm_reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    return layer_norm(*in_float64(inputs))


def _layernorm_numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    return layer_norm


def _layernorm_jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    def layernorm(x: Any, gamma: Any, beta: Any) -> Any:
        mean = jnp.mean(x, axis=-1, keepdims=True)
        mean_of_squares = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
        variance = jnp.maximum(0.0, mean_of_squares - jnp.square(mean))
        return (x - mean) * (jax.lax.rsqrt(variance + EPS) * gamma) + beta

    return layernorm


def _layernorm_torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch.nn.functional as F

    def layernorm(x: Any, gamma: Any, beta: Any) -> Any:
        return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps=EPS)

    return layernorm


def _layernorm_tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    def layernorm(x: Any, gamma: Any, beta: Any) -> Any:
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, EPS)

    return layernorm


def _layernorm_keras(params: Mapping[str, Any]) -> Callable[..., Any]:
    from keras import ops

    def layernorm(x: Any, gamma: Any, beta: Any) -> Any:
        return ops.layer_normalization(x, gamma, beta, axis=-1, epsilon=EPS)

    return layernorm


def _layernorm_work(params: Mapping[str, Any]) -> Work:
    x, d = params["batch"] * params["seq"] * params["d_model"], params["d_model"]
    return Work(
        flops=float(LAYERNORM_FLOPS_PER_ELEMENT * x),
        bytes=float((2 * x + 2 * d) * DTYPE_BYTES[params["dtype"]]),
    )


def _layernorm_memory(params: Mapping[str, Any]) -> int:
    x, d = params["batch"] * params["seq"] * params["d_model"], params["d_model"]
    # The centred input and one temporary of the same size.
    return memory_estimate(params["dtype"], x + 2 * d, 2 * x, x)


def _softmax_inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    # Spread like attention scores, wide enough that the largest entries dominate a row.
    return (normal(rng, (params["rows"], params["cols"]), params["dtype"], std=3.0),)


def _softmax_reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    return softmax(*in_float64(inputs))


def _softmax_numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    return softmax


def _softmax_jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax

    # A function of the user's own, as for every stack: jit and tf.function then trace the
    # user's program rather than wrap the library's entry point (see gemm.py).
    def softmax(x: Any) -> Any:
        return jax.nn.softmax(x, axis=-1)

    return softmax


def _softmax_torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch

    return lambda x: torch.softmax(x, dim=-1)


def _softmax_tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    def softmax(x: Any) -> Any:
        return tf.nn.softmax(x, axis=-1)

    return softmax


def _softmax_keras(params: Mapping[str, Any]) -> Callable[..., Any]:
    from keras import ops

    def softmax(x: Any) -> Any:
        return ops.softmax(x, axis=-1)

    return softmax


def _softmax_work(params: Mapping[str, Any]) -> Work:
    n = params["rows"] * params["cols"]
    return Work(
        flops=float(SOFTMAX_FLOPS_PER_ELEMENT * n),
        bytes=float(2 * n * DTYPE_BYTES[params["dtype"]]),
    )


def _softmax_memory(params: Mapping[str, Any]) -> int:
    n = params["rows"] * params["cols"]
    # The shifted exponentials, then the quotient.
    return memory_estimate(params["dtype"], n, n, n)


layernorm = register(
    Workload(
        name="layernorm",
        description="LayerNorm over d_model with gamma and beta, eps=1e-5 (GPT-2 small shapes)",
        params=(
            Param("batch", int, 2, "sequences", minimum=1),
            Param("seq", int, 64, "tokens per sequence", minimum=1),
            Param("d_model", int, 768, "model width", minimum=1),
            DTYPE,
        ),
        make_inputs=_layernorm_inputs,
        reference=_layernorm_reference,
        work=_layernorm_work,
        memory_bytes=_layernorm_memory,
        implementations={
            "numpy": _layernorm_numpy,
            "jax": _layernorm_jax,
            "torch": _layernorm_torch,
            "tensorflow": _layernorm_tensorflow,
            "keras": _layernorm_keras,
        },
        tiny={"batch": 2, "seq": 4, "d_model": 8, "dtype": "float32"},
        # Measured at the default size in float32, max |error| / RMS(reference): 5.5e-7 to
        # 7.2e-7 on every stack, which a factor of 0.1 would pass; a variance with ddof=1
        # needs over 270.
        error_growth=lambda params: 4.0,
    )
)

softmax_workload = register(
    Workload(
        name="softmax",
        description="softmax over the last axis of rows×cols (attention-score shapes)",
        params=(
            Param("rows", int, 128, "rows", minimum=1),
            Param("cols", int, 1024, "entries per row, the softmax axis", minimum=1),
            DTYPE,
        ),
        make_inputs=_softmax_inputs,
        reference=_softmax_reference,
        work=_softmax_work,
        memory_bytes=_softmax_memory,
        implementations={
            "numpy": _softmax_numpy,
            "jax": _softmax_jax,
            "torch": _softmax_torch,
            "tensorflow": _softmax_tensorflow,
            "keras": _softmax_keras,
        },
        tiny={"rows": 4, "cols": 16, "dtype": "float32"},
        # Measured at the default size in float32, max |error| / RMS(reference): numpy 2.0e-5,
        # jax 2.2e-5, torch 1.3e-5, tensorflow 8.1e-6 (xla 2.0e-5). Those errors sit on the
        # largest probabilities, far above the RMS, and are small relative to them: a factor
        # of 0.2 would pass them.
        error_growth=lambda params: 4.0,
    )
)
