"""The host values probes send and compare with, built on demand (the parent imports no
NumPy until a probe's arguments are asked for)."""

from __future__ import annotations

from typing import Any


def small(dtype: str = "float32") -> Any:
    """[0, 1, 2, 3]: values a detail line can print and a reader can check by eye."""
    import numpy as np

    return np.arange(4, dtype=dtype)


def f64(x: Any) -> Any:
    """A float64 copy, so that a reference never shares memory with an argument."""
    import numpy as np

    return np.array(x, dtype=np.float64)
