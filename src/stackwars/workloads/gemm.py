"""GEMM: C = A·B for square n×n matrices (seed 000's benchmark, seed 002's large matmul)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from stackwars.workloads import register
from stackwars.workloads._inputs import DTYPES
from stackwars.workloads.base import DTYPE_BYTES, Param, Work, Workload


def _inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    n, dtype = params["n"], params["dtype"]
    return tuple(rng.standard_normal((n, n)).astype(dtype) for _ in range(2))


def _reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    import numpy as np

    a, b = (np.asarray(x, dtype=np.float64) for x in inputs)
    return a @ b


# Each builder returns the function a user would write and hand to jit, compile or
# tf.function, never the library's own callable: tf.function(tf.linalg.matmul) took ~600 µs a
# call at n=256, against ~330 µs over a user's function, binding its many keyword arguments;
# jax.jit(jnp.matmul) and torch.compile(torch.matmul) wrap a library entry point, not a user's
# program. The operator and tf.matmul compute the same product as np/jnp/torch/tf matmul.


def _numpy(params: Mapping[str, Any]) -> Callable[..., Any]:
    def gemm(a: Any, b: Any) -> Any:
        return a @ b

    return gemm


def _jax(params: Mapping[str, Any]) -> Callable[..., Any]:
    def gemm(a: Any, b: Any) -> Any:
        return a @ b

    return gemm


def _torch(params: Mapping[str, Any]) -> Callable[..., Any]:
    def gemm(a: Any, b: Any) -> Any:
        return a @ b

    return gemm


def _tensorflow(params: Mapping[str, Any]) -> Callable[..., Any]:
    import tensorflow as tf

    def gemm(a: Any, b: Any) -> Any:
        return tf.matmul(a, b)

    return gemm


def _keras(params: Mapping[str, Any]) -> Callable[..., Any]:
    from keras import ops

    def gemm(a: Any, b: Any) -> Any:
        return ops.matmul(a, b)

    return gemm


def _work(params: Mapping[str, Any]) -> Work:
    n, itemsize = params["n"], DTYPE_BYTES[params["dtype"]]
    return Work(flops=2.0 * n**3, bytes=3.0 * n * n * itemsize)


def _memory(params: Mapping[str, Any]) -> int:
    # Inputs and output in the compute dtype, plus the float64 reference and its inputs.
    n, itemsize = params["n"], DTYPE_BYTES[params["dtype"]]
    return 3 * n * n * itemsize + 3 * n * n * 8


gemm = register(
    Workload(
        name="gemm",
        description="C = A·B, square n×n (seed 000: n=3000; seed 002: n=10000)",
        params=(
            Param("n", int, 1024, "matrix side", minimum=1),
            Param("dtype", str, "float32", "element type", choices=DTYPES),
        ),
        make_inputs=_inputs,
        reference=_reference,
        work=_work,
        memory_bytes=_memory,
        implementations={
            "numpy": _numpy,
            "jax": _jax,
            "torch": _torch,
            "tensorflow": _tensorflow,
            "keras": _keras,
        },
        tiny={"n": 32, "dtype": "float32"},
        # A length-n dot product accumulates rounding error like sqrt(n).
        error_growth=lambda params: math.sqrt(params["n"]),
    )
)
