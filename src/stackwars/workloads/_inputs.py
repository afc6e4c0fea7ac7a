"""Parameters and seeded inputs the op workloads share, and the memory their cells need.
Registers no workload."""

from __future__ import annotations

from typing import Any

from stackwars.workloads.base import DTYPE_BYTES, Param

DTYPES = ("float32", "float64")
# Standard deviation of biases (and, in the models, of norm gains' deviation from 1): large
# enough that a stack which drops or misplaces one fails parity, far outside any tolerance.
BIAS_STD = 0.1
DTYPE = Param("dtype", str, "float32", "element type", choices=DTYPES)


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
