"""Plain JAX over canonical dicts for the encoder family (BERT-base, ViT-B/16); see encoder.py
for the function. ``name`` and ``config`` are static: jit over params, buffers and inputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from stackwars.workloads.models.encoder import check_seq, patch_count
from stackwars.workloads.models.spec import Config

Params = Mapping[str, Any]


def layer_norm(x: Any, params: Params, prefix: str, eps: float) -> Any:
    h = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    mean = h.mean(axis=-1, keepdims=True)
    var = jnp.square(h - mean).mean(axis=-1, keepdims=True)
    y = (h - mean) * jax.lax.rsqrt(var + eps) * params[f"{prefix}.scale"] + params[f"{prefix}.bias"]
    return y.astype(x.dtype)


def dense(x: Any, params: Params, prefix: str) -> Any:
    return x @ params[f"{prefix}.kernel"] + params[f"{prefix}.bias"]


def attention(x: Any, params: Params, prefix: str, heads: int) -> Any:
    b, s, d = x.shape
    # dot_product_attention takes [batch, seq, heads, head_dim] and computes scores and
    # softmax in float32, as the family's precision rule says.
    q, k, v = (
        dense(x, params, f"{prefix}.{proj}").reshape(b, s, heads, d // heads)
        for proj in ("query", "key", "value")
    )
    out = jax.nn.dot_product_attention(q, k, v, scale=(d // heads) ** -0.5)
    return dense(out.reshape(b, s, d), params, f"{prefix}.out")


def block(x: Any, params: Params, i: int, config: Config) -> Any:
    eps, heads, p = config["ln_eps"], config["heads"], f"layer.{i}"

    def mlp(h: Any) -> Any:
        hidden = jax.nn.gelu(dense(h, params, f"{p}.mlp.fc1"), approximate=False)
        return dense(hidden, params, f"{p}.mlp.fc2")

    if config["pre_ln"]:
        x = x + attention(layer_norm(x, params, f"{p}.attn_ln", eps), params, f"{p}.attn", heads)
        return x + mlp(layer_norm(x, params, f"{p}.mlp_ln", eps))
    x = layer_norm(x + attention(x, params, f"{p}.attn", heads), params, f"{p}.attn_ln", eps)
    return layer_norm(x + mlp(x), params, f"{p}.mlp_ln", eps)


def blocks(x: Any, params: Params, config: Config) -> Any:
    for i in range(config["layers"]):
        x = block(x, params, i, config)
    return x


def bert_sequence(config: Config, params: Params, tokens: Any) -> Any:
    s = tokens.shape[1]
    check_seq(config, s)
    x = (
        jnp.take(params["embeddings.word.embedding"], tokens, axis=0)
        + params["embeddings.position.embedding"][:s]
        + params["embeddings.token_type.embedding"][0]
    )
    return blocks(layer_norm(x, params, "embeddings.ln", config["ln_eps"]), params, config)


def bert_forward(config: Config, params: Params, tokens: Any) -> Any:
    seq = bert_sequence(config, params, tokens)
    return seq, jnp.tanh(dense(seq[:, 0], params, "pooler"))


def bert_loss(config: Config, params: Params, tokens: Any, labels: Any) -> Any:
    """The training objective (see encoder.py): sequence rows and the pooled row, tied to the
    word embedding, against the labels and each example's first label."""
    seq, pooled = bert_forward(config, params, tokens)
    rows = jnp.concatenate([seq, pooled[:, None]], axis=1)
    logits = rows @ params["embeddings.word.embedding"].T
    return cross_entropy(logits, jnp.concatenate([labels, labels[:, :1]], axis=1))


def vit_loss(config: Config, params: Params, images: Any, labels: Any) -> Any:
    return cross_entropy(vit_forward(config, params, images), labels)


def vit_forward(config: Config, params: Params, images: Any) -> Any:
    """Logits for NHWC images."""
    patch, b = config["patch"], images.shape[0]
    x = jax.lax.conv_general_dilated(
        images,
        params["patch.kernel"],
        window_strides=(patch, patch),
        padding="VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    x = x.reshape(b, patch_count(config), -1) + params["patch.bias"]
    cls = jnp.broadcast_to(params["cls.embedding"], (b, 1, x.shape[-1]))
    x = jnp.concatenate([cls, x], axis=1) + params["position.embedding"]
    x = blocks(x, params, config)
    # Normalising only the class token: the norm acts per token.
    return dense(layer_norm(x[:, 0], params, "ln", config["ln_eps"]), params, "head")


FORWARD: dict[str, Callable[[Config, Params, Any], Any]] = {
    "bert-base": bert_forward,
    "vit-b16": vit_forward,
}
LOSSES: dict[str, Callable[[Config, Params, Any, Any], Any]] = {
    "bert-base": bert_loss,
    "vit-b16": vit_loss,
}


def cross_entropy(logits: Any, labels: Any) -> Any:
    """Mean cross-entropy over every label, in float32 or wider."""
    wide = logits.astype(jnp.promote_types(logits.dtype, jnp.float32))
    log_probs = jax.nn.log_softmax(wide, axis=-1)
    picked = jnp.take_along_axis(log_probs, labels[..., None].astype(jnp.int32), axis=-1)
    return -picked.mean()


# The contract fixes these signatures, positional arguments and all.
def forward(  # noqa: PLR0917
    name: str, config: Config, params: Params, buffers: Params, inputs: Any, train: bool
) -> tuple[Any, Params]:
    """The model's output (no dropout, no batch statistics: ``train`` changes nothing)."""
    return FORWARD[name](config, params, inputs), buffers


def loss(  # noqa: PLR0917
    name: str, config: Config, params: Params, buffers: Params, inputs: Any, labels: Any
) -> tuple[Any, Params]:
    return LOSSES[name](config, params, inputs, labels), buffers
