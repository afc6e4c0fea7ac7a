"""The Keras stacks for models: the one Keras definition (``<family>_keras.py``) on the cell's
backend, called the way Keras's own trainer for that backend calls it.

* TensorFlow: exactly the tensorflow stacks' code (``run_tensorflow.py``), whose models are this
  Keras definition: ``model(x)``, and a step under ``tf.GradientTape``.
* JAX: stateless, as Keras's JAX trainer is: the model called in a ``keras.StatelessScope``
  with the variables as arguments (``jax.jit`` would otherwise bake the weights into the
  program as constants), and a step returning new variables: ``jax.value_and_grad`` of the
  loss in such a scope, then ``optimizer.stateless_apply``.
* PyTorch: ``model(x)`` under ``torch.no_grad()`` (as Keras's ``predict`` runs it), and a step
  as Keras's torch trainer writes it: zero the gradients, ``loss.backward()``, then
  ``optimizer.apply`` under ``no_grad``.

Every backend builds the model, checks that its trainable parameters number exactly the
canonical layout's (the published count at ``scale=full``), and loads the canonical weights.
Keras's AdamW adds epsilon to the square root of the uncorrected second moment where torch and
optax use the bias-corrected one; ``adamw`` gives the epsilon that makes the first step (the
one parity compares) AdamW as they define it.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
from keras import ops

from stackwars.frameworks.base import flatten
from stackwars.workloads.base import Bound
from stackwars.workloads.models import optim
from stackwars.workloads.models.adapter import ModelCell, ToDevice
from stackwars.workloads.models.spec import count


def adamw() -> Any:
    """Keras's AdamW with the recipe's hyper-parameters (see the module docstring)."""
    return keras.optimizers.AdamW(
        learning_rate=optim.LR,
        weight_decay=optim.WEIGHT_DECAY,
        beta_1=optim.BETA_1,
        beta_2=optim.BETA_2,
        epsilon=optim.EPS * math.sqrt(1 - optim.BETA_2),
    )


def to_host(tensor: Any) -> np.ndarray:
    # NumPy has no bfloat16: widen on the device first (exact).
    return np.asarray(ops.convert_to_numpy(ops.cast(tensor, "float32")))


def built_model(cell: ModelCell, state: dict[str, Any]) -> Any:
    """The family's Keras model, checked against the canonical layout and loaded."""
    family = cell.family_module("keras")
    model = family.build(cell.spec.name, cell.config, cell.dtype)
    built = sum(math.prod(variable.shape) for variable in model.trainable_variables)
    expected = count(cell.spec.layout(cell.config))
    if built != expected:
        raise RuntimeError(
            f"the Keras {cell.spec.name} has {built:,} trainable parameters on "
            f"{keras.backend.backend()}, the canonical layout {expected:,}"
        )
    family.load_canonical(model, state)
    return model


def reset_optimizer(optimizer: Any) -> None:
    """The step count and both moments start again (the learning rate is a variable too)."""
    for variable in optimizer.variables:
        if variable.name != "learning_rate":
            variable.assign(ops.zeros(variable.shape, variable.dtype))


def bind(cell: ModelCell, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
    backend = keras.backend.backend()
    if backend == "tensorflow":
        runner = importlib.import_module(f"{__package__}.run_tensorflow")
        return runner.bind(cell, inputs, to_device, mode)
    weights, buffers, rest = cell.split(inputs)
    # Keras assigns its variables from the host arrays: no third copy of the weights.
    state = {**weights, **buffers}
    model = built_model(cell, state)
    rest = to_device(rest)
    x = ops.cast(rest[0], cell.dtype) if cell.spec.inputs == "images" else rest[0]
    binders = {"jax": _bind_jax, "torch": _bind_torch}
    return binders[backend](cell, model, state, x, rest[1] if cell.train else None)


def _host_outputs(out: Any) -> list[np.ndarray]:
    return [to_host(t) for t in flatten(out)]


def _mapping(model: Any, trainable: Any, frozen: Any) -> list[tuple[Any, Any]]:
    """Each variable with the value a stateless call gives it (``model.stateless_call`` does
    the same, but calls ``call`` directly, which not every model's takes ``training``)."""
    return [
        *zip(model.trainable_variables, trainable, strict=True),
        *zip(model.non_trainable_variables, frozen, strict=True),
    ]


def _bind_jax(cell: ModelCell, model: Any, state: Any, x: Any, labels: Any) -> Bound:
    del state  # the timed calls take the variables as arguments and never change them
    trainable = [variable.value for variable in model.trainable_variables]
    frozen = [variable.value for variable in model.non_trainable_variables]
    if not cell.train:

        def infer(trainable: Any, frozen: Any, x: Any) -> Any:
            with keras.StatelessScope(state_mapping=_mapping(model, trainable, frozen)):
                return model(x, training=False)

        args = (trainable, frozen, x)
        return Bound(infer, args, _host_outputs, computed_dtype=cell.dtype)
    optimizer = adamw()
    optimizer.build(model.trainable_variables)
    step = _jax_train_step(cell, model, optimizer)
    moments = [variable.value for variable in optimizer.variables]

    def host(out: Any) -> list[np.ndarray]:
        loss, new_trainable = out[0], out[1]
        for variable, value in zip(model.trainable_variables, new_trainable, strict=True):
            variable.assign(value)
        canonical = cell.family_module("keras").canonical_params(model).values()
        return [to_host(loss), *(to_host(w) for w in canonical)]

    args = (trainable, frozen, moments, x, labels)
    return Bound(step, args, host, computed_dtype=cell.dtype)


def _jax_train_step(cell: ModelCell, model: Any, optimizer: Any) -> Callable[..., Any]:
    import jax

    family = cell.family_module("keras")

    def loss_of(trainable: Any, frozen: Any, x: Any, labels: Any) -> tuple[Any, list[Any]]:
        with keras.StatelessScope(state_mapping=_mapping(model, trainable, frozen)) as scope:
            loss = family.loss(model, x, labels)
        # Training updates BatchNorm's running statistics: the new ones are returned.
        updated = [scope.get_current_value(v) for v in model.non_trainable_variables]
        return loss, [old if new is None else new for old, new in zip(frozen, updated, strict=True)]

    gradient = jax.value_and_grad(loss_of, has_aux=True)

    def train_step(trainable: Any, frozen: Any, moments: Any, x: Any, labels: Any) -> Any:
        (loss, frozen), grads = gradient(trainable, frozen, x, labels)
        trainable, moments = optimizer.stateless_apply(moments, grads, trainable)
        return loss, trainable, frozen, moments

    return train_step


def _bind_torch(cell: ModelCell, model: Any, state: Any, x: Any, labels: Any) -> Bound:
    import torch

    if not cell.train:

        def infer(x: Any) -> Any:
            with torch.no_grad():
                return model(x, training=False)

        return Bound(infer, (x,), _host_outputs, computed_dtype=cell.dtype)
    family = cell.family_module("keras")
    optimizer = adamw()
    variables = model.trainable_variables
    optimizer.build(variables)

    def train_step(x: Any, labels: Any) -> Any:
        model.zero_grad()
        loss = family.loss(model, x, labels)
        loss.backward()
        grads = [variable.value.grad for variable in variables]
        with torch.no_grad():
            optimizer.apply(grads, variables)
        return loss.detach()

    def reset() -> None:
        family.load_canonical(model, state)
        reset_optimizer(optimizer)

    def host(loss: Any) -> list[np.ndarray]:
        canonical = family.canonical_params(model).values()
        return [to_host(loss), *(to_host(w) for w in canonical)]

    return Bound(train_step, (x, labels), host, computed_dtype=cell.dtype, reset=reset)
