"""``task=grad``: one way per framework to return gradients. Registers no workload.

``task=grad`` means: the forward result ``y`` and the gradients of ``L = sum(y * ct)`` with
respect to every input of the forward function, where ``ct`` (the cotangent) is the last input.
Each framework computes them with its own autodiff; NumPy has none, so its workloads carry
hand-written backward passes (``_numpy_ops.py``), used both by the numpy stack and (in float64)
by the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads.base import Param

TASKS = ("forward", "grad")
TASK = Param(
    "task",
    str,
    "forward",
    "forward: the output; grad: the output and the gradients of sum(y*ct) for every input",
    choices=TASKS,
)


def jax_with_grads(forward: Callable[..., Any]) -> Callable[..., Any]:
    import jax

    def with_grads(*args: Any) -> tuple[Any, ...]:
        y, pullback = jax.vjp(forward, *args[:-1])
        return (y, *pullback(args[-1]))

    return with_grads


def torch_with_grads(forward: Callable[..., Any]) -> Callable[..., Any]:
    import torch

    def with_grads(*args: Any) -> tuple[Any, ...]:
        # A generator, not a list comprehension: under torch.compile a comprehension makes
        # Dynamo break the graph at requires_grad_() and then read .grad of a non-leaf, a
        # warning torch hides but that turns into a crash wherever warnings are errors.
        leaves = tuple(arg.detach().requires_grad_() for arg in args[:-1])
        y = forward(*leaves)
        # Dynamo does not trace autograd.grad: the forward and its compiled backward form one
        # graph, and the call that runs the backward is a graph break, as in a training loop.
        grads = torch.autograd.grad(y, leaves, args[-1])
        return (y.detach(), *grads)

    return with_grads


def tensorflow_with_grads(forward: Callable[..., Any]) -> Callable[..., Any]:
    import tensorflow as tf

    def with_grads(*args: Any) -> tuple[Any, ...]:
        primals = list(args[:-1])
        with tf.GradientTape() as tape:
            # Inputs are constants, not Variables: the tape records them only when watched.
            tape.watch(primals)
            y = forward(*primals)
        return (y, *tape.gradient(y, primals, output_gradients=args[-1]))

    return with_grads


WITH_GRADS = {
    "jax": jax_with_grads,
    "torch": torch_with_grads,
    "tensorflow": tensorflow_with_grads,
}


def keras_with_grads(forward: Callable[..., Any]) -> Callable[..., Any]:
    """Keras has no autodiff of its own: a Keras program is differentiated by its backend's
    (as Keras's own trainers do), here around a forward written with ``keras.ops``."""
    import keras

    return WITH_GRADS[keras.backend.backend()](forward)


def for_task(framework: str, params: Mapping[str, Any], forward: Callable[..., Any]) -> Any:
    """``forward`` itself for task=forward, else ``forward`` wrapped by ``framework``'s
    autodiff (see the module docstring); ``framework`` "keras": its backend's."""
    if params["task"] == "forward":
        return forward
    return {**WITH_GRADS, "keras": keras_with_grads}[framework](forward)
