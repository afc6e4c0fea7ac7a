"""Seed 002's higher-order derivatives by nested autodiff, and Hessian-vector products.

``derivatives``: f(x) = -4x³ + 9x² + 6x - 3 differentiated ``order`` times (order=0: f itself)
at one scalar x = 1.0 (n=0: the seed's ``dfdx(1.)``, giving 8, 12, -6, -24 for orders 0-3) or
element-wise at n points. Each framework nests its own autodiff the way its users write it:

* jax: ``jax.grad`` nested ``order`` times, and over points ``jax.vmap`` of it (grad
  differentiates scalar functions); torch, api=func: the same with ``torch.func``.
* torch, api=autograd, the classic way: ``torch.autograd.grad(create_graph=True)`` of the sum
  over the points, repeated (an element-wise function's sum has its derivative as gradient).
* tensorflow: one ``tf.GradientTape`` per order, nested (its gradient is that sum's too).
* numpy: no autodiff, so orders from 1 are unsupported.

The reference is the closed form in float64. ``api`` names torch's two ways; JAX and TensorFlow
have one each, run as api=func. Why a stack cannot run a cell is in ``unsupported``.

``hvp``: the Hessian of a small MLP's batch-mean loss (see _mlp.py) times a vector, forward
over reverse: ``jax.jvp`` of ``jax.grad``, ``torch.func.jvp`` of ``torch.func.grad``, and
``tf.autodiff.ForwardAccumulator`` over a ``tf.GradientTape``; torch's api=autograd is reverse
over reverse, ``torch.autograd.grad`` of the gradient taken with ``create_graph=True``. The
reference is the gradient written by hand and differentiated along the vector by hand, in
float64 (exact up to rounding; tests/test_transforms.py checks it against central differences).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads import _mlp, register
from stackwars.workloads._inputs import DTYPE, in_float64, memory_estimate, normal
from stackwars.workloads.base import DTYPE_BYTES, Param, Work, Workload
from stackwars.workloads.elementwise import POLY_FLOPS_PER_ELEMENT
from stackwars.workloads.elementwise import _poly as poly

SEED_X = 1.0
# Arithmetic per point of each derivative's closed form: f' = -12x² + 18x + 6 (x*x, two
# multiplies, two adds), f'' = -24x + 18, f''' a constant. Nested autodiff computes every
# lower order on the way to the one asked for, so a cell counts the sum up to its order.
CLOSED_FORM_FLOPS = (POLY_FLOPS_PER_ELEMENT, 5, 2, 0)
# Arrays of n points an eager nested derivative keeps alive per order: the forward's
# intermediates and their gradients.
ARRAYS_PER_ORDER = 12

NO_AUTODIFF = (
    "NumPy has no autodiff; the other frameworks differentiate with jax.grad, torch.func, "
    "torch.autograd or tf.GradientTape"
)
ORDER_ZERO = "; order=0 (f itself) runs on numpy"
TORCH_ONLY_API = (
    "api=autograd is torch.autograd.grad(create_graph=True); {framework} has one autodiff "
    "API, run with api=func"
)
NO_DOUBLE_BACKWARD = (
    "torch.compile cannot differentiate twice through torch.autograd.grad: AOTAutograd does "
    "not support double backward (create_graph=True); api=func nests torch.func transforms, "
    "which torch.compile traces"
)
# Checked against torchax 0.0.13, the version the xla extra pins. (torch.autograd on torch:xla,
# api=autograd, is refused by the worker itself: see frameworks/torch_xla.py.)
TORCHAX_VMAP_NUMBERS = (
    "torchax (0.0.13) fails inside torch.func.vmap wherever a Python number meets a tensor "
    "(-4*x: AttributeError: 'int' object has no attribute 'dtype'); n=0, the scalar, runs"
)
TORCHAX_NO_JVP = (
    "torchax (0.0.13) cannot lower torch.func.jvp's forward-mode autodiff (no lowering for "
    "aten::is_same_size)"
)


def refuse(reason: str) -> Callable[..., Any]:
    """What a stack without the transform runs. Planning never starts such a cell (the
    workload's ``unsupported`` says why); a worker asked directly reports it unsupported."""

    def unsupported(*arrays: Any) -> Any:
        raise NotImplementedError(reason)

    return unsupported


def _closed_form(order: int, x: Any) -> Any:
    import numpy as np

    forms = (
        poly,
        lambda x: -12 * x * x + 18 * x + 6,
        lambda x: -24 * x + 18,
        lambda x: np.full_like(x, -24.0),
    )
    return forms[order](x)


def _derivative_inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    if params["n"] == 0:
        return (np.asarray(SEED_X, dtype=params["dtype"]),)
    rng = np.random.default_rng(seed)
    return (normal(rng, (params["n"],), params["dtype"]),)


def _derivative_reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    return _closed_form(params["order"], in_float64(inputs)[0])


def _nested(params: Mapping[str, Any], grad: Callable[..., Any], vmap: Callable[..., Any]) -> Any:
    """The function of x a user writes: f differentiated ``order`` times by ``grad``, then
    mapped over the points by ``vmap`` (``grad`` differentiates a function of one scalar)."""
    nested = poly
    for _ in range(params["order"]):
        nested = grad(nested)
    if params["n"] and params["order"]:
        nested = vmap(nested)

    def derivative(x: Any) -> Any:
        return nested(x)

    return derivative


def _derivative_numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    return refuse(NO_AUTODIFF + ORDER_ZERO) if params["order"] else poly


def _derivative_jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax

    return _nested(params, jax.grad, jax.vmap)


def _derivative_torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch

    if params["api"] == "autograd" and params["order"]:
        return _torch_autograd(params["order"])
    return _nested(params, torch.func.grad, torch.func.vmap)


def _torch_autograd(order: int) -> Callable[..., Any]:
    import torch

    def derivative(x: Any) -> Any:
        x = x.detach().requires_grad_()
        y = poly(x)
        for k in range(order):
            # Only a derivative that is differentiated again needs its own graph.
            (y,) = torch.autograd.grad(y.sum(), x, create_graph=k + 1 < order)
        return y

    return derivative


def _derivative_tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    def nth(x: Any, order: int) -> Any:
        if order == 0:
            return poly(x)
        with tf.GradientTape() as tape:
            # x is a constant, not a Variable: a tape records it only when watched.
            tape.watch(x)
            y = nth(x, order - 1)
        return tape.gradient(y, x)

    order = params["order"]

    def derivative(x: Any) -> Any:
        return nth(x, order)

    return derivative


def _derivative_unsupported(params: Mapping[str, Any], framework: str, mode: str) -> str:
    order, autograd = params["order"], params["api"] == "autograd"
    if order == 0:
        return ""
    if framework == "numpy":
        return NO_AUTODIFF + ORDER_ZERO
    if autograd and framework != "torch":
        return TORCH_ONLY_API.format(framework=framework)
    if (framework, mode) == ("torch", "compile") and autograd and order > 1:
        return NO_DOUBLE_BACKWARD
    if (framework, mode) == ("torch", "xla") and not autograd and params["n"]:
        return TORCHAX_VMAP_NUMBERS
    return ""


def _derivative_work(params: Mapping[str, Any]) -> Work:
    points = max(1, params["n"])
    flops = sum(CLOSED_FORM_FLOPS[: params["order"] + 1]) * points
    return Work(flops=float(flops), bytes=2.0 * points * DTYPE_BYTES[params["dtype"]])


def _derivative_memory(params: Mapping[str, Any]) -> int:
    points = max(1, params["n"])
    activations = ARRAYS_PER_ORDER * (params["order"] + 1) * points
    return memory_estimate(params["dtype"], points, activations, points)


def _derivative_error_growth(params: Mapping[str, Any]) -> float:
    """Measured in float32 at n=1000000, the largest of |error| / (RMS(reference) + |reference|)
    over the points, in units of float32's base rtol (2e-6): order 0 needs 0.37 (tensorflow
    graph; 0.30 on numpy), order 1 0.12, order 2 0.04, order 3 and the tiny size 0 (exact).
    A derivative off by one in its constant term is off by ~0.04 of its RMS, ~10000 units."""
    return 2.0


API = Param(
    "api",
    str,
    "func",
    "torch's autodiff: func (torch.func transforms) or autograd (torch.autograd.grad with "
    "create_graph=True); JAX and TensorFlow have one API each, run as func",
    choices=("func", "autograd"),
)

derivatives = register(
    Workload(
        name="derivatives",
        description=(
            "seed 002's f(x) = -4x³+9x²+6x-3 and its derivatives by nested autodiff "
            "(grad of grad), at x=1.0 (n=0) or element-wise over n points"
        ),
        params=(
            Param("order", int, 3, "derivative order (0: f itself)", choices=(0, 1, 2, 3)),
            Param("n", int, 1_000_000, "points (0: the scalar x=1.0 of seed 002)", minimum=0),
            API,
            DTYPE,
        ),
        make_inputs=_derivative_inputs,
        reference=_derivative_reference,
        work=_derivative_work,
        memory_bytes=_derivative_memory,
        implementations={
            "numpy": _derivative_numpy,
            "jax": _derivative_jax,
            "torch": _derivative_torch,
            "tensorflow": _derivative_tensorflow,
        },
        tiny={"order": 3, "n": 8, "api": "func", "dtype": "float32"},
        error_growth=_derivative_error_growth,
        unsupported=_derivative_unsupported,
    )
)


def _hvp_inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = _mlp.weights(params, rng)
    data = _mlp.data(params, rng)
    tangents = [normal(rng, w.shape, params["dtype"]) for w in weights]
    return (*weights, *data, *tangents)


def _hvp_reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    return _mlp.hvp(*in_float64(inputs))


def _hvp_numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    return refuse(NO_AUTODIFF)


def _hvp_jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax

    loss = _mlp.jax_loss()

    def hvp(*arrays: Any) -> Any:
        w1, b1, w2, b2, x, y, v1, c1, v2, c2 = arrays

        def mean_loss(weights: Any) -> Any:
            return loss(weights, x, y) / x.shape[0]

        return jax.jvp(jax.grad(mean_loss), ((w1, b1, w2, b2),), ((v1, c1, v2, c2),))[1]

    return hvp


def _hvp_torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch

    loss = _mlp.torch_loss()
    if params["api"] == "autograd":
        return _hvp_torch_autograd(loss)

    def hvp(*arrays: Any) -> Any:
        w1, b1, w2, b2, x, y, v1, c1, v2, c2 = arrays

        def mean_loss(weights: Any) -> Any:
            return loss(weights, x, y) / x.shape[0]

        grad = torch.func.grad(mean_loss)
        return torch.func.jvp(grad, ((w1, b1, w2, b2),), ((v1, c1, v2, c2),))[1]

    return hvp


def _hvp_torch_autograd(loss: Callable[..., Any]) -> Callable[..., Any]:
    import torch

    def hvp(*arrays: Any) -> Any:
        w1, b1, w2, b2, x, y, v1, c1, v2, c2 = arrays
        weights = tuple(w.detach().requires_grad_() for w in (w1, b1, w2, b2))
        mean_loss = loss(weights, x, y) / x.shape[0]
        grads = torch.autograd.grad(mean_loss, weights, create_graph=True)
        return torch.autograd.grad(grads, weights, grad_outputs=(v1, c1, v2, c2))

    return hvp


def _hvp_tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    loss = _mlp.tensorflow_loss()

    def hvp(*arrays: Any) -> Any:
        w1, b1, w2, b2, x, y, v1, c1, v2, c2 = arrays
        weights = [w1, b1, w2, b2]
        with tf.autodiff.ForwardAccumulator(weights, [v1, c1, v2, c2]) as accumulator:
            with tf.GradientTape() as tape:
                tape.watch(weights)
                mean_loss = loss(weights, x, y) / x.shape[0]
            grads = tape.gradient(mean_loss, weights)
        return accumulator.jvp(grads)

    return hvp


def _hvp_unsupported(params: Mapping[str, Any], framework: str, mode: str) -> str:
    autograd = params["api"] == "autograd"
    if framework == "numpy":
        return NO_AUTODIFF
    if autograd and framework != "torch":
        return TORCH_ONLY_API.format(framework=framework)
    if (framework, mode) == ("torch", "compile") and autograd:
        return NO_DOUBLE_BACKWARD
    if (framework, mode) == ("torch", "xla") and not autograd:
        return TORCHAX_NO_JVP
    return ""


def _hvp_work(params: Mapping[str, Any]) -> Work:
    """What forward over reverse computes: the loss, its gradient, and the gradient's
    derivative along the tangents (see _mlp.hvp). The matmuls: four the size of x·W1 (the
    forward, its tangent, and both weight gradients of W1) and nine the size of h·W2; then
    about 15 element-wise operations per hidden unit and 8 per output, per example."""
    b, d, h, o = _mlp.dims(params)
    weights = _mlp.weight_count(params)
    flops = 8 * b * d * h + 18 * b * h * o + 15 * b * h + 8 * b * o
    elements = 3 * weights + b * d + b * o
    return Work(flops=float(flops), bytes=float(elements * DTYPE_BYTES[params["dtype"]]))


def _hvp_memory(params: Mapping[str, Any]) -> int:
    b, d, h, o = _mlp.dims(params)
    weights = _mlp.weight_count(params)
    # Hidden activations, their tangents and gradients; the gradient and its tangent.
    activations = 10 * b * h + 4 * b * o + 2 * weights
    return memory_estimate(params["dtype"], 2 * weights + b * d + b * o, activations, weights)


def _hvp_error_growth(params: Mapping[str, Any]) -> float:
    """Rounding grows like the square root of the longest sums: over features and hidden units
    in the forward, over the batch in the weight gradients.

    Measured in float32 as in ``_derivative_error_growth``: 0.72 at the tiny size (tensorflow
    eager; others up to 0.35), 0.20 at the default size, 0.96 at batch 512, 256 features,
    512 hidden (allowed 11.9 there). A product that ignores one tangent fails (see
    tests/test_transforms.py)."""
    b, d, h, _ = _mlp.dims(params)
    return max(4.0, math.sqrt(b + d + h) / 3.0)


hvp = register(
    Workload(
        name="hvp",
        description=(
            "Hessian-vector product of a tanh MLP's squared-error loss, forward over reverse "
            "(jvp of grad; torch api=autograd: grad of grad)"
        ),
        params=(*_mlp.SIZES, API, DTYPE),
        make_inputs=_hvp_inputs,
        reference=_hvp_reference,
        work=_hvp_work,
        memory_bytes=_hvp_memory,
        implementations={
            "numpy": _hvp_numpy,
            "jax": _hvp_jax,
            "torch": _hvp_torch,
            "tensorflow": _hvp_tensorflow,
        },
        tiny={**_mlp.TINY, "api": "func", "dtype": "float32"},
        error_growth=_hvp_error_growth,
        unsupported=_hvp_unsupported,
    )
)
