"""torch modules for the encoder family (BERT-base, ViT-B/16); see encoder.py for the function.

Module paths mirror the canonical names (``layer.0.attn.query`` is an ``nn.Linear``), so the
canonical layout follows from each parameter's module type: a Linear or Conv2d ``weight`` is the
transposed ``kernel``, a LayerNorm ``weight`` is ``scale``, an Embedding ``weight`` is
``embedding``, and a bare parameter ``x`` is ``x.embedding``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from stackwars.workloads.models.encoder import BERT_BASE, VIT_B16, check_seq, patch_count
from stackwars.workloads.models.loss_torch import cross_entropy
from stackwars.workloads.models.spec import Config, ModelSpec


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value, self.out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: Tensor) -> Tensor:
        b, s, d = x.shape
        q, k, v = (
            proj(x).view(b, s, self.heads, d // self.heads).transpose(1, 2)
            for proj in (self.query, self.key, self.value)
        )
        out = F.scaled_dot_product_attention(q, k, v, scale=(d // self.heads) ** -0.5)
        return self.out(out.transpose(1, 2).reshape(b, s, d))


class Mlp(nn.Module):
    def __init__(self, d: int, d_ff: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)
        self.gelu = nn.GELU(approximate="none")

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        d, eps = config["d_model"], config["ln_eps"]
        self.pre_ln = config["pre_ln"]
        self.attn, self.attn_ln = Attention(d, config["heads"]), nn.LayerNorm(d, eps=eps)
        self.mlp, self.mlp_ln = Mlp(d, config["d_ff"]), nn.LayerNorm(d, eps=eps)

    def forward(self, x: Tensor) -> Tensor:
        if self.pre_ln:
            x = x + self.attn(self.attn_ln(x))
            return x + self.mlp(self.mlp_ln(x))
        x = self.attn_ln(x + self.attn(x))
        return self.mlp_ln(x + self.mlp(x))


class Encoder(nn.Module):
    """What the family's modules share: spec, config, the stack of blocks, the loss."""

    def __init__(self, spec: ModelSpec, config: Config) -> None:
        super().__init__()
        self.spec, self.config = spec, config
        self.layer = nn.ModuleList(Block(config) for _ in range(config["layers"]))

    def blocks(self, x: Tensor) -> Tensor:
        for block in self.layer:
            x = block(x)
        return x

    def train_logits(self, inputs: Tensor) -> Tensor:
        return self(inputs)

    def loss(self, inputs: Tensor, labels: Tensor) -> Tensor:
        return cross_entropy(self.train_logits(inputs), labels)


class BertEmbeddings(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        d = config["d_model"]
        self.word = nn.Embedding(config["vocab"], d)
        self.position = nn.Embedding(config["positions"], d)
        self.token_type = nn.Embedding(config["type_vocab"], d)
        self.ln = nn.LayerNorm(d, eps=config["ln_eps"])

    def forward(self, tokens: Tensor) -> Tensor:
        s = tokens.shape[1]
        return self.ln(self.word(tokens) + self.position.weight[:s] + self.token_type.weight[0])


class Bert(Encoder):
    def __init__(self, config: Config) -> None:
        super().__init__(BERT_BASE, config)
        self.embeddings = BertEmbeddings(config)
        self.pooler = nn.Linear(config["d_model"], config["d_model"])

    def sequence(self, tokens: Tensor) -> Tensor:
        check_seq(self.config, tokens.shape[1])
        return self.blocks(self.embeddings(tokens))

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        seq = self.sequence(tokens)
        return seq, torch.tanh(self.pooler(seq[:, 0]))

    def train_logits(self, inputs: Tensor) -> Tensor:
        seq, pooled = self(inputs)
        rows = torch.cat([seq, pooled[:, None]], dim=1)
        return F.linear(rows, self.embeddings.word.weight)

    def loss(self, inputs: Tensor, labels: Tensor) -> Tensor:
        return cross_entropy(self.train_logits(inputs), torch.cat([labels, labels[:, :1]], 1))


class ViT(Encoder):
    """Takes NCHW images."""

    def __init__(self, config: Config) -> None:
        super().__init__(VIT_B16, config)
        d, patch = config["d_model"], config["patch"]
        self.patch = nn.Conv2d(config["channels"], d, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.position = nn.Parameter(torch.zeros(1, patch_count(config) + 1, d))
        self.ln = nn.LayerNorm(d, eps=config["ln_eps"])
        self.head = nn.Linear(d, config["classes"])

    def forward(self, images: Tensor) -> Tensor:
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.position
        x = self.blocks(x)
        # Normalising only the class token: the norm acts per token.
        return self.head(self.ln(x[:, 0]))


MODELS: dict[str, Callable[[Config], Encoder]] = {"bert-base": Bert, "vit-b16": ViT}


def build(name: str, config: Config) -> Encoder:
    return MODELS[name](config)


def _identity(t: Tensor) -> Tensor:
    return t


def _linear_kernel(t: Tensor) -> Tensor:
    return t.T


def _conv_kernel(t: Tensor) -> Tensor:
    return t.permute(2, 3, 1, 0)  # OIHW -> HWIO


_LEAVES: dict[type[nn.Module], dict[str, tuple[str, Callable[[Tensor], Tensor]]]] = {
    nn.Linear: {"weight": ("kernel", _linear_kernel), "bias": ("bias", _identity)},
    nn.Conv2d: {"weight": ("kernel", _conv_kernel), "bias": ("bias", _identity)},
    nn.LayerNorm: {"weight": ("scale", _identity), "bias": ("bias", _identity)},
    nn.Embedding: {"weight": ("embedding", _identity)},
}


def canonical_map(module: Encoder) -> dict[str, tuple[nn.Parameter, Callable[[Tensor], Tensor]]]:
    """{canonical name: (parameter, map from the parameter's layout to the canonical one)}, in
    canonical order; the map applies as well to the parameter's gradient."""
    found: dict[str, tuple[nn.Parameter, Callable[[Tensor], Tensor]]] = {}
    for path, sub in module.named_modules():
        leaves = _LEAVES.get(type(sub))
        for leaf, param in sub.named_parameters(recurse=False):
            if leaves is None:
                found[f"{path}.{leaf}.embedding".lstrip(".")] = (param, _identity)
            else:
                name, view = leaves[leaf]
                found[f"{path}.{name}"] = (param, view)
    layout = module.spec.layout(module.config)
    if found.keys() != layout.keys():
        raise ValueError(f"module parameters {sorted(found)} are not the layout {sorted(layout)}")
    return {name: found[name] for name in layout}


def canonical_params(module: Encoder) -> dict[str, Tensor]:
    return {name: view(param) for name, (param, view) in canonical_map(module).items()}


def load_canonical(module: Encoder, weights: dict[str, Any]) -> None:
    with torch.no_grad():
        for name, target in canonical_params(module).items():
            target.copy_(torch.as_tensor(weights[name]))
