"""MHA: GPT-2's multi-head self-attention block (seed 001's MHA, GPT-2 small shapes).

One fused QKV projection (weight [d_model, 3*d_model], GPT-2's c_attn), whose output splits
into q, k and v, each into heads of d_model/heads; softmax(q·kᵀ/sqrt(d_head)) v per head, with
a causal mask when causal=true; heads merged; the output projection (c_proj). Weights are
[in, out] everywhere. With task=grad the result is (y, dx, dW_qkv, db_qkv, dW_out, db_out) for
L = sum(y * ct); the numpy stack runs the hand-written backward below in the input dtype, as
NumPy has no autodiff.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from stackwars.errors import ParameterError
from stackwars.workloads import register
from stackwars.workloads._gradients import TASK, for_task
from stackwars.workloads._inputs import BIAS_STD, DTYPE, in_float64, memory_estimate, normal
from stackwars.workloads._numpy_ops import (
    SOFTMAX_FLOPS_PER_ELEMENT,
    SOFTMAX_GRAD_FLOPS_PER_ELEMENT,
    bias_grad,
    softmax,
    weight_grad,
)
from stackwars.workloads.base import DTYPE_BYTES, Param, Work, Workload


def dims(params: Mapping[str, Any]) -> tuple[int, int, int, int, int]:
    """(batch, seq, heads, d_model, d_head), refusing a d_model the heads cannot split."""
    b, s, h, d = (params[k] for k in ("batch", "seq", "heads", "d_model"))
    if d % h:
        raise ParameterError(
            f"mha needs d_model divisible by heads, got d_model={d}, heads={h}; "
            f"choose d_model as a multiple of heads (GPT-2 small: d_model=768, heads=12)"
        )
    return b, s, h, d, d // h


def split_heads(t: Any, heads: int) -> Any:
    """[batch, seq, d_model] -> [batch, heads, seq, d_head]."""
    b, s, d = t.shape
    return t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)


def merge_heads(t: Any) -> Any:
    b, h, s, dh = t.shape
    return t.transpose(0, 2, 1, 3).reshape(b, s, h * dh)


def attention(q: Any, k: Any, v: Any, causal: bool) -> tuple[Any, Any]:
    """Per-head attention output and its probabilities, for [batch, heads, seq, d_head]."""
    import numpy as np

    scores = (q @ k.swapaxes(-1, -2)) * q.shape[-1] ** -0.5
    if causal:
        seq = q.shape[-2]
        scores = np.where(np.tri(seq, dtype=bool), scores, -np.inf)
    probs = softmax(scores)
    return probs @ v, probs


def attention_grad(q: Any, k: Any, v: Any, probs: Any, d_out: Any) -> tuple[Any, Any, Any]:
    """Gradients for q, k and v; masked positions have zero probability, so zero gradient."""
    import numpy as np

    d_probs = d_out @ v.swapaxes(-1, -2)
    d_scores = probs * (d_probs - np.sum(d_probs * probs, axis=-1, keepdims=True))
    d_scores = d_scores * q.shape[-1] ** -0.5
    return d_scores @ k, d_scores.swapaxes(-1, -2) @ q, probs.swapaxes(-1, -2) @ d_out


def mha_forward(
    x: Any, w_qkv: Any, b_qkv: Any, w_out: Any, b_out: Any, *, heads: int, causal: bool
) -> Any:
    import numpy as np

    q, k, v = (split_heads(t, heads) for t in np.split(x @ w_qkv + b_qkv, 3, axis=-1))
    out, _ = attention(q, k, v, causal)
    return merge_heads(out) @ w_out + b_out


def mha_grad(*arrays: Any, heads: int, causal: bool) -> tuple[Any, ...]:
    """(y, dx, dW_qkv, db_qkv, dW_out, db_out) of L = sum(y * ct), by hand, for arrays
    (x, w_qkv, b_qkv, w_out, b_out, ct)."""
    import numpy as np

    x, w_qkv, b_qkv, w_out, b_out, ct = arrays
    q, k, v = (split_heads(t, heads) for t in np.split(x @ w_qkv + b_qkv, 3, axis=-1))
    out, probs = attention(q, k, v, causal)
    merged = merge_heads(out)
    d_heads = attention_grad(q, k, v, probs, split_heads(ct @ w_out.T, heads))
    d_qkv = np.concatenate([merge_heads(t) for t in d_heads], axis=-1)
    return (
        merged @ w_out + b_out,
        d_qkv @ w_qkv.T,
        weight_grad(x, d_qkv),
        bias_grad(d_qkv),
        weight_grad(merged, ct),
        bias_grad(ct),
    )


def _inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    b, s, _, d, _ = dims(params)
    rng, dtype = np.random.default_rng(seed), params["dtype"]
    # Weights scaled by 1/sqrt(fan-in) keep q, k, v and the scores near unit variance.
    arrays = [
        normal(rng, (b, s, d), dtype),
        normal(rng, (d, 3 * d), dtype, 1.0 / math.sqrt(d)),
        normal(rng, (3 * d,), dtype, BIAS_STD),
        normal(rng, (d, d), dtype, 1.0 / math.sqrt(d)),
        normal(rng, (d,), dtype, BIAS_STD),
    ]
    if params["task"] == "grad":
        arrays.append(normal(rng, (b, s, d), dtype))
    return tuple(arrays)


def _reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    return _numpy(params)(*in_float64(inputs))


def _numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    heads, causal = params["heads"], params["causal"]
    if params["task"] == "forward":
        return lambda *arrays: mha_forward(*arrays, heads=heads, causal=causal)
    return lambda *arrays: mha_grad(*arrays, heads=heads, causal=causal)


def _jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax

    b, s, h, d, dh = dims(params)

    def mha(x: Any, w_qkv: Any, b_qkv: Any, w_out: Any, b_out: Any) -> Any:
        # dot_product_attention takes [batch, seq, heads, d_head]: no transposes needed.
        qkv = (x @ w_qkv + b_qkv).reshape(b, s, 3, h, dh)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        out = jax.nn.dot_product_attention(q, k, v, is_causal=params["causal"])
        return out.reshape(b, s, d) @ w_out + b_out

    return for_task("jax", params, mha)


def _torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch.nn.functional as F

    b, s, h, d, dh = dims(params)

    def mha(x: Any, w_qkv: Any, b_qkv: Any, w_out: Any, b_out: Any) -> Any:
        # F.linear takes [out, in]; the transpose of an [in, out] weight is a free view.
        q, k, v = F.linear(x, w_qkv.T, b_qkv).split(d, dim=-1)
        q, k, v = (t.view(b, s, h, dh).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=params["causal"])
        return F.linear(out.transpose(1, 2).reshape(b, s, d), w_out.T, b_out)

    return for_task("torch", params, mha)


def _tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    b, s, h, d, dh = dims(params)

    def heads(t: Any) -> Any:
        return tf.transpose(tf.reshape(t, (b, s, h, dh)), (0, 2, 1, 3))

    def mha(x: Any, w_qkv: Any, b_qkv: Any, w_out: Any, b_out: Any) -> Any:
        q, k, v = tf.split(tf.matmul(x, w_qkv) + b_qkv, 3, axis=-1)
        scores = tf.matmul(heads(q), heads(k), transpose_b=True) * dh**-0.5
        if params["causal"]:
            below = tf.linalg.band_part(tf.ones((s, s), tf.bool), -1, 0)
            scores = tf.where(below, scores, tf.constant(-math.inf, scores.dtype))
        out = tf.matmul(tf.nn.softmax(scores, axis=-1), heads(v))
        merged = tf.reshape(tf.transpose(out, (0, 2, 1, 3)), (b, s, d))
        return tf.matmul(merged, w_out) + b_out

    return for_task("tensorflow", params, mha)


def _keras(params: Mapping[str, Any]) -> Callable[..., Any]:
    from keras import ops

    b, s, h, d, dh = dims(params)

    def mha(x: Any, w_qkv: Any, b_qkv: Any, w_out: Any, b_out: Any) -> Any:
        # dot_product_attention takes [batch, seq, heads, d_head], as jax.nn's does.
        qkv: Any = ops.reshape(ops.matmul(x, w_qkv) + b_qkv, (b, s, 3, h, dh))
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        out = ops.dot_product_attention(q, k, v, is_causal=params["causal"])
        return ops.matmul(ops.reshape(out, (b, s, d)), w_out) + b_out

    return for_task("keras", params, mha)


def _sizes(params: Mapping[str, Any]) -> tuple[int, int, int]:
    """Elements of x (and of y and ct), of all weights and biases, and of one score tensor."""
    b, s, h, d, _ = dims(params)
    return b * s * d, 4 * d * d + 4 * d, b * h * s * s


def _work(params: Mapping[str, Any]) -> Work:
    b, s, _, d, _ = dims(params)
    x, weights, scores = _sizes(params)
    # QKV and output projections, then q·kᵀ and probs·v over all heads. A causal mask is
    # counted as dense: that is what most implementations compute.
    matmul = 2.0 * b * s * d * (3 * d + d) + 2 * 2.0 * b * s * s * d
    # Bias adds, the 1/sqrt(d_head) scale, the mask's select and the softmax.
    per_score = 1 + SOFTMAX_FLOPS_PER_ELEMENT + (1 if params["causal"] else 0)
    flops = matmul + 4 * x + scores * per_score
    elements = x + weights + x
    if params["task"] == "grad":
        # Each forward matmul needs two of the same size backward; the bias grads are sums.
        flops += 2 * matmul + 4 * x + scores * (SOFTMAX_GRAD_FLOPS_PER_ELEMENT + 1)
        elements += x + x + weights
    return Work(flops=flops, bytes=float(elements * DTYPE_BYTES[params["dtype"]]))


def _memory(params: Mapping[str, Any]) -> int:
    x, weights, scores = _sizes(params)
    grad = params["task"] == "grad"
    inputs = x + weights + (x if grad else 0)
    outputs = x + (x + weights if grad else 0)
    # qkv, its per-head copies, the attention output and its merged copy; scores, mask and
    # probabilities. Backward: gradients of those, and of the scores twice.
    activations = 8 * x + 3 * scores + ((7 * x + 3 * scores) if grad else 0)
    return memory_estimate(params["dtype"], inputs, activations, outputs)


def _error_growth(params: Mapping[str, Any]) -> float:
    """Rounding grows like the square root of the longest sums: the two projections over
    d_model, probs·v over seq, and for grad the weight gradients' sums over tokens.

    Measured at the default size in float32, max |error| / RMS(reference) over all outputs:
    forward numpy 2.8e-6, jax 3.8e-6, torch 2.6e-6, torch:xla 3.5e-6, tensorflow 3.6e-6;
    causal forward numpy 5.1e-6, jax 6.5e-6, torch 3.7e-6, torch:xla 6.5e-6, tensorflow
    6.0e-6; grad numpy 6.6e-6, jax 5.6e-6, torch 5.3e-6, tensorflow 6.2e-6; causal grad numpy
    6.2e-6, jax 7.7e-6, torch 5.0e-6, tensorflow 8.1e-6. Parity would pass them all with a
    factor of 2.9; this gives 13-14. A missing scale, a missing or transposed mask, or a
    softmax backward without its row term each need a factor over 10^5 to pass.
    """
    b, s, _, d, _ = dims(params)
    depth = 2 * d + s + (b * s if params["task"] == "grad" else 0)
    return max(2.0, math.sqrt(depth) / 3.0)


mha = register(
    Workload(
        name="mha",
        description="GPT-2 multi-head self-attention, fused QKV (seed 001 at GPT-2 small shapes)",
        params=(
            Param("batch", int, 2, "sequences", minimum=1),
            Param("seq", int, 64, "tokens per sequence", minimum=1),
            Param("heads", int, 12, "attention heads; must divide d_model", minimum=1),
            Param("d_model", int, 768, "model width", minimum=1),
            Param("causal", bool, False, "mask each token from attending to later ones"),
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
            "heads": 2,
            "d_model": 8,
            "causal": True,
            "task": "forward",
            "dtype": "float32",
        },
        error_growth=_error_growth,
    )
)
