"""LLaMA on PyTorch: ``torch.nn`` modules over the canonical layout (see llama.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from stackwars.workloads.models import llama
from stackwars.workloads.models.loss_torch import at_least_float32, cross_entropy
from stackwars.workloads.models.spec import Config


class Attention(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        d, hd = config["d_model"], llama.head_dim(config)
        self.heads, self.kv_heads, self.head_dim = config["heads"], config["kv_heads"], hd
        self.q = nn.Linear(d, self.heads * hd, bias=False)
        self.k = nn.Linear(d, self.kv_heads * hd, bias=False)
        self.v = nn.Linear(d, self.kv_heads * hd, bias=False)
        self.o = nn.Linear(self.heads * hd, d, bias=False)

    def _split(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        return x.unflatten(-1, (heads, self.head_dim)).transpose(1, 2)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        q = rotate(self._split(self.q(x), self.heads), cos, sin)
        k = rotate(self._split(self.k(x), self.kv_heads), cos, sin)
        v = self._split(self.v(x), self.kv_heads)
        # enable_gqa repeats each key/value head over its consecutive query heads (repeat_kv).
        out = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, scale=1.0 / math.sqrt(self.head_dim), enable_gqa=True
        )
        return self.o(out.transpose(1, 2).flatten(2))


class MLP(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        d, ff = config["d_model"], config["d_ff"]
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        d, eps = config["d_model"], config["rms_eps"]
        self.attn_norm = nn.RMSNorm(d, eps=eps)
        self.attn = Attention(config)
        self.mlp_norm = nn.RMSNorm(d, eps=eps)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE with HF's rotate_half convention."""
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-second, first), dim=-1) * sin


class Llama(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        d = config["d_model"]
        # A plain tuple, not a buffer: the module's buffers are exactly the canonical ones (none).
        self.inv_freq = tuple(float(f) for f in llama.inverse_frequencies(config))
        self.embed = nn.Embedding(config["vocab"], d)
        self.layers = nn.ModuleList(Block(config) for _ in range(config["layers"]))
        self.norm = nn.RMSNorm(d, eps=config["rms_eps"])
        self.lm_head = nn.Linear(d, config["vocab"], bias=False)

    def _rope(self, seq: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        wide = at_least_float32(like.dtype)
        inv_freq = torch.tensor(self.inv_freq, dtype=wide, device=like.device)
        positions = torch.arange(seq, dtype=wide, device=like.device)
        angles = torch.outer(positions, inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos().to(like.dtype), angles.sin().to(like.dtype)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        cos, sin = self._rope(tokens.shape[1], x)
        for block in self.layers:
            x = block(x, cos, sin)
        return self.lm_head(self.norm(x))

    def loss(self, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return cross_entropy(self(tokens), labels)


def build(name: str, config: Config) -> Llama:
    if name != llama.LLAMA_3_1_8B.name:
        raise ValueError(f"unknown llama model {name!r}")
    return Llama(config)


def _canonical(module: Llama) -> dict[str, tuple[torch.Tensor, bool]]:
    """{canonical name: (parameter, stored transposed)}: Linear weights are [out, in]."""
    found: dict[str, tuple[torch.Tensor, bool]] = {}
    for path, sub in module.named_modules():
        if isinstance(sub, nn.Linear):
            found[f"{path}.kernel"] = (sub.weight, True)
        elif isinstance(sub, nn.RMSNorm) and sub.weight is not None:
            found[f"{path}.scale"] = (sub.weight, False)
        elif isinstance(sub, nn.Embedding):
            found[f"{path}.embedding"] = (sub.weight, False)
    return found


def canonical_params(module: Llama) -> dict[str, torch.Tensor]:
    found = _canonical(module)
    return {
        name: found[name][0].T if found[name][1] else found[name][0]
        for name in llama.layout(module.config)
    }


def load_canonical(module: Llama, weights: Mapping[str, Any]) -> None:
    found = _canonical(module)
    if set(found) != set(weights):
        raise ValueError(f"weights do not match the layout: {sorted(set(found) ^ set(weights))}")
    with torch.no_grad():
        for name, (param, transposed) in found.items():
            value = torch.as_tensor(weights[name])
            param.copy_(value.T if transposed else value)
