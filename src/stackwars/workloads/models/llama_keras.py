"""LLaMA as backend-agnostic Keras 3 layers over the canonical layout (see llama.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
from keras import ops

from stackwars.workloads.models import llama
from stackwars.workloads.models.spec import Config


def _rotate(x: Any, cos: Any, sin: Any) -> Any:
    halves: Any = ops.split(x, 2, axis=-1)
    first, second = halves
    return x * cos + ops.concatenate([-second, first], axis=-1) * sin


def _seq(x: Any) -> Any:
    """The sequence length: static when traced with known shapes, else a tensor."""
    shape: Any = ops.shape(x)
    return shape[1]


class Attention(keras.layers.Layer):
    def __init__(self, config: Config, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        hd = llama.head_dim(config)
        self.heads, self.kv_heads, self.head_dim = config["heads"], config["kv_heads"], hd
        dense = {"use_bias": False, "dtype": self.dtype_policy}
        self.q = keras.layers.Dense(self.heads * hd, name="q", **dense)
        self.k = keras.layers.Dense(self.kv_heads * hd, name="k", **dense)
        self.v = keras.layers.Dense(self.kv_heads * hd, name="v", **dense)
        self.o = keras.layers.Dense(config["d_model"], name="o", **dense)

    def call(self, x: Any, cos: Any, sin: Any) -> Any:
        seq = _seq(x)
        # [b, s, heads, hd]: the layout keras.ops.dot_product_attention takes.
        q = _rotate(ops.reshape(self.q(x), (-1, seq, self.heads, self.head_dim)), cos, sin)
        k = _rotate(ops.reshape(self.k(x), (-1, seq, self.kv_heads, self.head_dim)), cos, sin)
        v = ops.reshape(self.v(x), (-1, seq, self.kv_heads, self.head_dim))
        # Grouped-query: ops.dot_product_attention repeats each key/value head over its
        # consecutive query heads, as HF's repeat_kv.
        out = ops.dot_product_attention(
            q, k, v, scale=1.0 / math.sqrt(self.head_dim), is_causal=True
        )
        return self.o(ops.reshape(out, (-1, seq, self.heads * self.head_dim)))


class MLP(keras.layers.Layer):
    def __init__(self, config: Config, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dense = {"use_bias": False, "dtype": self.dtype_policy}
        self.gate = keras.layers.Dense(config["d_ff"], name="gate", **dense)
        self.up = keras.layers.Dense(config["d_ff"], name="up", **dense)
        self.down = keras.layers.Dense(config["d_model"], name="down", **dense)

    def call(self, x: Any) -> Any:
        return self.down(ops.silu(self.gate(x)) * self.up(x))


class Block(keras.layers.Layer):
    def __init__(self, config: Config, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        norm = {"epsilon": config["rms_eps"], "dtype": self.dtype_policy}
        self.attn_norm = keras.layers.RMSNormalization(name="attn_norm", **norm)
        self.attn = Attention(config, name="attn", dtype=self.dtype_policy)
        self.mlp_norm = keras.layers.RMSNormalization(name="mlp_norm", **norm)
        self.mlp = MLP(config, name="mlp", dtype=self.dtype_policy)

    def call(self, x: Any, cos: Any, sin: Any) -> Any:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class Llama(keras.Model):
    def __init__(self, config: Config, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.inv_freq = llama.inverse_frequencies(config)
        policy = self.dtype_policy
        self.embed = keras.layers.Embedding(
            config["vocab"], config["d_model"], name="embed", dtype=policy
        )
        self.blocks = [
            Block(config, name=f"layers_{i}", dtype=policy) for i in range(config["layers"])
        ]
        self.norm = keras.layers.RMSNormalization(
            epsilon=config["rms_eps"], name="norm", dtype=policy
        )
        self.lm_head = keras.layers.Dense(
            config["vocab"], use_bias=False, name="lm_head", dtype=policy
        )

    def _rope(self, seq: Any, dtype: Any) -> tuple[Any, Any]:
        wide = keras.backend.result_type(dtype, "float32")
        inv_freq = ops.convert_to_tensor(self.inv_freq, dtype=wide)
        angles = ops.outer(ops.arange(seq, dtype=wide), inv_freq)
        # [seq, 1, head_dim]: broadcast over the heads axis of [b, s, heads, hd].
        angles = ops.expand_dims(ops.concatenate([angles, angles], axis=-1), 1)
        return ops.cast(ops.cos(angles), dtype), ops.cast(ops.sin(angles), dtype)

    def call(self, tokens: Any, training: bool = False) -> Any:
        x = self.embed(tokens)
        cos, sin = self._rope(_seq(tokens), x.dtype)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.lm_head(self.norm(x))


def build(name: str, config: Config, dtype: str) -> Llama:
    """The model with variables in ``dtype``, built by one call on a one-token batch."""
    if name != llama.LLAMA_3_1_8B.name:
        raise ValueError(f"unknown llama model {name!r}")
    model = Llama(config, dtype=dtype)
    model(np.zeros((1, 1), dtype=np.int32))
    return model


def _variables(model: Llama) -> dict[str, Any]:
    """{canonical name: variable}; Keras stores Dense kernels [in, out] like the layout."""
    found = {"embed.embedding": model.embed.embeddings}
    for i, block in enumerate(model.blocks):
        p = f"layers.{i}"
        found[f"{p}.attn_norm.scale"] = block.attn_norm.scale
        for part in ("q", "k", "v", "o"):
            found[f"{p}.attn.{part}.kernel"] = getattr(block.attn, part).kernel
        found[f"{p}.mlp_norm.scale"] = block.mlp_norm.scale
        for part in ("gate", "up", "down"):
            found[f"{p}.mlp.{part}.kernel"] = getattr(block.mlp, part).kernel
    found["norm.scale"] = model.norm.scale
    found["lm_head.kernel"] = model.lm_head.kernel
    return found


def canonical_params(model: Llama) -> dict[str, Any]:
    found = _variables(model)
    return {name: found[name] for name in llama.layout(model.config)}


def load_canonical(model: Llama, weights: Mapping[str, Any]) -> None:
    found = _variables(model)
    if set(found) != set(weights):
        raise ValueError(f"weights do not match the layout: {sorted(set(found) ^ set(weights))}")
    for name, variable in found.items():
        variable.assign(ops.cast(weights[name], variable.dtype))


def loss(model: Llama, inputs: Any, labels: Any) -> Any:
    logits = model(inputs, training=True)
    logits = ops.cast(logits, keras.backend.result_type(logits.dtype, "float32"))
    per_token = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return ops.mean(per_token)
