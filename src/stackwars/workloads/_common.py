"""Pieces the transformer workloads share: parameters, seeded inputs, NumPy helpers, and one
way per framework to return gradients. Registers no workload.

``task=grad`` means: the forward result ``y`` and the gradients of ``L = sum(y * ct)`` with
respect to every input of the forward function, where ``ct`` (the cotangent) is the last input.
Each framework computes them with its own autodiff; NumPy has none, so its workloads carry
hand-written backward passes, used both by the numpy stack and (in float64) by the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads.base import DTYPE_BYTES, Param

DTYPES = ("float32", "float64")
TASKS = ("forward", "grad")

DTYPE = Param("dtype", str, "float32", "element type", choices=DTYPES)
TASK = Param(
    "task",
    str,
    "forward",
    "forward: the output; grad: the output and the gradients of sum(y*ct) for every input",
    choices=TASKS,
)

# Max, subtract, exp, sum and divide per element of a stable softmax.
SOFTMAX_FLOPS_PER_ELEMENT = 5
# Backward of softmax per element: dp*p, its row sum, subtract, multiply by p.
SOFTMAX_GRAD_FLOPS_PER_ELEMENT = 4


def normal(
    rng: Any, shape: tuple[int, ...], dtype: str, std: float = 1.0, mean: float = 0.0
) -> Any:
    """Normal numbers drawn in float64 and then cast, so that float32 and float64 inputs hold
    the same values up to rounding."""
    return (rng.standard_normal(shape) * std + mean).astype(dtype)


def memory_estimate(dtype: str, inputs: int, activations: int, outputs: int) -> int:
    """Bytes for element counts: host inputs and their device copies, activations, the result
    on device and on host, then the float64 reference's copies of the inputs, its activations
    and its results."""
    itemsize = DTYPE_BYTES[dtype]
    on_stack = itemsize * (2 * inputs + activations + 2 * outputs)
    return on_stack + 8 * (inputs + activations + outputs)


def in_float64(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    import numpy as np

    return tuple(np.asarray(array, dtype=np.float64) for array in inputs)


def softmax(x: Any) -> Any:
    """Softmax over the last axis, shifted by the row maximum so that exp cannot overflow."""
    import numpy as np

    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / np.sum(shifted, axis=-1, keepdims=True)


def weight_grad(inputs: Any, grad_out: Any) -> Any:
    """Gradient of ``inputs @ w`` with respect to ``w``: every leading axis is a batch axis."""
    return inputs.reshape(-1, inputs.shape[-1]).T @ grad_out.reshape(-1, grad_out.shape[-1])


def bias_grad(grad_out: Any) -> Any:
    return grad_out.reshape(-1, grad_out.shape[-1]).sum(axis=0)


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
