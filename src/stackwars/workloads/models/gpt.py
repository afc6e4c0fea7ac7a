"""GPT-2 small and GPT-Neo 1.3B: pre-LN decoder-only transformers with a tied LM head.

One decoder covers both, configured by the config dict: token and learned position
embeddings; per layer ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))``; a final LayerNorm; logits
``h @ wte.embedding.T`` (the LM head is the token embedding, no weight of its own). Attention
projections are one fused ``qkv`` kernel (GPT-2, with bias) or separate ``q``/``k``/``v``
kernels (GPT-Neo, without bias); the output projection has a bias in both. Scores are scaled
by 1/sqrt(head_dim) only when ``scale_attention`` (GPT-Neo applies no scaling). A global layer
lets position i attend every j <= i; a local layer only i - window < j <= i. The MLP uses the
tanh approximation of GELU (HF's ``gelu_new``). Everything is computed in the params' dtype.

Inputs are int32 tokens [batch, seq]; the output is logits [batch, seq, vocab]. The training
objective is the mean cross-entropy of the logits, upcast to float32, against int32 labels
[batch, seq] as given (the model shifts nothing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from stackwars.workloads._numpy_ops import softmax
from stackwars.workloads.attention import merge_heads, split_heads
from stackwars.workloads.models.spec import Activations, Config, Layout, ModelSpec


def attention_scale(config: Config) -> float:
    """The factor on q·k: 1/sqrt(head_dim) when the config scales attention, else 1."""
    if not config["scale_attention"]:
        return 1.0
    return 1.0 / math.sqrt(config["d_model"] // config["heads"])


def attention_window(config: Config, layer: int) -> int | None:
    """How many positions (itself included) a query in ``layer`` sees; None: all before it."""
    return config["window"] if config["layer_types"][layer] == "local" else None


def projections(config: Config) -> tuple[str, ...]:
    """Names of the attention input projections: one fused ``qkv`` or ``q``, ``k``, ``v``."""
    return ("qkv",) if config["fused_qkv"] else ("q", "k", "v")


def layout(config: Config) -> Layout:
    d, f = config["d_model"], config["d_ff"]
    shapes: Layout = {
        "wte.embedding": (config["vocab"], d),
        "wpe.embedding": (config["positions"], d),
    }
    qkv_width = 3 * d if config["fused_qkv"] else d
    for i in range(config["layers"]):
        p = f"h.{i}"
        shapes |= {f"{p}.ln_1.scale": (d,), f"{p}.ln_1.bias": (d,)}
        for proj in projections(config):
            shapes[f"{p}.attn.{proj}.kernel"] = (d, qkv_width)
            if config["qkv_bias"]:
                shapes[f"{p}.attn.{proj}.bias"] = (qkv_width,)
        shapes |= {
            f"{p}.attn.out.kernel": (d, d),
            f"{p}.attn.out.bias": (d,),
            f"{p}.ln_2.scale": (d,),
            f"{p}.ln_2.bias": (d,),
            f"{p}.mlp.fc.kernel": (d, f),
            f"{p}.mlp.fc.bias": (f,),
            f"{p}.mlp.proj.kernel": (f, d),
            f"{p}.mlp.proj.bias": (d,),
        }
    return shapes | {"ln_f.scale": (d,), "ln_f.bias": (d,)}


def causal_mask(seq: int, window: int | None) -> Any:
    """Boolean [seq, seq]: True where query i may attend key j."""
    import numpy as np

    i, j = np.arange(seq)[:, None], np.arange(seq)[None, :]
    allowed = j <= i
    return allowed if window is None else allowed & (i - j < window)


def gelu_tanh(x: Any) -> Any:
    import numpy as np

    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _layer_norm(x: Any, params: Mapping[str, Any], prefix: str, eps: float) -> Any:
    import numpy as np

    centred = x - x.mean(axis=-1, keepdims=True)
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + eps) * params[f"{prefix}.scale"] + params[f"{prefix}.bias"]


def _dense(x: Any, params: Mapping[str, Any], prefix: str) -> Any:
    y = x @ params[f"{prefix}.kernel"]
    bias = params.get(f"{prefix}.bias")
    return y if bias is None else y + bias


def _attention(config: Config, params: Mapping[str, Any], layer: int, x: Any) -> Any:
    import numpy as np

    p, heads = f"h.{layer}.attn", config["heads"]
    if config["fused_qkv"]:
        q, k, v = np.split(_dense(x, params, f"{p}.qkv"), 3, axis=-1)
    else:
        q, k, v = (_dense(x, params, f"{p}.{name}") for name in ("q", "k", "v"))
    q, k, v = (split_heads(t, heads) for t in (q, k, v))
    scores = (q @ k.swapaxes(-1, -2)) * attention_scale(config)
    allowed = causal_mask(x.shape[1], attention_window(config, layer))
    probs = softmax(np.where(allowed, scores, -np.inf))
    return _dense(merge_heads(probs @ v), params, f"{p}.out")


def forward(
    config: Config, params: Mapping[str, Any], buffers: Mapping[str, Any], tokens: Any
) -> Any:
    """Logits [batch, seq, vocab] in the params' dtype (the model has no buffers)."""
    eps = config["ln_eps"]
    wte = params["wte.embedding"]
    x = wte[tokens] + params["wpe.embedding"][: tokens.shape[1]]
    for i in range(config["layers"]):
        x = x + _attention(config, params, i, _layer_norm(x, params, f"h.{i}.ln_1", eps))
        h = _dense(_layer_norm(x, params, f"h.{i}.ln_2", eps), params, f"h.{i}.mlp.fc")
        x = x + _dense(gelu_tanh(h), params, f"h.{i}.mlp.proj")
    return _layer_norm(x, params, "ln_f", eps) @ wte.T


def forward_flops(config: Config, batch: int, seq: int) -> float:
    """Matmuls only: projections and MLP (2 per weight per token), the q·k and probs·v
    products over the full seq × seq scores (local layers compute them too, then mask), and
    the tied LM head."""
    d, f, layers = config["d_model"], config["d_ff"], config["layers"]
    tokens = batch * seq
    matmul_weights = layers * (4 * d * d + 2 * d * f)
    attention = 4 * batch * layers * seq * seq * d
    return 2.0 * tokens * matmul_weights + attention + 2.0 * tokens * d * config["vocab"]


def activations(config: Config, batch: int, seq: int) -> Activations:
    """Per layer: both LayerNorms' inputs and outputs, q/k/v, scores and probabilities, the
    merged attention output, the MLP's pre- and post-activation; plus the final LayerNorm's
    input and output and the logits."""
    d, tokens = config["d_model"], batch * seq
    scores = batch * config["heads"] * seq * seq
    attention = 2 * tokens * d + 3 * tokens * d + 2 * scores + tokens * d
    mlp = 2 * tokens * d + 2 * tokens * config["d_ff"]
    logits = tokens * config["vocab"]
    saved = config["layers"] * (attention + mlp) + 2 * tokens * d + logits
    # Without a backward each layer's temporaries die before the next layer runs.
    return Activations(
        saved=saved,
        peak_live=max(attention, mlp) + tokens * d + logits,
        scores=config["layers"] * 2 * scores,
        logits=logits,
    )


def _config(**overrides: Any) -> dict[str, Any]:
    """GPT-2's defaults, changed by ``overrides``."""
    base = {
        "vocab": 50257,
        "positions": 1024,
        "d_model": 768,
        "layers": 12,
        "heads": 12,
        "d_ff": 3072,
        "ln_eps": 1e-5,
        "qkv_bias": True,
        "fused_qkv": True,
        "scale_attention": True,
        "window": None,
        "layer_types": ("global",) * 12,
    }
    return base | overrides


_TINY = {"vocab": 97, "positions": 32, "d_model": 16, "heads": 2, "d_ff": 32}
_NEO = {"qkv_bias": False, "fused_qkv": False, "scale_attention": False}

GPT2_SMALL = ModelSpec(
    name="gpt2-small",
    description="GPT-2 small (124M): 12 layers, d 768, fused qkv, tied LM head",
    family="gpt",
    inputs="tokens",
    configs={
        "full": _config(),
        "tiny": _config(**_TINY, layers=2, layer_types=("global",) * 2),
    },
    layout=layout,
    forward=forward,
    forward_flops=forward_flops,
    activations=activations,
)

GPT_NEO_1_3B = ModelSpec(
    name="gpt-neo-1.3b",
    description="GPT-Neo 1.3B: 24 layers alternating global and local (window 256) attention",
    family="gpt",
    inputs="tokens",
    configs={
        "full": _config(
            **_NEO,
            positions=2048,
            d_model=2048,
            layers=24,
            heads=16,
            d_ff=8192,
            window=256,
            layer_types=("global", "local") * 12,
        ),
        # The window is shorter than the tests' sequences, so local attention masks something.
        "tiny": _config(**_TINY, **_NEO, layers=4, window=4, layer_types=("global", "local") * 2),
    },
    layout=layout,
    forward=forward,
    forward_flops=forward_flops,
    activations=activations,
)

SPECS = (GPT2_SMALL, GPT_NEO_1_3B)
