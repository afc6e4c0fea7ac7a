"""ResNet-50 in plain JAX over the canonical dicts (see resnet.py for the function)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from stackwars.workloads.models import resnet
from stackwars.workloads.models.spec import Config

Arrays = Mapping[str, Any]
DIMENSIONS = ("NHWC", "HWIO", "NHWC")


def conv2d(x: jax.Array, kernel: jax.Array, stride: int, pad: int) -> jax.Array:
    # Explicit symmetric padding: "SAME" pads stride-2 convolutions on one side only.
    return lax.conv_general_dilated(
        x, kernel, (stride, stride), ((pad, pad), (pad, pad)), dimension_numbers=DIMENSIONS
    )


@dataclass
class Weights:
    """The weights one forward reads, and the running statistics it moves in training."""

    params: Arrays
    buffers: Arrays
    train: bool
    updated: dict[str, Any] = field(default_factory=dict)

    def batch_norm(self, x: jax.Array, name: str) -> jax.Array:
        """Inference: running statistics. Training: batch statistics (biased variance), and
        the moved running statistics go into ``updated``. Statistics in float32 at least, as
        Keras and torch's low-precision kernels keep them."""
        compute = jnp.promote_types(x.dtype, jnp.float32)
        x32 = x.astype(compute)
        stored_mean, stored_var = self.buffers[f"{name}.mean"], self.buffers[f"{name}.var"]
        mean, var = stored_mean.astype(compute), stored_var.astype(compute)
        if self.train:
            batch_mean = jnp.mean(x32, axis=(0, 1, 2))
            batch_var = jnp.mean(jnp.square(x32 - batch_mean), axis=(0, 1, 2))
            n = x.size // x.shape[-1]
            momentum = resnet.BN_MOMENTUM
            new_mean = (1 - momentum) * mean + momentum * batch_mean
            new_var = (1 - momentum) * var + momentum * batch_var * (n / (n - 1))
            self.updated[f"{name}.mean"] = lax.stop_gradient(new_mean).astype(stored_mean.dtype)
            self.updated[f"{name}.var"] = lax.stop_gradient(new_var).astype(stored_var.dtype)
            mean, var = batch_mean, batch_var
        scale = self.params[f"{name}.scale"].astype(compute) * lax.rsqrt(var + resnet.BN_EPS)
        out = (x32 - mean) * scale + self.params[f"{name}.bias"].astype(compute)
        return out.astype(x.dtype)

    def conv_bn(self, x: jax.Array, conv: resnet.Conv) -> jax.Array:
        y = conv2d(x, self.params[f"{conv.conv}.kernel"], conv.stride, conv.pad)
        return self.batch_norm(y, conv.bn)


def max_pool(x: jax.Array) -> jax.Array:
    window = (1, resnet.POOL_KERNEL, resnet.POOL_KERNEL, 1)
    strides = (1, resnet.POOL_STRIDE, resnet.POOL_STRIDE, 1)
    pad = ((0, 0), (resnet.POOL_PAD, resnet.POOL_PAD), (resnet.POOL_PAD, resnet.POOL_PAD), (0, 0))
    # reduce_window pads with the initial value: -inf, as torch's max pool.
    return lax.reduce_window(x, -jnp.inf, lax.max, window, strides, pad)


# The contract's signatures (spec.py) take six positional arguments.
def forward(  # noqa: PLR0917
    name: str, config: Config, params: Arrays, buffers: Arrays, inputs: Any, train: bool
) -> tuple[jax.Array, dict[str, Any]]:
    """Logits ``[batch, classes]`` for NHWC images, and the buffers after this step (moved
    running statistics in training, the given ones otherwise)."""
    weights = Weights(params, buffers, train)
    x = jnp.asarray(inputs).astype(params["fc.kernel"].dtype)
    x = max_pool(jax.nn.relu(weights.conv_bn(x, resnet.stem(config))))
    for block in resnet.blocks(config):
        y = x
        for index, conv in enumerate(block.convs):
            y = weights.conv_bn(y, conv)
            if index < len(block.convs) - 1:
                y = jax.nn.relu(y)
        if block.downsample is not None:
            x = weights.conv_bn(x, block.downsample)
        x = jax.nn.relu(x + y)
    logits = jnp.mean(x, axis=(1, 2)) @ params["fc.kernel"] + params["fc.bias"]
    return logits, {**buffers, **weights.updated}


def loss(  # noqa: PLR0917
    name: str, config: Config, params: Arrays, buffers: Arrays, inputs: Any, labels: Any
) -> tuple[jax.Array, dict[str, Any]]:
    """Mean cross-entropy in float32 (training mode), and the moved running statistics."""
    logits, new_buffers = forward(name, config, params, buffers, inputs, train=True)
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    picked = jnp.take_along_axis(log_probs, jnp.asarray(labels)[:, None], axis=-1)
    return -jnp.mean(picked), new_buffers
