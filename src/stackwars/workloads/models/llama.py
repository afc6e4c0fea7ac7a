"""LLaMA-3.1 8B (HF ``LlamaForCausalLM`` with Meta-Llama-3.1-8B's config), framework-free.

A pre-norm decoder: token embedding, ``layers`` blocks of
``x + attn(rms_norm(x))`` then ``x + mlp(rms_norm(x))``, a final RMSNorm and an untied LM head.
No layer has a bias.

* RMSNorm: ``x * rsqrt(mean(x²) + eps) * scale``, computed in at least float32 and cast back to
  the activations' dtype (as ``torch.nn.RMSNorm`` and ``keras.layers.RMSNormalization`` do;
  HF casts back before multiplying by the gain, which differs only below bfloat16 precision).
* Attention: grouped-query, ``kv_heads`` key/value heads shared by ``heads // kv_heads``
  consecutive query heads (HF ``repeat_kv``), rotary position embedding on q and k with HF's
  rotate_half convention, causal mask, scale ``1/sqrt(head_dim)``, softmax in at least float32.
* RoPE frequencies: ``rope_theta^(-2i/head_dim)`` remapped by HF's "llama3" rule
  (:func:`inverse_frequencies`); angles and their cos/sin are computed in at least float32.
* MLP: SwiGLU, ``down(silu(gate(x)) * up(x))``.

Output: logits ``[batch, seq, vocab]``. Training objective (every framework): mean
cross-entropy of the logits, upcast to float32, against int32 labels ``[batch, seq]`` (given
as they are: the model shifts nothing).
"""

from __future__ import annotations

import math
from typing import Any

from stackwars.workloads.models.spec import Activations, Config, Layout, ModelSpec

FULL: Config = {
    "vocab": 128256,
    "d_model": 4096,
    "layers": 32,
    "heads": 32,
    "kv_heads": 8,
    "d_ff": 14336,
    "rms_eps": 1e-5,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position": 8192,
    },
    "max_positions": 131072,
}

# head_dim 8 gives four frequencies; with the published theta and factors, an original context
# of 400 puts one wavelength below 400/4, one between 400/4 and 400 and two above 400, so every
# branch of the llama3 remapping is taken (tests check it).
TINY: Config = {
    "vocab": 97,
    "d_model": 32,
    "layers": 2,
    "heads": 4,
    "kv_heads": 2,
    "d_ff": 48,
    "rms_eps": 1e-5,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position": 400,
    },
    "max_positions": 64,
}


def head_dim(config: Config) -> int:
    return config["d_model"] // config["heads"]


def layout(config: Config) -> Layout:
    """Trainable parameters in canonical order: embedding, blocks, final norm, LM head."""
    d, ff, hd = config["d_model"], config["d_ff"], head_dim(config)
    shapes: Layout = {"embed.embedding": (config["vocab"], d)}
    for i in range(config["layers"]):
        p = f"layers.{i}"
        shapes[f"{p}.attn_norm.scale"] = (d,)
        shapes[f"{p}.attn.q.kernel"] = (d, config["heads"] * hd)
        shapes[f"{p}.attn.k.kernel"] = (d, config["kv_heads"] * hd)
        shapes[f"{p}.attn.v.kernel"] = (d, config["kv_heads"] * hd)
        shapes[f"{p}.attn.o.kernel"] = (config["heads"] * hd, d)
        shapes[f"{p}.mlp_norm.scale"] = (d,)
        shapes[f"{p}.mlp.gate.kernel"] = (d, ff)
        shapes[f"{p}.mlp.up.kernel"] = (d, ff)
        shapes[f"{p}.mlp.down.kernel"] = (ff, d)
    shapes["norm.scale"] = (d,)
    shapes["lm_head.kernel"] = (d, config["vocab"])
    return shapes


def inverse_frequencies(config: Config) -> Any:
    """float64 RoPE inverse frequencies ``[head_dim // 2]`` after HF's llama3 remapping
    (``_compute_llama3_parameters``): wavelengths longer than ``original / low_freq_factor``
    are slowed by ``factor``, shorter than ``original / high_freq_factor`` kept, and those in
    between interpolated linearly in ``original / wavelength``."""
    import numpy as np

    hd = head_dim(config)
    inv_freq = 1.0 / config["rope_theta"] ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    rs = config["rope_scaling"]
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    original = rs["original_max_position"]
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > original / low, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= original / high) & (wavelen <= original / low)
    return np.where(medium, smoothed, scaled)


def _compute_dtype(dtype: Any) -> Any:
    """At least float32: float64 stays float64, narrower floats widen."""
    import numpy as np

    return np.promote_types(dtype, np.float32)


def _rms_norm(x: Any, scale: Any, eps: float) -> Any:
    import numpy as np

    wide = x.astype(_compute_dtype(x.dtype))
    normed = wide / np.sqrt(np.mean(wide * wide, axis=-1, keepdims=True) + eps)
    return (normed * scale.astype(wide.dtype)).astype(x.dtype)


def _rope_tables(config: Config, seq: int, dtype: Any) -> tuple[Any, Any]:
    """cos and sin ``[seq, head_dim]`` (each frequency twice, rotate_half order)."""
    import numpy as np

    wide = _compute_dtype(dtype)
    inv_freq = inverse_frequencies(config).astype(wide)
    angles = np.arange(seq, dtype=wide)[:, None] * inv_freq[None, :]
    angles = np.concatenate([angles, angles], axis=-1)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def _rotate(x: Any, cos: Any, sin: Any) -> Any:
    import numpy as np

    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def _heads(x: Any, heads: int) -> Any:
    """[b, s, heads*hd] -> [b, heads, s, hd]."""
    b, s, width = x.shape
    return x.reshape(b, s, heads, width // heads).transpose(0, 2, 1, 3)


def _attention(config: Config, params: Any, prefix: str, x: Any, rope: tuple[Any, Any]) -> Any:
    import numpy as np

    heads, kv_heads, hd = config["heads"], config["kv_heads"], head_dim(config)
    q = _rotate(_heads(x @ params[f"{prefix}.q.kernel"], heads), *rope)
    k = _rotate(_heads(x @ params[f"{prefix}.k.kernel"], kv_heads), *rope)
    v = _heads(x @ params[f"{prefix}.v.kernel"], kv_heads)
    # Query head j reads key/value head j // group, as HF's repeat_kv lays them out.
    k = np.repeat(k, heads // kv_heads, axis=1)
    v = np.repeat(v, heads // kv_heads, axis=1)
    scores = (q @ k.transpose(0, 1, 3, 2)) * x.dtype.type(1.0 / math.sqrt(hd))
    seq = x.shape[1]
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    scores = np.where(causal, scores.astype(_compute_dtype(x.dtype)), -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = (scores / scores.sum(axis=-1, keepdims=True)).astype(x.dtype)
    out = (probs @ v).transpose(0, 2, 1, 3).reshape(x.shape[0], seq, heads * hd)
    return out @ params[f"{prefix}.o.kernel"]


def _mlp(params: Any, prefix: str, x: Any) -> Any:
    import numpy as np

    gate = x @ params[f"{prefix}.gate.kernel"]
    # silu(g) = g * sigmoid(g), sigmoid written with tanh so no exp overflows.
    silu = gate * (0.5 * (1.0 + np.tanh(0.5 * gate)))
    return (silu * (x @ params[f"{prefix}.up.kernel"])) @ params[f"{prefix}.down.kernel"]


def forward(config: Config, params: Any, buffers: Any, inputs: Any) -> Any:
    """Logits ``[batch, seq, vocab]`` in the params' dtype for int tokens ``[batch, seq]``."""
    import numpy as np

    tokens = np.asarray(inputs)
    eps = config["rms_eps"]
    x = params["embed.embedding"][tokens]
    rope = _rope_tables(config, tokens.shape[1], x.dtype)
    for i in range(config["layers"]):
        p = f"layers.{i}"
        normed = _rms_norm(x, params[f"{p}.attn_norm.scale"], eps)
        x = x + _attention(config, params, f"{p}.attn", normed, rope)
        x = x + _mlp(params, f"{p}.mlp", _rms_norm(x, params[f"{p}.mlp_norm.scale"], eps))
    return _rms_norm(x, params["norm.scale"], eps) @ params["lm_head.kernel"]


def forward_flops(config: Config, batch: int, seq: int) -> float:
    """Matmul FLOPs: 2·tokens·(block kernels) + QKᵀ and PV (2·b·s²·heads·head_dim each, the
    full square: masked scores are computed too) + LM head 2·tokens·d·vocab."""
    tokens = batch * seq
    block = sum(
        math.prod(shape)
        for name, shape in layout(config).items()
        if name.startswith("layers.") and name.endswith(".kernel")
    )
    attention = 4 * batch * seq * seq * config["heads"] * head_dim(config) * config["layers"]
    head = 2 * tokens * config["d_model"] * config["vocab"]
    return float(2 * tokens * block + attention + head)


def activations(config: Config, batch: int, seq: int) -> Activations:
    """Per block, autograd keeps: both norm inputs and outputs (4·d), q, rotated q, attention
    output (3·heads·hd), k, rotated k, v (3·kv·hd), scores and probabilities (2·heads·s), gate,
    up, silu(gate) and their product (4·d_ff); plus the logits and their float32 log-softmax.
    The forward alone peaks at one block's temporaries plus the logits."""
    tokens = batch * seq
    d, ff, hd = config["d_model"], config["d_ff"], head_dim(config)
    q_width, kv_width = config["heads"] * hd, config["kv_heads"] * hd
    scores = batch * config["heads"] * seq * seq
    attn = tokens * (2 * d + 3 * q_width + 3 * kv_width) + 2 * scores
    mlp = tokens * (2 * d + 4 * ff)
    logits = tokens * config["vocab"]
    saved = config["layers"] * (attn + mlp) + tokens * d + 2 * logits
    peak_live = tokens * d + max(attn, mlp) + logits
    return Activations(
        saved=saved, peak_live=peak_live, scores=config["layers"] * 2 * scores, logits=logits
    )


LLAMA_3_1_8B = ModelSpec(
    name="llama-3.1-8b",
    description="LLaMA-3.1 8B: GQA (8 KV heads), SwiGLU, RMSNorm, llama3-scaled RoPE",
    family="llama",
    inputs="tokens",
    configs={"full": FULL, "tiny": TINY},
    layout=layout,
    forward=forward,
    forward_flops=forward_flops,
    activations=activations,
)

SPECS = (LLAMA_3_1_8B,)
