"""The tensorflow stacks for models: the family's Keras 3 model (``<family>_keras.py``, the one
Keras definition every Keras stack runs too) on the TensorFlow backend.

Inference times ``model(x, training=False)``; training times one step as a custom Keras training
loop writes it: loss under ``tf.GradientTape``, ``tape.gradient``, then
``keras.optimizers.AdamW.apply_gradients``. tf.function (and XLA) wrap the step, per the mode.
The optimizer, the parameter-count check and the reset are ``run_keras``'s.

Gradients are made dense (see ``train_step``), so that the update is AdamW as torch and optax
define it.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from stackwars.frameworks.base import flatten
from stackwars.workloads.base import Bound
from stackwars.workloads.models.adapter import ModelCell, ToDevice
from stackwars.workloads.models.run_keras import adamw, built_model, reset_optimizer, to_host


def bind(cell: ModelCell, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
    del mode  # tf.function and XLA are applied by the framework
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            f"Keras runs on {keras.backend.backend()!r}, not tensorflow: KERAS_BACKEND must be "
            "set to 'tensorflow' before keras is imported (the tensorflow framework sets it)"
        )
    weights, buffers, rest = cell.split(inputs)
    # Keras assigns its variables from the host arrays: no third copy of the weights.
    state = {**weights, **buffers}
    model = built_model(cell, state)
    rest = to_device(rest)
    x = tf.cast(rest[0], cell.dtype) if cell.spec.inputs == "images" else rest[0]
    if not cell.train:

        def infer(x: Any) -> Any:
            return model(x, training=False)

        host = lambda out: [to_host(t) for t in flatten(out)]  # noqa: E731
        return Bound(fn=infer, args=(x,), host_outputs=host, computed_dtype=cell.dtype)
    return _bind_train(cell, model, state, x, rest[1])


def _bind_train(cell: ModelCell, model: Any, state: dict[str, Any], x: Any, labels: Any) -> Bound:
    family = cell.family_module("keras")
    optimizer = adamw()
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
        reset_optimizer(optimizer)

    def host(loss: Any) -> list[Any]:
        weights = family.canonical_params(model).values()
        return [to_host(loss), *(to_host(w) for w in weights)]

    return Bound(
        fn=train_step, args=(x, labels), host_outputs=host, computed_dtype=cell.dtype, reset=reset
    )
