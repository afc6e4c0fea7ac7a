"""LLaMA in plain JAX over the canonical dicts (see llama.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from stackwars.workloads.models import llama
from stackwars.workloads.models.spec import Config

Params = Mapping[str, Any]


def _rms_norm(x: jax.Array, scale: jax.Array, eps: float) -> jax.Array:
    wide = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    normed = wide * jax.lax.rsqrt(jnp.mean(wide * wide, axis=-1, keepdims=True) + eps)
    return (normed * scale.astype(wide.dtype)).astype(x.dtype)


def _rope(config: Config, seq: int, dtype: Any) -> tuple[jax.Array, jax.Array]:
    wide = jnp.promote_types(dtype, jnp.float32)
    inv_freq = jnp.asarray(llama.inverse_frequencies(config).astype(wide))
    angles = jnp.arange(seq, dtype=wide)[:, None] * inv_freq[None, :]
    angles = jnp.concatenate([angles, angles], axis=-1)[:, None, :]  # [seq, 1, head_dim]
    return jnp.cos(angles).astype(dtype), jnp.sin(angles).astype(dtype)


def _rotate(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    first, second = jnp.split(x, 2, axis=-1)
    return x * cos + jnp.concatenate([-second, first], axis=-1) * sin


def _attention(
    config: Config, params: Params, prefix: str, x: jax.Array, rope: tuple[jax.Array, jax.Array]
) -> jax.Array:
    b, s, _ = x.shape
    heads, kv_heads, hd = config["heads"], config["kv_heads"], llama.head_dim(config)
    # [b, s, heads, hd]: the layout jax.nn.dot_product_attention takes.
    q = _rotate((x @ params[f"{prefix}.q.kernel"]).reshape(b, s, heads, hd), *rope)
    k = _rotate((x @ params[f"{prefix}.k.kernel"]).reshape(b, s, kv_heads, hd), *rope)
    v = (x @ params[f"{prefix}.v.kernel"]).reshape(b, s, kv_heads, hd)
    # Grouped-query: query head j reads key/value head j // (heads // kv_heads), as repeat_kv.
    out = jax.nn.dot_product_attention(q, k, v, scale=1.0 / math.sqrt(hd), is_causal=True)
    return out.reshape(b, s, heads * hd) @ params[f"{prefix}.o.kernel"]


def _mlp(params: Params, prefix: str, x: jax.Array) -> jax.Array:
    gate = jax.nn.silu(x @ params[f"{prefix}.gate.kernel"])
    return (gate * (x @ params[f"{prefix}.up.kernel"])) @ params[f"{prefix}.down.kernel"]


def _logits(config: Config, params: Params, tokens: jax.Array) -> jax.Array:
    eps = config["rms_eps"]
    x = jnp.take(params["embed.embedding"], tokens, axis=0)
    rope = _rope(config, tokens.shape[1], x.dtype)
    for i in range(config["layers"]):
        p = f"layers.{i}"
        normed = _rms_norm(x, params[f"{p}.attn_norm.scale"], eps)
        x = x + _attention(config, params, f"{p}.attn", normed, rope)
        x = x + _mlp(params, f"{p}.mlp", _rms_norm(x, params[f"{p}.mlp_norm.scale"], eps))
    return _rms_norm(x, params["norm.scale"], eps) @ params["lm_head.kernel"]


def forward(  # noqa: PLR0917
    name: str, config: Config, params: Params, buffers: Params, inputs: Any, train: bool
) -> tuple[jax.Array, Params]:
    """Logits and the buffers, unchanged (LLaMA has none and no train-mode difference)."""
    if name != llama.LLAMA_3_1_8B.name:
        raise ValueError(f"unknown llama model {name!r}")
    return _logits(config, params, jnp.asarray(inputs)), buffers


def loss(  # noqa: PLR0917
    name: str, config: Config, params: Params, buffers: Params, inputs: Any, labels: Any
) -> tuple[jax.Array, Params]:
    logits, buffers = forward(name, config, params, buffers, inputs, True)
    wide = logits.astype(jnp.promote_types(logits.dtype, jnp.float32))
    log_probs = jax.nn.log_softmax(wide, axis=-1)
    picked = jnp.take_along_axis(log_probs, jnp.asarray(labels)[..., None], axis=-1)
    return -jnp.mean(picked), buffers
