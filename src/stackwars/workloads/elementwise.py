"""Elementwise workloads from the seeds: SELU (seed 000) and a cubic polynomial (seed 002)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads import register
from stackwars.workloads._inputs import DTYPE
from stackwars.workloads.base import DTYPE_BYTES, Param, Work, Workload

# Seed 000's constants, kept as the seed wrote them (not the exact SELU constants).
SELU_ALPHA = 1.67
SELU_LAMBDA = 1.05
# Arithmetic per element with exp counted as one: compare, exp, mul, sub, select, mul.
SELU_FLOPS_PER_ELEMENT = 6
# -4*x*x*x + 9*x*x + 6*x - 3: six multiplies, three adds or subtracts.
POLY_FLOPS_PER_ELEMENT = 9


def _square_input(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    n = params["n"]
    return (rng.standard_normal((n, n)).astype(params["dtype"]),)


def _elementwise_memory(params: Mapping[str, Any]) -> int:
    n, itemsize = params["n"], DTYPE_BYTES[params["dtype"]]
    # Input, output and a few temporaries in eager mode, plus the float64 reference.
    return 4 * n * n * itemsize + 3 * n * n * 8


def _elementwise_work(flops_per_element: int) -> Callable[[Mapping[str, Any]], Work]:
    def work(params: Mapping[str, Any]) -> Work:
        elements = params["n"] ** 2
        return Work(
            flops=float(flops_per_element * elements),
            bytes=2.0 * elements * DTYPE_BYTES[params["dtype"]],
        )

    return work


def _selu_reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    import numpy as np

    x = np.asarray(inputs[0], dtype=np.float64)
    return SELU_LAMBDA * np.where(x > 0, x, SELU_ALPHA * np.exp(x) - SELU_ALPHA)


def _selu_numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    import numpy as np

    def selu(x: Any) -> Any:
        return SELU_LAMBDA * np.where(x > 0, x, SELU_ALPHA * np.exp(x) - SELU_ALPHA)

    return selu


def _selu_jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    import jax.numpy as jnp

    def selu(x: Any) -> Any:
        return SELU_LAMBDA * jnp.where(x > 0, x, SELU_ALPHA * jnp.exp(x) - SELU_ALPHA)

    return selu


def _selu_torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    import torch

    def selu(x: Any) -> Any:
        return SELU_LAMBDA * torch.where(x > 0, x, SELU_ALPHA * torch.exp(x) - SELU_ALPHA)

    return selu


def _selu_tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    def selu(x: Any) -> Any:
        return SELU_LAMBDA * tf.where(x > 0, x, SELU_ALPHA * tf.exp(x) - SELU_ALPHA)

    return selu


def _selu_keras(params: Mapping[str, Any]) -> Callable[..., Any]:
    from keras import ops

    def selu(x: Any) -> Any:
        exp: Any = ops.exp(x)
        chosen: Any = ops.where(x > 0, x, SELU_ALPHA * exp - SELU_ALPHA)
        return SELU_LAMBDA * chosen

    return selu


def _poly(x: Any) -> Any:
    # Written as seed 002 writes it; every framework overloads these operators, and x*x*x
    # (not x**3, which NumPy evaluates with scalar pow about 20x slower) is the seed's spelling.
    return -4 * x * x * x + 9 * x * x + 6 * x - 3


def _poly_reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    import numpy as np

    return _poly(np.asarray(inputs[0], dtype=np.float64))


def _poly_builder(params: Mapping[str, Any]) -> Callable[..., Any]:
    return _poly


_N = Param("n", int, 2000, "array side (the array is n×n)", minimum=1)

selu = register(
    Workload(
        name="selu",
        description="seed 000's SELU, lambda*where(x>0, x, alpha*exp(x)-alpha), over n×n",
        params=(_N, DTYPE),
        make_inputs=_square_input,
        reference=_selu_reference,
        work=_elementwise_work(SELU_FLOPS_PER_ELEMENT),
        memory_bytes=_elementwise_memory,
        implementations={
            "numpy": _selu_numpy,
            "jax": _selu_jax,
            "torch": _selu_torch,
            "tensorflow": _selu_tensorflow,
            "keras": _selu_keras,
        },
        tiny={"n": 16, "dtype": "float32"},
        # exp is computed by each library's own approximation.
        error_growth=lambda params: 4.0,
    )
)

poly = register(
    Workload(
        name="poly",
        description="seed 002's polynomial -4*x*x*x + 9*x*x + 6*x - 3 over n×n",
        params=(_N, DTYPE),
        make_inputs=_square_input,
        reference=_poly_reference,
        work=_elementwise_work(POLY_FLOPS_PER_ELEMENT),
        memory_bytes=_elementwise_memory,
        # Keras tensors are the backend's, whose operators compute the polynomial.
        implementations=dict.fromkeys(
            ("numpy", "jax", "torch", "tensorflow", "keras"), _poly_builder
        ),
        tiny={"n": 16, "dtype": "float32"},
        error_growth=lambda params: 4.0,
    )
)
