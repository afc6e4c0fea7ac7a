"""ResNet-50 as torchvision builds it (v1.5): the stride-2 of a downsampling bottleneck sits
on its 3×3 convolution, the shortcut is a 1×1 convolution with the block's stride plus a
BatchNorm, convolutions have no bias.

Stem: 7×7/2 convolution (padding 3), BatchNorm, ReLU, 3×3/2 max pool (padding 1, padded with
-inf). Four stages of bottlenecks ([3, 4, 6, 3] blocks, widths 64/128/256/512, expansion 4),
global average pool, a dense classifier with bias. Every padding is symmetric, as in torch.

BatchNorm (epsilon 1e-5) uses the running statistics in inference; in training it normalises
with the batch statistics (biased variance) and moves the running statistics by 0.1 towards
the batch's (unbiased variance, as torch). The training objective is the mean cross-entropy
of the logits ``[batch, classes]`` against int32 labels ``[batch]``, computed in float32 at
least.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from stackwars.workloads.models.spec import Activations, Config, Layout, ModelSpec

BN_EPS = 1e-5
# torch's convention: new = (1 - momentum) · running + momentum · batch statistic.
BN_MOMENTUM = 0.1
EXPANSION = 4
STEM_KERNEL, STEM_STRIDE, STEM_PAD = 7, 2, 3
POOL_KERNEL, POOL_STRIDE, POOL_PAD = 3, 2, 1
IMAGE_CHANNELS = 3


@dataclass(frozen=True)
class Conv:
    """One convolution followed by its BatchNorm; ``prefix`` names both (``prefix.conv``,
    ``prefix.bn`` for the stem and shortcuts; ``prefix.convN``, ``prefix.bnN`` in blocks)."""

    conv: str
    bn: str
    kernel: int
    stride: int
    channels_in: int
    channels_out: int
    size_in: int  # spatial side of the input (square images)

    @property
    def pad(self) -> int:
        return self.kernel // 2

    @property
    def size_out(self) -> int:
        return (self.size_in + 2 * self.pad - self.kernel) // self.stride + 1


@dataclass(frozen=True)
class Block:
    """A bottleneck: ``convs`` in order (1×1, 3×3, 1×1) and the optional shortcut conv."""

    name: str
    convs: tuple[Conv, Conv, Conv]
    downsample: Conv | None


def pooled_size(size: int) -> int:
    return (size + 2 * POOL_PAD - POOL_KERNEL) // POOL_STRIDE + 1


def stem(config: Config) -> Conv:
    size = config["image"]
    return Conv(
        "stem.conv", "stem.bn", STEM_KERNEL, STEM_STRIDE, IMAGE_CHANNELS, config["width"], size
    )


def blocks(config: Config) -> Iterator[Block]:
    """The bottlenecks in execution order, with their channel counts and spatial sizes."""
    channels = config["width"]
    size = pooled_size(stem(config).size_out)
    for stage, count in enumerate(config["blocks"]):
        width = config["width"] * 2**stage
        out = width * EXPANSION
        for index in range(count):
            stride = 2 if stage > 0 and index == 0 else 1
            name = f"layer{stage + 1}.{index}"
            middle = Conv(f"{name}.conv2", f"{name}.bn2", 3, stride, width, width, size)
            convs = (
                Conv(f"{name}.conv1", f"{name}.bn1", 1, 1, channels, width, size),
                middle,
                Conv(f"{name}.conv3", f"{name}.bn3", 1, 1, width, out, middle.size_out),
            )
            shortcut = None
            if stride != 1 or channels != out:
                prefix = f"{name}.downsample"
                shortcut = Conv(f"{prefix}.conv", f"{prefix}.bn", 1, stride, channels, out, size)
            yield Block(name, convs, shortcut)
            channels, size = out, convs[2].size_out


def all_convs(config: Config) -> Iterator[Conv]:
    yield stem(config)
    for block in blocks(config):
        yield from block.convs
        if block.downsample is not None:
            yield block.downsample


def features(config: Config) -> int:
    return config["width"] * 2 ** (len(config["blocks"]) - 1) * EXPANSION


def layout(config: Config) -> Layout:
    """Trainable parameters in torchvision's registration order (a block's shortcut last)."""
    shapes: Layout = {}
    for conv in all_convs(config):
        shapes[f"{conv.conv}.kernel"] = (
            conv.kernel,
            conv.kernel,
            conv.channels_in,
            conv.channels_out,
        )
        shapes[f"{conv.bn}.scale"] = (conv.channels_out,)
        shapes[f"{conv.bn}.bias"] = (conv.channels_out,)
    shapes["fc.kernel"] = (features(config), config["classes"])
    shapes["fc.bias"] = (config["classes"],)
    return shapes


def buffers(config: Config) -> Layout:
    """BatchNorm running statistics, in the same order as the parameters."""
    shapes: Layout = {}
    for conv in all_convs(config):
        shapes[f"{conv.bn}.mean"] = (conv.channels_out,)
        shapes[f"{conv.bn}.var"] = (conv.channels_out,)
    return shapes


def forward_flops(config: Config, batch: int, seq: int) -> float:
    """2 × multiply-accumulates of the convolutions and the classifier (seq is unused)."""
    macs = sum(
        conv.size_out**2 * conv.kernel**2 * conv.channels_in * conv.channels_out
        for conv in all_convs(config)
    )
    macs += features(config) * config["classes"]
    return 2.0 * batch * macs


def activations(config: Config, batch: int, seq: int) -> Activations:
    """``saved``: every convolution output and every BatchNorm output. ``peak_live``: the
    largest input + output of one convolution, plus the block input kept for the residual."""
    saved = sum(2 * conv.size_out**2 * conv.channels_out for conv in all_convs(config))
    first = stem(config)
    peak = first.size_in**2 * first.channels_in + first.size_out**2 * first.channels_out
    for block in blocks(config):
        residual = block.convs[0].size_in ** 2 * block.convs[0].channels_in
        for conv in (*block.convs, block.downsample):
            if conv is not None:
                live = conv.size_in**2 * conv.channels_in + conv.size_out**2 * conv.channels_out
                peak = max(peak, live + residual)
    return Activations(saved=batch * saved, peak_live=batch * peak)


def conv2d(x: Any, kernel: Any, stride: int, pad: int) -> Any:
    """NHWC convolution with an HWIO kernel and symmetric zero padding, as im2col + matmul."""
    import numpy as np

    size, _, channels_in, channels_out = kernel.shape
    if pad:
        x = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    if size == 1:
        columns = x[:, ::stride, ::stride, :]
    else:
        windows = np.lib.stride_tricks.sliding_window_view(x, (size, size), axis=(1, 2))
        # [batch, out, out, in, kh, kw] -> [batch, out, out, kh, kw, in] to match HWIO.
        columns = windows[:, ::stride, ::stride].transpose(0, 1, 2, 4, 5, 3)
    batch, height, width = columns.shape[:3]
    flat = columns.reshape(batch * height * width, size * size * channels_in)
    out = flat @ kernel.reshape(size * size * channels_in, channels_out)
    return out.reshape(batch, height, width, channels_out)


def batch_norm(x: Any, params: Mapping[str, Any], buffers: Mapping[str, Any], name: str) -> Any:
    import numpy as np

    inverse = params[f"{name}.scale"] / np.sqrt(buffers[f"{name}.var"] + BN_EPS)
    return (x - buffers[f"{name}.mean"]) * inverse + params[f"{name}.bias"]


def max_pool(x: Any) -> Any:
    import numpy as np

    pad = ((0, 0), (POOL_PAD, POOL_PAD), (POOL_PAD, POOL_PAD), (0, 0))
    padded = np.pad(x, pad, constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(
        padded, (POOL_KERNEL, POOL_KERNEL), axis=(1, 2)
    )
    return windows[:, ::POOL_STRIDE, ::POOL_STRIDE].max(axis=(-2, -1))


def conv_bn(x: Any, conv: Conv, params: Mapping[str, Any], buffers: Mapping[str, Any]) -> Any:
    y = conv2d(x, params[f"{conv.conv}.kernel"], conv.stride, conv.pad)
    return batch_norm(y, params, buffers, conv.bn)


def forward(
    config: Config, params: Mapping[str, Any], buffers: Mapping[str, Any], inputs: Any
) -> Any:
    """Inference logits ``[batch, classes]`` for NHWC images, in the dtype of the params."""
    import numpy as np

    x = np.asarray(inputs).astype(params["fc.kernel"].dtype)
    x = max_pool(np.maximum(conv_bn(x, stem(config), params, buffers), 0))
    for block in blocks(config):
        y = x
        for index, conv in enumerate(block.convs):
            y = conv_bn(y, conv, params, buffers)
            if index < len(block.convs) - 1:
                y = np.maximum(y, 0)
        if block.downsample is not None:
            x = conv_bn(x, block.downsample, params, buffers)
        x = np.maximum(x + y, 0)
    pooled = x.mean(axis=(1, 2))
    return pooled @ params["fc.kernel"] + params["fc.bias"]


RESNET50 = ModelSpec(
    name="resnet50",
    description="ResNet-50 v1.5 (torchvision), ImageNet classifier, 224² images",
    family="resnet",
    inputs="images",
    configs={
        "full": {"blocks": (3, 4, 6, 3), "width": 64, "classes": 1000, "image": 224},
        # One stage with two blocks keeps an identity shortcut; every other first block
        # downsamples (stride 2 from the second stage on). 64² images leave 2×2 maps in the
        # last stage: training-mode BatchNorm over 1×1 maps is so ill-conditioned that float32
        # gradients drift ~1e-3 (relative to their RMS) from float64 on every framework.
        "tiny": {"blocks": (2, 1, 1, 1), "width": 4, "classes": 10, "image": 64},
    },
    layout=layout,
    forward=forward,
    forward_flops=forward_flops,
    activations=activations,
    buffers=buffers,
)

SPECS = (RESNET50,)
