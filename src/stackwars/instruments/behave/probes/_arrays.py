"""What several probe modules share: the host values probes send and compare with, built on
demand (the parent imports no NumPy until a probe's arguments are asked for), the frameworks
every probe covers, and the affine program several probes call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.frameworks import FRAMEWORKS

# The frameworks a probe written once for all covers: the code of every registered one that is
# not a layer over another (the Keras stacks run Keras code, which no probe has; torch-xla runs
# torch's), read from the registry.
NATIVE_FRAMEWORKS = tuple(
    dict.fromkeys(info.code_key for info in FRAMEWORKS.values() if info.runs_on is None)
)


def small(dtype: str = "float32") -> Any:
    """[0, 1, 2, 3]: values a detail line can print and a reader can check by eye."""
    import numpy as np

    return np.arange(4, dtype=dtype)


def f64(x: Any) -> Any:
    """A float64 copy, so that a reference never shares memory with an argument."""
    import numpy as np

    return np.array(x, dtype=np.float64)


def affine(
    mode: str, prepare: Callable[[Callable[..., Any]], Callable[..., Any]], tally: Any
) -> Callable[..., Any]:
    """x * 2 + 1: a program with nothing to trip on, so that only its inputs matter."""
    return prepare(lambda x: x * 2 + 1)
