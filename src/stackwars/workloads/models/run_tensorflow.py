"""The tensorflow stacks for models: the family's Keras 3 model on the TensorFlow backend.

Inference times ``model(x, training=False)``; training times one step as a custom Keras training
loop writes it: loss under ``tf.GradientTape``, ``tape.gradient``, then
``keras.optimizers.AdamW.apply_gradients``. tf.function (and XLA) wrap the step, per the mode.

Two details make the update AdamW as torch and optax define it. Gradients are made dense (see
``train_step``). And Keras adds epsilon to the square root of the *uncorrected* second moment,
torch and optax to the bias-corrected one; at step t they agree when Keras's epsilon is
EPS·sqrt(1 - BETA_2**t). Parity compares the first step (t = 1), so that is the value given:
without it, weights whose gradients are near 1e-7 (embedding rows of tokens absent from the
batch) would move differently on this stack. Later, timed steps differ from torch's only in
that constant, which changes no work.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from stackwars.frameworks.base import flatten
from stackwars.workloads.base import Bound
from stackwars.workloads.models import optim
from stackwars.workloads.models.adapter import ModelCell, ToDevice


def _host(tensor: Any) -> np.ndarray:
    return np.asarray(tf.cast(tensor, tf.float32))


def bind(cell: ModelCell, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
    del mode  # tf.function and XLA are applied by the framework
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            f"Keras runs on {keras.backend.backend()!r}, not tensorflow: KERAS_BACKEND must be "
            "set to 'tensorflow' before keras is imported (the tensorflow framework sets it)"
        )
    family = cell.family_module()
    weights, buffers, rest = cell.split(inputs)
    # Keras assigns its variables from the host arrays: no third copy of the weights.
    state = {**weights, **buffers}
    model = family.build(cell.spec.name, cell.config, cell.dtype)
    family.load_canonical(model, state)
    rest = to_device(rest)
    x = tf.cast(rest[0], cell.dtype) if cell.spec.inputs == "images" else rest[0]
    if not cell.train:

        def infer(x: Any) -> Any:
            return model(x, training=False)

        host = lambda out: [_host(t) for t in flatten(out)]  # noqa: E731
        return Bound(fn=infer, args=(x,), host_outputs=host, computed_dtype=cell.dtype)
    return _bind_train(cell, model, state, x, rest[1])


def _bind_train(cell: ModelCell, model: Any, state: dict[str, Any], x: Any, labels: Any) -> Bound:
    family = cell.family_module()
    optimizer = keras.optimizers.AdamW(
        learning_rate=optim.LR,
        weight_decay=optim.WEIGHT_DECAY,
        beta_1=optim.BETA_1,
        beta_2=optim.BETA_2,
        epsilon=optim.EPS * math.sqrt(1 - optim.BETA_2),
    )
    variables = model.trainable_variables
    optimizer.build(variables)

    def train_step(x: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = family.loss(model, x, labels)
        # An embedding's gradient arrives as IndexedSlices, one slice per token; Keras's
        # sparse AdamW path squares each slice on its own, so a token seen twice gets a second
        # moment of g1²+g2² instead of (g1+g2)². Dense gradients give AdamW as defined.
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
        optimizer.apply_gradients(zip(grads, variables, strict=True))
        return loss

    def reset() -> None:
        family.load_canonical(model, state)
        # The step count and both moments start again; the learning rate is a variable too.
        for variable in optimizer.variables:
            if variable.name != "learning_rate":
                variable.assign(tf.zeros(variable.shape, variable.dtype))

    def host(loss: Any) -> list[np.ndarray]:
        weights = family.canonical_params(model).values()
        return [_host(loss), *(_host(w) for w in weights)]

    return Bound(
        fn=train_step, args=(x, labels), host_outputs=host, computed_dtype=cell.dtype, reset=reset
    )
