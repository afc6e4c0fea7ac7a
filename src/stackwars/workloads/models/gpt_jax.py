"""GPT-2 small and GPT-Neo 1.3B in plain JAX over canonical dicts (see gpt.py for the function).

``config`` is static: its Python values shape the trace (layer count, masks, projections).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp

from stackwars.workloads.models.gpt import attention_scale, attention_window
from stackwars.workloads.models.spec import Config

Params = Mapping[str, jax.Array]


def _layer_norm(x: jax.Array, params: Params, prefix: str, eps: float) -> jax.Array:
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return (
        centred * jax.lax.rsqrt(variance + eps) * params[f"{prefix}.scale"]
        + params[f"{prefix}.bias"]
    )


def _dense(x: jax.Array, params: Params, prefix: str) -> jax.Array:
    y = x @ params[f"{prefix}.kernel"]
    bias = params.get(f"{prefix}.bias")
    return y if bias is None else y + bias


def _mask(seq: int, window: int | None) -> jax.Array:
    """Boolean [seq, seq]: True where query i may attend key j."""
    i, j = jnp.arange(seq)[:, None], jnp.arange(seq)[None, :]
    allowed = j <= i
    return allowed if window is None else allowed & (i - j < window)


def _attention(config: Config, params: Params, layer: int, x: jax.Array) -> jax.Array:
    p, heads = f"h.{layer}.attn", config["heads"]
    b, s, d = x.shape
    if config["fused_qkv"]:
        q, k, v = jnp.split(_dense(x, params, f"{p}.qkv"), 3, axis=-1)
    else:
        q, k, v = (_dense(x, params, f"{p}.{name}") for name in ("q", "k", "v"))
    q, k, v = (t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3) for t in (q, k, v))
    scores = (q @ k.swapaxes(-1, -2)) * attention_scale(config)
    allowed = _mask(s, attention_window(config, layer))
    probs = jax.nn.softmax(jnp.where(allowed, scores, -jnp.inf), axis=-1)
    merged = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    return _dense(merged, params, f"{p}.out")


def _logits(config: Config, params: Params, tokens: jax.Array) -> jax.Array:
    eps = config["ln_eps"]
    wte = params["wte.embedding"]
    x = wte[tokens] + params["wpe.embedding"][: tokens.shape[1]]
    for i in range(config["layers"]):
        x = x + _attention(config, params, i, _layer_norm(x, params, f"h.{i}.ln_1", eps))
        h = _dense(_layer_norm(x, params, f"h.{i}.ln_2", eps), params, f"h.{i}.mlp.fc")
        x = x + _dense(jax.nn.gelu(h, approximate=True), params, f"h.{i}.mlp.proj")
    return _layer_norm(x, params, "ln_f", eps) @ wte.T


# spec.py fixes both signatures (six positional arguments).
def forward(  # noqa: PLR0917
    name: str,
    config: Config,
    params: Params,
    buffers: Params,
    inputs: jax.Array,
    train: bool,
) -> tuple[jax.Array, Params]:
    """Logits [batch, seq, vocab]; no buffers and nothing train-dependent (no dropout)."""
    return _logits(config, params, inputs), buffers


def loss(  # noqa: PLR0917
    name: str,
    config: Config,
    params: Params,
    buffers: Params,
    inputs: jax.Array,
    labels: jax.Array,
) -> tuple[jax.Array, Params]:
    """Mean cross-entropy of the logits, upcast to at least float32, against ``labels``."""
    logits = _logits(config, params, inputs)
    logits = logits.astype(jnp.promote_types(logits.dtype, jnp.float32))
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(log_probs, labels[..., None].astype(jnp.int32), axis=-1)
    return -picked.mean(), buffers
