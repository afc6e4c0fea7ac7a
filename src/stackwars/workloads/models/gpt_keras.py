"""GPT-2 small and GPT-Neo 1.3B as backend-agnostic Keras 3 layers (see gpt.py).

Layers are reachable by the canonical path (``model.h[0].attn.qkv`` is a Dense), so a
canonical name maps to its variable by walking the path: Dense ``kernel``/``bias`` are already
canonical ([in, out]), LayerNormalization's ``gamma``/``beta`` are ``scale``/``bias``, an
Embedding's ``embeddings`` is ``embedding``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
from keras import layers, ops

from stackwars.workloads.models.gpt import (
    attention_scale,
    attention_window,
    layout,
    projections,
)
from stackwars.workloads.models.spec import Config


def _mask(seq: int, window: int | None) -> Any:
    """Boolean [seq, seq]: True where query i may attend key j."""
    i = ops.expand_dims(ops.arange(seq), 1)
    j = ops.expand_dims(ops.arange(seq), 0)
    allowed = ops.less_equal(j, i)
    if window is None:
        return allowed
    return ops.logical_and(allowed, ops.less(ops.subtract(i, j), window))


class Attention(layers.Layer):
    def __init__(self, config: Config, layer: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        d, dtype = config["d_model"], kwargs.get("dtype")
        self.heads = config["heads"]
        self.scale = attention_scale(config)
        self.window = attention_window(config, layer)
        self.fused = config["fused_qkv"]
        width = 3 * d if self.fused else d
        for name in projections(config):
            setattr(self, name, layers.Dense(width, use_bias=config["qkv_bias"], dtype=dtype))
        self.out = layers.Dense(d, dtype=dtype)

    def _heads(self, t: Any) -> Any:
        _, s, d = t.shape
        return ops.transpose(ops.reshape(t, (-1, s, self.heads, d // self.heads)), (0, 2, 1, 3))

    def call(self, x: Any) -> Any:
        if self.fused:
            parts: Any = ops.split(self.qkv(x), 3, axis=-1)
            q, k, v = parts
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        _, s, d = x.shape
        scores: Any = ops.matmul(self._heads(q), ops.swapaxes(self._heads(k), -1, -2))
        scores = ops.multiply(scores, ops.cast(self.scale, scores.dtype))
        blocked = ops.cast(-float("inf"), scores.dtype)
        masked: Any = ops.where(_mask(s, self.window), scores, blocked)
        out = ops.matmul(ops.softmax(masked, axis=-1), self._heads(v))
        return self.out(ops.reshape(ops.transpose(out, (0, 2, 1, 3)), (-1, s, d)))


class MLP(layers.Layer):
    def __init__(self, config: Config, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dtype = kwargs.get("dtype")
        self.fc = layers.Dense(config["d_ff"], dtype=dtype)
        self.proj = layers.Dense(config["d_model"], dtype=dtype)

    def call(self, x: Any) -> Any:
        return self.proj(keras.activations.gelu(self.fc(x), approximate=True))


class Block(layers.Layer):
    def __init__(self, config: Config, layer: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dtype, eps = kwargs.get("dtype"), config["ln_eps"]
        self.ln_1 = layers.LayerNormalization(epsilon=eps, dtype=dtype)
        self.attn = Attention(config, layer, dtype=dtype)
        self.ln_2 = layers.LayerNormalization(epsilon=eps, dtype=dtype)
        self.mlp = MLP(config, dtype=dtype)

    def call(self, x: Any) -> Any:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(keras.Model):
    def __init__(self, config: Config, dtype: str) -> None:
        super().__init__(dtype=dtype)
        self.gpt_config = config
        d = config["d_model"]
        self.wte = layers.Embedding(config["vocab"], d, dtype=dtype)
        self.wpe = layers.Embedding(config["positions"], d, dtype=dtype)
        self.h = [Block(config, i, dtype=dtype) for i in range(config["layers"])]
        self.ln_f = layers.LayerNormalization(epsilon=config["ln_eps"], dtype=dtype)

    def call(self, tokens: Any, training: bool = False) -> Any:
        x = self.wte(tokens) + self.wpe(ops.arange(tokens.shape[1]))
        for block in self.h:
            x = block(x)
        # Tied LM head: the token embedding, transposed; no weight of its own.
        return ops.matmul(self.ln_f(x), ops.transpose(self.wte.embeddings))


def build(name: str, config: Config, dtype: str) -> GPT:
    """The decoder for ``config`` with ``dtype`` variables, built by one call on two tokens
    (keras.ops.softmax warns on an axis of size 1); ``name`` does not matter, one class serves
    the family."""
    model = GPT(config, dtype)
    model(ops.zeros((1, 2), dtype="int32"))
    return model


def loss(model: GPT, inputs: Any, labels: Any) -> Any:
    """Mean cross-entropy of the float32-upcast logits against ``labels``."""
    logits = ops.cast(model(inputs, training=True), "float32")
    return ops.mean(ops.sparse_categorical_crossentropy(labels, logits, from_logits=True))


_LEAVES = {
    layers.Dense: {"kernel": "kernel", "bias": "bias"},
    layers.LayerNormalization: {"scale": "gamma", "bias": "beta"},
    layers.Embedding: {"embedding": "embeddings"},
}


def _variable(model: GPT, name: str) -> Any:
    path, leaf = name.rsplit(".", 1)
    owner: Any = model
    for part in path.split("."):
        owner = owner[int(part)] if part.isdigit() else getattr(owner, part)
    return getattr(owner, _LEAVES[type(owner)][leaf])


def canonical_params(model: GPT) -> dict[str, Any]:
    """Trainable variables by canonical name, in layout order (already in canonical layout)."""
    return {name: _variable(model, name) for name in layout(model.gpt_config)}


def load_canonical(model: GPT, weights: Mapping[str, Any]) -> None:
    """Assign canonical arrays (any dtype; cast to the variables') to the model."""
    for name, variable in canonical_params(model).items():
        variable.assign(ops.cast(weights[name], variable.dtype))
