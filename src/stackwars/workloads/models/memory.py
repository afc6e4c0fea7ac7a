"""Predicting a model cell's peak memory before any worker starts.

The prediction adds named terms, each an element count times its element size, so that an
``oom`` cell says what would not fit and why. Its assumptions are the ones the worker's code
makes true; what differs between frameworks is declared by each one's ``ModelMemory``
(``FrameworkInfo.model_memory``, see ``frameworks/base.py``), never by its name here:

* the host holds the canonical weights in float32 (float64 for float64 cells) for the whole
  cell: they seed every stack and the reference reads them;
* the device copy made by ``to_device``: a full copy when the model computes with it
  (``weights == "device copy"``: jax), none otherwise (numpy reads the host arrays; torch
  loads its module on the host and moves it; Keras variables are assigned from the host
  arrays);
* the model's own parameters in the cell's dtype: none when it reads the host arrays (numpy);
  the device copy itself when it computes with it, a cast copy when the cell's dtype is not
  the host's (jax); a full copy when the framework holds its own (torch's module, Keras's
  variables);
* training adds gradients and AdamW's two moments, all in the parameters' dtype; a functional
  train step (``functional_train_step``: jax) also returns new parameters and new moments (no
  buffer donation: the same arguments are reused by every timed call);
* activations: what the spec says a forward keeps for its backward and holds at once, less
  the attention's scores where the framework's attention is fused, and with the logits-sized
  tensors the loss's backward holds where the framework's count is measured (torch: 3, which
  outweighs the forward's peak once the logits dominate);
* inference's float64 NumPy reference converts one weight at a time and holds its own
  activations in float64.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import ModelMemory
from stackwars.workloads.base import DTYPE_BYTES
from stackwars.workloads.models.spec import Activations, Config, ModelSpec, count

GIB = 2**30
# What stays in host memory when the cell runs on an accelerator: the canonical weights that
# seed the stacks and the NumPy reference. Every other term lives where the model computes.
HOST_TERMS = ("host weights", "float64 reference")


@dataclass(frozen=True)
class Prediction:
    terms: dict[str, int]  # name -> bytes

    @property
    def total(self) -> int:
        return sum(self.terms.values())

    def on_device(self) -> Prediction:
        """The terms an accelerator holds (the model, its training state, activations)."""
        return Prediction({k: v for k, v in self.terms.items() if k not in HOST_TERMS})

    def on_host(self) -> Prediction:
        """The terms the host holds beside an accelerator."""
        return Prediction({k: v for k, v in self.terms.items() if k in HOST_TERMS})

    def describe(self) -> str:
        parts = [f"{name} {size / GIB:.2f}" for name, size in self.terms.items() if size]
        return f"{self.total / GIB:.2f} GiB = " + " + ".join(parts) + " GiB"


def model_memory(framework: str) -> ModelMemory:
    """How ``framework``'s model runner holds a model (from the registry)."""
    held = FRAMEWORKS[framework].model_memory
    if held is None:
        raise ValueError(f"{framework} has no model runner (workloads/models/run_{framework}.py)")
    return held


def _device_copy(held: ModelMemory, host_bytes: int) -> int:
    return host_bytes if held.weights == "device copy" else 0


def _model_copy(held: ModelMemory, dtype: str, elements: int, host_dtype: str) -> int:
    if held.weights == "host":
        return 0
    if held.weights == "device copy" and dtype == host_dtype:
        return 0
    return elements * DTYPE_BYTES[dtype]


def predict(
    spec: ModelSpec, config: Config, params: Mapping[str, Any], framework: str
) -> Prediction:
    """Peak bytes of one cell beyond the framework's own footprint (see the module docstring)."""
    held = model_memory(framework)
    dtype, train = str(params["dtype"]), params["task"] == "train"
    host_dtype = "float64" if dtype == "float64" else "float32"
    n_params = count(spec.layout(config))
    n_state = n_params + count(spec.buffers(config))
    item = DTYPE_BYTES[dtype]
    host = n_state * DTYPE_BYTES[host_dtype]
    acts = spec.activations(config, int(params["batch"]), int(params.get("seq", 0)))
    terms = {
        "host weights": host,
        "device copy": _device_copy(held, host),
        "model weights": _model_copy(held, dtype, n_state, host_dtype),
    }
    if train:
        functional_copies = 3 * n_params * item if held.functional_train_step else 0
        terms["gradients"] = n_params * item
        terms["AdamW moments"] = 2 * n_params * item
        terms["new weights and moments"] = functional_copies
        terms["activations"] = _train_activations(held, acts) * item
    else:
        largest = max(_largest(spec.layout(config)), _largest(spec.buffers(config)))
        terms["activations"] = acts.peak_live * item
        terms["float64 reference"] = 8 * (largest + acts.peak_live)
    return Prediction(terms)


def cached_free_blocks(
    spec: ModelSpec, config: Config, params: Mapping[str, Any], framework: str
) -> tuple[int, str]:
    """Bytes a device allocator keeps reserved but unused at a train step's peak, and why
    (``ModelMemory.cached_free_logits``); (0, '') where none are known."""
    blocks = model_memory(framework).cached_free_logits
    if params["task"] != "train" or not blocks:
        return 0, ""
    acts = spec.activations(config, int(params["batch"]), int(params.get("seq", 0)))
    why = "cached free blocks (logits-sized, kept by the allocator; not with expandable_segments)"
    return blocks * acts.logits * DTYPE_BYTES[str(params["dtype"])], why


def _train_activations(held: ModelMemory, acts: Activations) -> int:
    """What the forward keeps for the backward, and on top of it the most the step holds at
    once: the forward's own peak, or the loss's backward where the framework's count of
    logits-sized tensors there is known (``saved`` already holds one: the log-probabilities)."""
    saved = acts.saved if held.keeps_attention_scores else acts.saved - acts.scores
    live = acts.peak_live
    if held.loss_backward_logits:
        live = max(live, (held.loss_backward_logits - 1) * acts.logits)
    return saved + live


def _largest(layout: Mapping[str, tuple[int, ...]]) -> int:
    return max((count({name: shape}) for name, shape in layout.items()), default=0)
