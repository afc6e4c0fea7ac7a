"""GPT-2 small and GPT-Neo 1.3B as torch.nn modules (see gpt.py for the function).

Submodules are named after the canonical layout (``h.0.attn.qkv`` is an ``nn.Linear``), so a
canonical name maps to its tensor by its path: ``kernel`` is the transpose of a Linear's
weight, ``embedding`` and ``scale`` are a module's weight, ``bias`` its bias.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from stackwars.workloads.models.gpt import (
    attention_scale,
    attention_window,
    layout,
    projections,
)
from stackwars.workloads.models.loss_torch import cross_entropy
from stackwars.workloads.models.spec import Config


def _mask(seq: int, window: int | None, device: torch.device) -> torch.Tensor:
    """Boolean [seq, seq]: True where query i may attend key j."""
    i = torch.arange(seq, device=device)[:, None]
    j = torch.arange(seq, device=device)[None, :]
    allowed = j <= i
    return allowed if window is None else allowed & (i - j < window)


class Attention(nn.Module):
    # Registered in __init__ by name: qkv when fused, else q, k and v.
    qkv: nn.Linear
    q: nn.Linear
    k: nn.Linear
    v: nn.Linear

    def __init__(self, config: Config, layer: int) -> None:
        super().__init__()
        d = config["d_model"]
        self.heads = config["heads"]
        self.scale = attention_scale(config)
        self.window = attention_window(config, layer)
        self.fused = config["fused_qkv"]
        width = 3 * d if self.fused else d
        for name in projections(config):
            self.add_module(name, nn.Linear(d, width, bias=config["qkv_bias"]))
        self.out = nn.Linear(d, d)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, s, d = t.shape
        return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused:
            q, k, v = self.qkv(x).chunk(3, dim=-1)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        mask = _mask(x.shape[1], self.window, x.device)
        out = F.scaled_dot_product_attention(
            self._heads(q), self._heads(k), self._heads(v), attn_mask=mask, scale=self.scale
        )
        return self.out(out.transpose(1, 2).flatten(2))


class MLP(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.fc = nn.Linear(config["d_model"], config["d_ff"])
        self.proj = nn.Linear(config["d_ff"], config["d_model"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, config: Config, layer: int) -> None:
        super().__init__()
        d, eps = config["d_model"], config["ln_eps"]
        self.ln_1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(config, layer)
        self.ln_2 = nn.LayerNorm(d, eps=eps)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        d = config["d_model"]
        self.wte = nn.Embedding(config["vocab"], d)
        self.wpe = nn.Embedding(config["positions"], d)
        self.h = nn.ModuleList(Block(config, i) for i in range(config["layers"]))
        self.ln_f = nn.LayerNorm(d, eps=config["ln_eps"])
        self.lm_head = nn.Linear(d, config["vocab"], bias=False)
        # Tied: one Parameter, so parameters() yields it once and the optimiser updates it once.
        self.lm_head.weight = self.wte.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))

    def loss(self, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return cross_entropy(self(tokens), labels)


def build(name: str, config: Config) -> GPT:
    """The decoder for ``config``; ``name`` does not matter, one class serves the family."""
    return GPT(config)


def _canonical_tensor(module: GPT, name: str) -> torch.Tensor:
    path, leaf = name.rsplit(".", 1)
    if leaf == "bias":
        return module.get_parameter(name)
    weight = module.get_parameter(f"{path}.weight")
    return weight.T if leaf == "kernel" else weight


def canonical_params(module: GPT) -> dict[str, torch.Tensor]:
    """Trainable parameters in canonical layout and order, as views of the module's own."""
    return {name: _canonical_tensor(module, name) for name in layout(module.config)}


def load_canonical(module: GPT, weights: Mapping[str, Any]) -> None:
    """Copy canonical arrays (any dtype; cast to the module's) into the module."""
    with torch.no_grad():
        for name, view in canonical_params(module).items():
            view.copy_(torch.as_tensor(weights[name]))
