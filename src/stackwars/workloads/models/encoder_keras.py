"""Backend-agnostic Keras 3 models for the encoder family (BERT-base, ViT-B/16); see
encoder.py for the function.

Every layer takes the model's dtype, so variables and computation are in it. Keras keeps
canonical layouts (Dense kernel [in, out], Conv2D kernel HWIO, Embedding [vocab, width]), so
canonical_params returns the variables themselves. Initialisers are zeros: weights always come
from load_canonical, and zeros make building the full size cheap.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import layers, ops

from stackwars.workloads.models.encoder import BERT_BASE, VIT_B16, check_seq, patch_count
from stackwars.workloads.models.spec import Config, ModelSpec


def dense(units: int, dtype: Any, activation: str | None = None) -> layers.Dense:
    return layers.Dense(units, activation=activation, kernel_initializer="zeros", dtype=dtype)


def norm(config: Config, dtype: Any) -> layers.LayerNormalization:
    return layers.LayerNormalization(epsilon=config["ln_eps"], dtype=dtype)


def embedding(rows: int, config: Config, dtype: Any) -> layers.Embedding:
    return layers.Embedding(rows, config["d_model"], embeddings_initializer="zeros", dtype=dtype)


class Attention(layers.Layer):
    def __init__(self, config: Config, dtype: Any) -> None:
        super().__init__(dtype=dtype)
        d, self.heads = config["d_model"], config["heads"]
        self.query, self.key, self.value, self.out = (dense(d, dtype) for _ in range(4))

    def build(self, input_shape: Any) -> None:
        for proj in (self.query, self.key, self.value, self.out):
            proj.build(input_shape)

    def call(self, x: Any) -> Any:
        _, s, d = x.shape
        # dot_product_attention takes [batch, seq, heads, head_dim] and computes scores and
        # softmax in float32, as the family's precision rule says.
        q, k, v = (
            ops.reshape(proj(x), (-1, s, self.heads, d // self.heads))
            for proj in (self.query, self.key, self.value)
        )
        out = ops.dot_product_attention(q, k, v, scale=(d // self.heads) ** -0.5)
        return self.out(ops.reshape(out, (-1, s, d)))


class Block(layers.Layer):
    def __init__(self, config: Config, dtype: Any) -> None:
        super().__init__(dtype=dtype)
        self.pre_ln = config["pre_ln"]
        self.attn, self.attn_ln = Attention(config, dtype), norm(config, dtype)
        self.fc1, self.fc2 = dense(config["d_ff"], dtype), dense(config["d_model"], dtype)
        self.mlp_ln = norm(config, dtype)

    def build(self, input_shape: Any) -> None:
        for layer in (self.attn, self.attn_ln, self.fc1, self.mlp_ln):
            layer.build(input_shape)
        self.fc2.build((*input_shape[:-1], self.fc1.units))

    def mlp(self, x: Any) -> Any:
        return self.fc2(ops.gelu(self.fc1(x), approximate=False))

    def call(self, x: Any) -> Any:
        if self.pre_ln:
            x = x + self.attn(self.attn_ln(x))
            return x + self.mlp(self.mlp_ln(x))
        x = self.attn_ln(x + self.attn(x))
        return self.mlp_ln(x + self.mlp(x))


def block_variables(block: Block, prefix: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    attn = block.attn
    for proj, layer in (("query", attn.query), ("key", attn.key), ("value", attn.value)):
        found |= {
            f"{prefix}.attn.{proj}.kernel": layer.kernel,
            f"{prefix}.attn.{proj}.bias": layer.bias,
        }
    for path, layer in (("attn.out", attn.out), ("mlp.fc1", block.fc1), ("mlp.fc2", block.fc2)):
        found |= {f"{prefix}.{path}.kernel": layer.kernel, f"{prefix}.{path}.bias": layer.bias}
    for path, layer in (("attn_ln", block.attn_ln), ("mlp_ln", block.mlp_ln)):
        found |= {f"{prefix}.{path}.scale": layer.gamma, f"{prefix}.{path}.bias": layer.beta}
    return found


class Encoder(keras.Model):
    """What the family's models share: spec, config, the stack of blocks, and the mapping of
    variables to canonical names (``variables_by_name``, completed by each model)."""

    def __init__(self, spec: ModelSpec, config: Config, dtype: Any) -> None:
        super().__init__(dtype=dtype)
        self.spec, self.config = spec, config
        self.blocks = [Block(config, dtype) for _ in range(config["layers"])]

    def build_blocks(self, input_shape: Any) -> None:
        for block in self.blocks:
            block.build(input_shape)

    def run_blocks(self, x: Any) -> Any:
        for block in self.blocks:
            x = block(x)
        return x

    def variables_by_name(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for i, block in enumerate(self.blocks):
            found |= block_variables(block, f"layer.{i}")
        return found

    def train_logits(self, inputs: Any) -> Any:
        return self(inputs, training=True)

    def train_labels(self, labels: Any) -> Any:
        return labels


class Bert(Encoder):
    def __init__(self, config: Config, dtype: Any) -> None:
        super().__init__(BERT_BASE, config, dtype)
        self.word = embedding(config["vocab"], config, dtype)
        self.position = embedding(config["positions"], config, dtype)
        self.token_type = embedding(config["type_vocab"], config, dtype)
        self.embed_ln = norm(config, dtype)
        self.pooler = dense(config["d_model"], dtype, activation="tanh")

    def build(self, input_shape: Any) -> None:
        hidden = (*input_shape, self.config["d_model"])
        for table in (self.word, self.position, self.token_type):
            table.build(input_shape)
        self.embed_ln.build(hidden)
        self.build_blocks(hidden)
        self.pooler.build((input_shape[0], self.config["d_model"]))

    def sequence(self, tokens: Any) -> Any:
        s = tokens.shape[1]
        check_seq(self.config, s)
        # Every token type id is 0.
        positions, types = ops.arange(s), ops.zeros_like(tokens)
        x = self.word(tokens) + self.position(positions) + self.token_type(types)
        return self.run_blocks(self.embed_ln(x))

    def call(self, tokens: Any) -> Any:
        seq = self.sequence(tokens)
        return seq, self.pooler(seq[:, 0])

    def train_logits(self, inputs: Any) -> Any:
        seq, pooled = self(inputs, training=True)
        rows = ops.concatenate([seq, pooled[:, None]], axis=1)
        return ops.matmul(rows, ops.transpose(self.word.embeddings))

    def train_labels(self, labels: Any) -> Any:
        return ops.concatenate([labels, labels[:, :1]], axis=1)

    def variables_by_name(self) -> dict[str, Any]:
        prefix = "embeddings"
        return {
            f"{prefix}.word.embedding": self.word.embeddings,
            f"{prefix}.position.embedding": self.position.embeddings,
            f"{prefix}.token_type.embedding": self.token_type.embeddings,
            f"{prefix}.ln.scale": self.embed_ln.gamma,
            f"{prefix}.ln.bias": self.embed_ln.beta,
            **super().variables_by_name(),
            "pooler.kernel": self.pooler.kernel,
            "pooler.bias": self.pooler.bias,
        }


class ViT(Encoder):
    """Takes NHWC images."""

    def __init__(self, config: Config, dtype: Any) -> None:
        super().__init__(VIT_B16, config, dtype)
        d, patch = config["d_model"], config["patch"]
        self.patch = layers.Conv2D(d, patch, strides=patch, kernel_initializer="zeros", dtype=dtype)
        self.ln = norm(config, dtype)
        self.head = dense(config["classes"], dtype)

    def build(self, input_shape: Any) -> None:
        d, tokens = self.config["d_model"], patch_count(self.config) + 1
        self.patch.build(input_shape)
        self.cls = self.add_weight(shape=(1, 1, d), initializer="zeros", name="cls")
        self.position = self.add_weight(shape=(1, tokens, d), initializer="zeros", name="position")
        self.build_blocks((input_shape[0], tokens, d))
        self.ln.build((input_shape[0], d))
        self.head.build((input_shape[0], d))

    def call(self, images: Any) -> Any:
        d = self.config["d_model"]
        x = ops.reshape(self.patch(images), (-1, patch_count(self.config), d))
        shape: Any = ops.shape(images)
        cls = ops.broadcast_to(self.cls, (shape[0], 1, d))
        x = self.run_blocks(ops.concatenate([cls, x], axis=1) + self.position)
        # Normalising only the class token: the norm acts per token.
        return self.head(self.ln(x[:, 0]))

    def variables_by_name(self) -> dict[str, Any]:
        return {
            "patch.kernel": self.patch.kernel,
            "patch.bias": self.patch.bias,
            "cls.embedding": self.cls,
            "position.embedding": self.position,
            **super().variables_by_name(),
            "ln.scale": self.ln.gamma,
            "ln.bias": self.ln.beta,
            "head.kernel": self.head.kernel,
            "head.bias": self.head.bias,
        }


def build(name: str, config: Config, dtype: str) -> Encoder:
    if name == "bert-base":
        model: Encoder = Bert(config, dtype)
        model.build((None, None))
    else:
        image = config["image"]
        model = ViT(config, dtype)
        model.build((None, image, image, config["channels"]))
    return model


def canonical_params(model: Encoder) -> dict[str, Any]:
    found = model.variables_by_name()
    layout = model.spec.layout(model.config)
    if found.keys() != layout.keys():
        raise ValueError(f"model variables {sorted(found)} are not the layout {sorted(layout)}")
    return {name: found[name] for name in layout}


def load_canonical(model: Encoder, weights: dict[str, Any]) -> None:
    for name, variable in canonical_params(model).items():
        variable.assign(ops.convert_to_tensor(weights[name], dtype=variable.dtype))


def cross_entropy(logits: Any, labels: Any) -> Any:
    """Mean cross-entropy over every label, in float32 or wider."""
    wide = ops.cast(logits, keras.backend.result_type(logits.dtype, "float32"))
    per_label = keras.losses.sparse_categorical_crossentropy(labels, wide, from_logits=True)
    return ops.mean(per_label)


def loss(model: Encoder, inputs: Any, labels: Any) -> Any:
    return cross_entropy(model.train_logits(inputs), model.train_labels(labels))
