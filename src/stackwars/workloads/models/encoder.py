"""BERT-base and ViT-B/16: bidirectional transformer encoders (family "encoder").

Both stack one encoder block: multi-head self-attention with separate query, key and value
projections, each with bias (timm's ViT fuses them into one qkv projection; three separate
ones compute the same function with the same parameters), scores scaled by 1/sqrt(head_dim)
and no mask, then an MLP ``fc1`` (d -> d_ff), exact erf GELU, ``fc2`` (d_ff -> d). BERT puts
LayerNorm after each residual sum (post-LN: ``x = LN(x + f(x))``), ViT before each sublayer
(pre-LN: ``x = x + f(LN(x))``) and once more at the end. The block's norms are ``attn_ln`` and
``mlp_ln`` in both.

BERT-base (HF BertModel with its pooler): embeddings word + position + token type (every type
id is 0), then LN; output ``(sequence_output [b, s, d], pooled [b, d])`` with pooled =
tanh(dense(sequence_output[:, 0])). Training objective: mean cross-entropy of the tied logits
``rows @ word_embedding.T`` over ``rows = [sequence_output; pooled]`` (s + 1 rows per
example) against the labels ``[b, s]`` followed by each example's first label: a stand-in for
masked-LM and next-sentence heads that adds no weights, yet gives every weight, the pooler's
included, a gradient (a weight without one is skipped by torch's AdamW but decayed by optax's).

ViT-B/16 (the original, timm's vit_base_patch16_224): patches embedded by a convolution with
kernel and stride ``patch`` and bias, a class token prepended, learned position embeddings for
(image/patch)² + 1 tokens, pre-LN blocks, a final LN, and a linear head on the class token.
Output logits ``[b, classes]``; objective: mean cross-entropy against labels ``[b]``.

Precision, the same in every framework (their fused attention and norm kernels work so):
attention scores and softmax, LayerNorm statistics, and the loss are computed in at least
float32; everything else in the parameters' dtype.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from stackwars.workloads._numpy_ops import softmax
from stackwars.workloads.models.spec import Activations, Config, Layout, ModelSpec

Params = Mapping[str, Any]

BERT_FULL: Config = {
    "vocab": 30522,
    "positions": 512,
    "type_vocab": 2,
    "d_model": 768,
    "layers": 12,
    "heads": 12,
    "d_ff": 3072,
    "ln_eps": 1e-12,
    "pre_ln": False,
}
BERT_TINY: Config = {
    **BERT_FULL,
    "vocab": 97,
    "positions": 32,
    "d_model": 16,
    "layers": 2,
    "heads": 2,
    "d_ff": 32,
}
VIT_FULL: Config = {
    "image": 224,
    "patch": 16,
    "channels": 3,
    "d_model": 768,
    "layers": 12,
    "heads": 12,
    "d_ff": 3072,
    "ln_eps": 1e-6,
    "classes": 1000,
    "pre_ln": True,
}
VIT_TINY: Config = {
    **VIT_FULL,
    "image": 32,
    "patch": 8,
    "d_model": 16,
    "layers": 2,
    "heads": 2,
    "d_ff": 32,
    "classes": 10,
}


def patch_count(config: Config) -> int:
    """Patches per image (the class token makes one more token); refuses a ragged grid."""
    image, patch = config["image"], config["patch"]
    if image % patch:
        raise ValueError(
            f"vit needs the image size divisible by the patch size, got image={image}, "
            f"patch={patch}; choose image as a multiple of {patch}"
        )
    return (image // patch) ** 2


def _norm_layout(prefix: str, d: int) -> Layout:
    return {f"{prefix}.scale": (d,), f"{prefix}.bias": (d,)}


def _dense_layout(prefix: str, d_in: int, d_out: int) -> Layout:
    return {f"{prefix}.kernel": (d_in, d_out), f"{prefix}.bias": (d_out,)}


def _blocks_layout(config: Config) -> Layout:
    d, d_ff = config["d_model"], config["d_ff"]
    layout: Layout = {}
    for i in range(config["layers"]):
        for proj in ("query", "key", "value", "out"):
            layout |= _dense_layout(f"layer.{i}.attn.{proj}", d, d)
        layout |= _norm_layout(f"layer.{i}.attn_ln", d)
        layout |= _dense_layout(f"layer.{i}.mlp.fc1", d, d_ff)
        layout |= _dense_layout(f"layer.{i}.mlp.fc2", d_ff, d)
        layout |= _norm_layout(f"layer.{i}.mlp_ln", d)
    return layout


def bert_layout(config: Config) -> Layout:
    d = config["d_model"]
    return {
        "embeddings.word.embedding": (config["vocab"], d),
        "embeddings.position.embedding": (config["positions"], d),
        "embeddings.token_type.embedding": (config["type_vocab"], d),
        **_norm_layout("embeddings.ln", d),
        **_blocks_layout(config),
        **_dense_layout("pooler", d, d),
    }


def vit_layout(config: Config) -> Layout:
    d, patch = config["d_model"], config["patch"]
    return {
        "patch.kernel": (patch, patch, config["channels"], d),
        "patch.bias": (d,),
        "cls.embedding": (1, 1, d),
        "position.embedding": (1, patch_count(config) + 1, d),
        **_blocks_layout(config),
        **_norm_layout("ln", d),
        **_dense_layout("head", d, config["classes"]),
    }


def layer_norm(x: Any, params: Params, prefix: str, eps: float) -> Any:
    import numpy as np

    h = x.astype(np.result_type(x.dtype, np.float32))
    mean = h.mean(axis=-1, keepdims=True)
    var = np.square(h - mean).mean(axis=-1, keepdims=True)
    y = (h - mean) / np.sqrt(var + eps) * params[f"{prefix}.scale"] + params[f"{prefix}.bias"]
    return y.astype(x.dtype)


def dense(x: Any, params: Params, prefix: str) -> Any:
    return x @ params[f"{prefix}.kernel"] + params[f"{prefix}.bias"]


def gelu(x: Any) -> Any:
    """Exact GELU, x·Φ(x)."""
    from scipy.special import erf

    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def attention(x: Any, params: Params, prefix: str, heads: int) -> Any:
    import numpy as np

    b, s, d = x.shape
    q, k, v = (
        dense(x, params, f"{prefix}.{proj}").reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)
        for proj in ("query", "key", "value")
    )
    wide = np.result_type(x.dtype, np.float32)
    scores = (q.astype(wide) @ k.astype(wide).swapaxes(-1, -2)) * (d // heads) ** -0.5
    out = softmax(scores).astype(x.dtype) @ v
    return dense(out.transpose(0, 2, 1, 3).reshape(b, s, d), params, f"{prefix}.out")


def block(x: Any, params: Params, i: int, config: Config) -> Any:
    """One encoder block, pre-LN or post-LN as ``config["pre_ln"]`` says."""
    eps, heads, p = config["ln_eps"], config["heads"], f"layer.{i}"

    def mlp(h: Any) -> Any:
        return dense(gelu(dense(h, params, f"{p}.mlp.fc1")), params, f"{p}.mlp.fc2")

    if config["pre_ln"]:
        x = x + attention(layer_norm(x, params, f"{p}.attn_ln", eps), params, f"{p}.attn", heads)
        return x + mlp(layer_norm(x, params, f"{p}.mlp_ln", eps))
    x = layer_norm(x + attention(x, params, f"{p}.attn", heads), params, f"{p}.attn_ln", eps)
    return layer_norm(x + mlp(x), params, f"{p}.mlp_ln", eps)


def check_seq(config: Config, seq: int) -> None:
    if seq > config["positions"]:
        raise ValueError(
            f"bert has {config['positions']} positions, got a sequence of {seq}; "
            f"choose seq <= {config['positions']}"
        )


def bert_sequence(config: Config, params: Params, tokens: Any) -> Any:
    """sequence_output [b, s, d] for int tokens [b, s]."""
    check_seq(config, tokens.shape[1])
    x = (
        params["embeddings.word.embedding"][tokens]
        + params["embeddings.position.embedding"][: tokens.shape[1]]
        + params["embeddings.token_type.embedding"][0]
    )
    x = layer_norm(x, params, "embeddings.ln", config["ln_eps"])
    for i in range(config["layers"]):
        x = block(x, params, i, config)
    return x


def bert_forward(config: Config, params: Params, buffers: Params, tokens: Any) -> Any:
    import numpy as np

    seq = bert_sequence(config, params, tokens)
    return seq, np.tanh(dense(seq[:, 0], params, "pooler"))


def patches(images: Any, patch: int) -> Any:
    """NHWC images -> [b, patches, patch·patch·channels], patches row-major, each flattened
    (row, column, channel) as an HWIO kernel's first three axes: a matmul with the reshaped
    kernel is the stride-``patch`` convolution."""
    b, h, w, c = images.shape
    grid = images.reshape(b, h // patch, patch, w // patch, patch, c).transpose(0, 1, 3, 2, 4, 5)
    return grid.reshape(b, (h // patch) * (w // patch), patch * patch * c)


def vit_forward(config: Config, params: Params, buffers: Params, images: Any) -> Any:
    import numpy as np

    d = config["d_model"]
    if images.shape[1:3] != (config["image"], config["image"]):
        raise ValueError(f"vit expects {config['image']}² images, got {images.shape[1:3]}")
    x = patches(images, config["patch"]) @ params["patch.kernel"].reshape(-1, d)
    x = x + params["patch.bias"]
    cls = np.broadcast_to(params["cls.embedding"], (x.shape[0], 1, d))
    x = np.concatenate([cls, x], axis=1) + params["position.embedding"]
    for i in range(config["layers"]):
        x = block(x, params, i, config)
    # The norm acts per token, so normalising the class token alone is the same function.
    return dense(layer_norm(x[:, 0], params, "ln", config["ln_eps"]), params, "head")


def _blocks_flops(config: Config, batch: int, seq: int) -> float:
    d, d_ff = config["d_model"], config["d_ff"]
    projections = 2 * batch * seq * (4 * d * d + 2 * d * d_ff)
    # q·kᵀ and probabilities·v, over all heads: 2·seq²·d multiply-adds each.
    scores_and_values = 4 * batch * seq * seq * d
    return float(config["layers"] * (projections + scores_and_values))


def bert_flops(config: Config, batch: int, seq: int) -> float:
    """Matmul FLOPs of the forward output (blocks and pooler). The training loss adds the tied
    projection to the vocabulary, 2·batch·seq·d·vocab more per forward."""
    return _blocks_flops(config, batch, seq) + 2.0 * batch * config["d_model"] ** 2


def vit_flops(config: Config, batch: int, seq: int) -> float:
    """Matmul FLOPs of patch embedding, blocks and head; ``seq`` is ignored, as the image size
    fixes the sequence (patches + class token)."""
    d, n = config["d_model"], patch_count(config)
    embed = 2 * batch * n * config["patch"] ** 2 * config["channels"] * d
    head = 2 * batch * d * config["classes"]
    return embed + _blocks_flops(config, batch, n + 1) + head


def _blocks_activations(config: Config, batch: int, seq: int) -> Activations:
    """Per layer, saved: block input, q, k, v, attention output, two norms' input and output,
    fc1 output and GELU output, and scores and probabilities [b, heads, s, s]. Live: the
    residual stream and a sublayer's result, plus the larger sublayer's temporaries."""
    d, d_ff, tokens = config["d_model"], config["d_ff"], batch * seq
    scores = batch * config["heads"] * seq * seq
    per_layer = tokens * (7 * d + 2 * d_ff) + 2 * scores
    live = 2 * tokens * d + max(4 * tokens * d + 2 * scores, 2 * tokens * d_ff)
    return Activations(
        saved=config["layers"] * per_layer, peak_live=live, scores=config["layers"] * 2 * scores
    )


def bert_activations(config: Config, batch: int, seq: int) -> Activations:
    """Blocks, the embeddings' sum and norm, and for training the [b, s, vocab] logits."""
    tokens, d = batch * seq, config["d_model"]
    blocks = _blocks_activations(config, batch, seq)
    logits = tokens * config["vocab"]
    return Activations(
        saved=blocks.saved + 2 * tokens * d + logits,
        peak_live=blocks.peak_live + tokens * d + batch * d,
        scores=blocks.scores,
        logits=logits,
    )


def vit_activations(config: Config, batch: int, seq: int) -> Activations:
    """Blocks over patches + class token, the patch embedding and its sum with positions, the
    final norm, and the logits; ``seq`` is ignored as in :func:`vit_flops`."""
    d, n = config["d_model"], patch_count(config)
    blocks = _blocks_activations(config, batch, n + 1)
    logits = batch * config["classes"]
    return Activations(
        saved=blocks.saved + 2 * batch * (n + 1) * d + 2 * batch * d + logits,
        peak_live=blocks.peak_live + logits,
        scores=blocks.scores,
        logits=logits,
    )


BERT_BASE = ModelSpec(
    name="bert-base",
    description="BERT-base encoder with pooler, post-LN, tied-embedding token loss",
    family="encoder",
    inputs="tokens",
    configs={"full": BERT_FULL, "tiny": BERT_TINY},
    layout=bert_layout,
    forward=bert_forward,
    forward_flops=bert_flops,
    # The training loss's tied vocabulary projection of s + 1 rows per example.
    loss_flops=lambda config, b, s: 2.0 * b * (s + 1) * config["d_model"] * config["vocab"],
    activations=bert_activations,
)

VIT_B16 = ModelSpec(
    name="vit-b16",
    description="ViT-B/16 image classifier, pre-LN, class-token head",
    family="encoder",
    inputs="images",
    configs={"full": VIT_FULL, "tiny": VIT_TINY},
    layout=vit_layout,
    forward=vit_forward,
    forward_flops=vit_flops,
    activations=vit_activations,
)

SPECS = (BERT_BASE, VIT_B16)
