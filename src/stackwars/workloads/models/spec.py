"""The contract every end-to-end model follows (one ModelSpec, one module per framework).

A model is described once, framework-free, by a :class:`ModelSpec` in
``stackwars/workloads/models/<family>.py``: its configs (``full`` as published, ``tiny`` for
tests), its **canonical weight layout** and a float64-capable NumPy forward. Every framework
loads the same canonical weights, so every stack computes the same function of the same numbers.

Canonical layout (the only one NumPy arrays ever have):

* names are dot-separated paths (``h.0.attn.qkv.kernel``); ``layout(config)`` lists the
  trainable parameters in a fixed order, ``buffers(config)`` the non-trainable state
  (BatchNorm running statistics), which the parameter count excludes;
* dense kernels are ``[in, out]`` (``y = x @ kernel + bias``), convolution kernels
  ``[kh, kw, in, out]`` (HWIO), embeddings ``[vocab, width]``, norm gains ``scale`` and
  shifts ``bias`` are vectors;
* token inputs are int32 ``[batch, seq]``; image inputs are ``[batch, height, width, 3]``
  (NHWC) in the cell's dtype; labels are int32 (``[batch, seq]`` for language models,
  ``[batch]`` for classifiers).

Per framework, ``<family>_<framework>.py`` (imported only inside a worker; it may import its
framework at the top) provides, for every model name of the family:

* torch: ``build(name, config) -> torch.nn.Module`` (float32 parameters; callers may build it
  under ``torch.device("meta")``); ``module(inputs)`` returns the forward output with the same
  structure as the NumPy forward (images arrive NCHW: the caller converts outside timing);
  ``module.loss(inputs, labels)`` the training loss; ``load_canonical(module, weights)``
  copies canonical tensors (params and buffers) into it; ``canonical_params(module)`` returns
  its trainable parameters in canonical layout and order (views are fine).
* jax (plain JAX over the canonical dicts): ``forward(name, config, params, buffers, inputs,
  train) -> (output, new_buffers)`` and ``loss(name, config, params, buffers, inputs, labels)
  -> (scalar, new_buffers)``; ``params``/``buffers`` are dicts keyed by canonical names.
* tensorflow (Keras 3 layers on the TensorFlow backend): ``build(name, config, dtype) ->
  keras.Model`` already built; ``model(inputs, training=False)`` the output;
  ``loss(model, inputs, labels)`` the training loss (training=True);
  ``load_canonical(model, weights)`` assigns canonical arrays (params and buffers);
  ``canonical_params(model) -> dict`` as for torch.

The NumPy forward and the plain-JAX one look alike (jax.numpy follows NumPy) but share no
code on purpose: a function both used would make the reference check itself.

The training objective (``loss``) is defined by the family module's docstring and is the same on
every framework: mean cross-entropy, computed in float32 at least.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stackwars.workloads._inputs import BIAS_STD

Config = Mapping[str, Any]
Shape = tuple[int, ...]
Layout = dict[str, Shape]

EMBEDDING_STD = 0.02


def count(layout: Layout) -> int:
    """Number of elements in a layout: the parameter count, when given ``spec.layout``."""
    return sum(math.prod(shape) for shape in layout.values())


def standard_init(name: str, shape: Shape, rng: Any) -> Any:
    """float32 values for a canonical weight, chosen by the last component of its name:
    ``kernel`` N(0, 1/fan_in) (fan-in: every axis but the last), ``embedding`` N(0, 0.02²),
    ``scale`` 1 + N(0, 0.1²), ``bias`` N(0, 0.1²), ``mean`` N(0, 0.1²), ``var``
    1 + |N(0, 0.1²)|. Anything else is an error, so that a new kind of weight gets a rule.

    Drawn in float32 and scaled in place, so that no float64 array of a weight's size is made
    on the way (GPT-Neo's embedding is 0.8 GB in float64), which also draws them faster."""
    import numpy as np

    leaf = name.rsplit(".", 1)[-1]
    if leaf not in _INIT_STD:
        raise ValueError(
            f"no initialisation rule for weight {name!r}; name its last part after "
            f"one of {', '.join(_INIT_STD)}"
        )
    values = rng.standard_normal(shape, dtype=np.float32)
    std = _INIT_STD[leaf]
    values *= 1.0 / math.sqrt(math.prod(shape[:-1])) if std is None else std
    if leaf == "var":
        np.abs(values, out=values)
    if leaf in ("scale", "var"):
        values += 1.0
    return values


# Each kind of weight's standard deviation (None: 1/sqrt(fan-in)); scale and var add 1.
_INIT_STD: dict[str, float | None] = {
    "kernel": None,
    "embedding": EMBEDDING_STD,
    "scale": BIAS_STD,
    "bias": BIAS_STD,
    "mean": BIAS_STD,
    "var": BIAS_STD,
}


@dataclass(frozen=True)
class Activations:
    """Element counts (per the cell's dtype) that decide a forward's or a train step's memory:
    ``saved`` stay alive from the forward until the backward needs them; ``peak_live`` is the
    most a forward holds at once when nothing is kept for a backward. Two parts are named
    because frameworks differ on them: ``scores``, the attention scores and probabilities
    counted in ``saved`` (a fused attention keeps neither), and ``logits``, one logits-sized
    tensor (the loss's backward holds several at once)."""

    saved: int
    peak_live: int
    scores: int = 0
    logits: int = 0


@dataclass(frozen=True)
class ModelSpec:
    """One end-to-end model; see the module docstring for the contract."""

    name: str
    description: str
    family: str  # framework modules are f"{family}_{framework}"
    inputs: str  # "tokens" or "images"
    configs: Mapping[str, Config]  # "full" (as published) and "tiny"
    layout: Callable[[Config], Layout]
    # NumPy forward: (config, params, buffers, inputs) -> output, in the dtype of the params
    # (float64 params give the reference). Same output structure as every framework's.
    forward: Callable[[Config, Mapping[str, Any], Mapping[str, Any], Any], Any]
    # Forward FLOPs for (config, batch, seq); a train step counts 3× (forward + backward).
    forward_flops: Callable[[Config, int, int], float]
    activations: Callable[[Config, int, int], Activations]
    buffers: Callable[[Config], Layout] = field(default=lambda config: {})
    # Forward FLOPs the training loss adds beyond ``forward``'s output (e.g. BERT's tied
    # vocabulary projection), for (config, batch, seq).
    loss_flops: Callable[[Config, int, int], float] = field(default=lambda c, b, s: 0.0)
    init: Callable[[str, Shape, Any], Any] = standard_init

    def parameter_count(self, scale: str = "full") -> int:
        return count(self.layout(self.configs[scale]))
