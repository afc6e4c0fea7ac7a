"""ResNet-50 in torch.nn, torchvision's module structure (see resnet.py for the function)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from stackwars.workloads.models import resnet
from stackwars.workloads.models.spec import Config

SPECS = {spec.name: spec for spec in resnet.SPECS}


class BatchNorm(nn.BatchNorm2d):
    """BatchNorm2d whose only buffers are the running mean and variance: the batch counter
    matters only without a momentum, and the canonical layout has no place for it."""

    def __init__(self, channels: int) -> None:
        super().__init__(channels, eps=resnet.BN_EPS, momentum=resnet.BN_MOMENTUM)
        self.register_buffer("num_batches_tracked", None)


class ConvBN(nn.Module):
    """A bias-free convolution and its BatchNorm (the stem and the shortcuts)."""

    def __init__(self, spec: resnet.Conv) -> None:
        super().__init__()
        self.conv = conv_layer(spec)
        self.bn = BatchNorm(spec.channels_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x))


def conv_layer(spec: resnet.Conv) -> nn.Conv2d:
    return nn.Conv2d(
        spec.channels_in,
        spec.channels_out,
        spec.kernel,
        stride=spec.stride,
        padding=spec.pad,
        bias=False,
    )


class Bottleneck(nn.Module):
    def __init__(self, spec: resnet.Block) -> None:
        super().__init__()
        first, middle, last = spec.convs
        self.conv1, self.bn1 = conv_layer(first), BatchNorm(first.channels_out)
        self.conv2, self.bn2 = conv_layer(middle), BatchNorm(middle.channels_out)
        self.conv3, self.bn3 = conv_layer(last), BatchNorm(last.channels_out)
        self.downsample = None if spec.downsample is None else ConvBN(spec.downsample)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(y + shortcut)


class ResNet(nn.Module):
    """Logits ``[batch, classes]`` for NCHW images."""

    def __init__(self, name: str, config: Config) -> None:
        super().__init__()
        self.spec_name, self.config = name, config
        self.stem = ConvBN(resnet.stem(config))
        stages: dict[str, list[nn.Module]] = {}
        for block in resnet.blocks(config):
            stages.setdefault(block.name.split(".")[0], []).append(Bottleneck(block))
        for stage, modules in stages.items():
            self.add_module(stage, nn.Sequential(*modules))
        self.stages = list(stages)
        self.fc = nn.Linear(resnet.features(config), config["classes"])

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(images))
        x = F.max_pool2d(x, resnet.POOL_KERNEL, resnet.POOL_STRIDE, resnet.POOL_PAD)
        for stage in self.stages:
            x = getattr(self, stage)(x)
        return self.fc(torch.mean(x, dim=(2, 3)))

    def loss(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self(images).float(), labels.long())


def build(name: str, config: Config) -> ResNet:
    return ResNet(name, config)


def _canonical_tensors(module: nn.Module) -> dict[str, tuple[torch.Tensor, bool]]:
    """{canonical name: (torch tensor, whether its layout is transposed)} for params and
    buffers; conv and dense kernels are the transposed ones."""
    tensors: dict[str, tuple[torch.Tensor, bool]] = {}
    for path, child in module.named_modules():
        if isinstance(child, nn.Conv2d | nn.Linear):
            tensors[f"{path}.kernel"] = (child.weight, True)
            if child.bias is not None:
                tensors[f"{path}.bias"] = (child.bias, False)
        elif isinstance(child, nn.BatchNorm2d):
            tensors[f"{path}.scale"] = (child.weight, False)
            tensors[f"{path}.bias"] = (child.bias, False)
            mean, var = child.running_mean, child.running_var
            if mean is None or var is None:
                raise ValueError(f"{path} keeps no running statistics")
            tensors[f"{path}.mean"] = (mean, False)
            tensors[f"{path}.var"] = (var, False)
    return tensors


def _to_canonical(tensor: torch.Tensor, transposed: bool) -> torch.Tensor:
    if not transposed:
        return tensor
    # OIHW -> HWIO; [out, in] -> [in, out].
    return tensor.permute(2, 3, 1, 0) if tensor.dim() == 4 else tensor.t()


def load_canonical(module: ResNet, weights: Mapping[str, Any]) -> None:
    tensors = _canonical_tensors(module)
    missing = set(tensors) ^ set(weights)
    if missing:
        raise KeyError(f"canonical weights and module differ on {sorted(missing)}")
    with torch.no_grad():
        for name, (tensor, transposed) in tensors.items():
            source = weights[name]
            if not isinstance(source, torch.Tensor):
                source = torch.tensor(np.asarray(source))
            _to_canonical(tensor, transposed).copy_(source)


def canonical_params(module: ResNet) -> dict[str, torch.Tensor]:
    tensors = _canonical_tensors(module)
    order = SPECS[module.spec_name].layout(module.config)
    return {name: _to_canonical(*tensors[name]) for name in order}
