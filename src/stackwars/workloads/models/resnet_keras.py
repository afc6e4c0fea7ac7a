"""ResNet-50 in backend-agnostic Keras 3 layers (see resnet.py for the function)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import keras
from keras import layers, ops

from stackwars.workloads.models import resnet
from stackwars.workloads.models.spec import Config, count

SPECS = {spec.name: spec for spec in resnet.SPECS}
# Keras moves running statistics by (1 - momentum); torch by momentum.
KERAS_BN_MOMENTUM = 1 - resnet.BN_MOMENTUM


class MaxPool(layers.Layer):
    """torch's max pool: symmetric padding with -inf, then a valid 3×3/2 window (Keras'
    "same" pads stride-2 windows on one side only)."""

    def __init__(self, dtype: str) -> None:
        super().__init__(dtype=dtype)
        self.pool = layers.MaxPooling2D(
            resnet.POOL_KERNEL, resnet.POOL_STRIDE, padding="valid", dtype=dtype
        )

    def call(self, x: Any) -> Any:
        pad = resnet.POOL_PAD
        padded = ops.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)), constant_values=-float("inf"))
        return self.pool(padded)


class ConvBN(layers.Layer):
    """Symmetric zero padding, a bias-free convolution and its BatchNorm."""

    def __init__(self, spec: resnet.Conv, dtype: str) -> None:
        super().__init__(dtype=dtype)
        self.conv_name, self.bn_name = spec.conv, spec.bn
        self.pad = layers.ZeroPadding2D(spec.pad, dtype=dtype) if spec.pad else None
        self.conv = layers.Conv2D(
            spec.channels_out,
            spec.kernel,
            strides=spec.stride,
            padding="valid",
            use_bias=False,
            dtype=dtype,
        )
        self.bn = layers.BatchNormalization(
            momentum=KERAS_BN_MOMENTUM, epsilon=resnet.BN_EPS, dtype=dtype
        )

    def call(self, x: Any, training: bool = False) -> Any:
        if self.pad is not None:
            x = self.pad(x)
        return self.bn(self.conv(x), training=training)


class Bottleneck(layers.Layer):
    def __init__(self, spec: resnet.Block, dtype: str) -> None:
        super().__init__(dtype=dtype)
        self.convs = [ConvBN(conv, dtype) for conv in spec.convs]
        self.downsample = None if spec.downsample is None else ConvBN(spec.downsample, dtype)

    def call(self, x: Any, training: bool = False) -> Any:
        y = x
        for index, conv in enumerate(self.convs):
            y = conv(y, training=training)
            if index < len(self.convs) - 1:
                y = ops.relu(y)
        shortcut = x if self.downsample is None else self.downsample(x, training=training)
        return ops.relu(y + shortcut)


class ResNet(keras.Model):
    """Logits ``[batch, classes]`` for NHWC images."""

    def __init__(self, name: str, config: Config, dtype: str) -> None:
        super().__init__(dtype=dtype)
        self.spec_name, self.config = name, config
        self.stem = ConvBN(resnet.stem(config), dtype)
        self.pool = MaxPool(dtype)
        self.bottlenecks = [Bottleneck(block, dtype) for block in resnet.blocks(config)]
        self.average = layers.GlobalAveragePooling2D(dtype=dtype)
        self.fc = layers.Dense(config["classes"], dtype=dtype)

    def call(self, inputs: Any, training: bool = False) -> Any:
        x = self.pool(ops.relu(self.stem(inputs, training=training)))
        for block in self.bottlenecks:
            x = block(x, training=training)
        return self.fc(self.average(x))


def build(name: str, config: Config, dtype: str) -> ResNet:
    """A built model: calling it on a symbolic input creates the variables without computing."""
    model = ResNet(name, config, dtype)
    model(keras.Input((config["image"], config["image"], resnet.IMAGE_CHANNELS), dtype=dtype))
    spec = SPECS[name]
    expected = count(spec.layout(config)) + count(spec.buffers(config))
    if sum(math.prod(variable.shape) for variable in model.variables) != expected:
        raise RuntimeError(f"{name}: building the Keras model did not create every variable")
    return model


def _canonical_variables(model: ResNet) -> dict[str, Any]:
    """{canonical name: Keras variable} for params and buffers."""
    variables: dict[str, Any] = {}
    conv_bns = [model.stem]
    for block in model.bottlenecks:
        conv_bns += [*block.convs, *([block.downsample] if block.downsample else [])]
    for layer in conv_bns:
        variables[f"{layer.conv_name}.kernel"] = layer.conv.kernel
        bn = layer.bn
        variables[f"{layer.bn_name}.scale"] = bn.gamma
        variables[f"{layer.bn_name}.bias"] = bn.beta
        variables[f"{layer.bn_name}.mean"] = bn.moving_mean
        variables[f"{layer.bn_name}.var"] = bn.moving_variance
    variables["fc.kernel"] = model.fc.kernel
    variables["fc.bias"] = model.fc.bias
    return variables


def load_canonical(model: ResNet, weights: Mapping[str, Any]) -> None:
    variables = _canonical_variables(model)
    missing = set(variables) ^ set(weights)
    if missing:
        raise KeyError(f"canonical weights and model differ on {sorted(missing)}")
    for name, variable in variables.items():
        variable.assign(ops.cast(weights[name], variable.dtype))


def canonical_params(model: ResNet) -> dict[str, Any]:
    variables = _canonical_variables(model)
    return {name: variables[name] for name in SPECS[model.spec_name].layout(model.config)}


def loss(model: ResNet, inputs: Any, labels: Any) -> Any:
    """Mean cross-entropy in float32 (training mode)."""
    logits = ops.cast(model(inputs, training=True), "float32")
    losses = ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    return ops.mean(losses)
