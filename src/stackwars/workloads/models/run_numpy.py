"""The numpy stack for models: the spec's own NumPy forward, inference only."""

from __future__ import annotations

from typing import Any

import numpy as np

from stackwars.frameworks.base import flatten
from stackwars.workloads.base import Bound
from stackwars.workloads.models.adapter import ModelCell, ToDevice, unsupported_reason


def bind(cell: ModelCell, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
    del to_device  # NumPy's device is the host
    reason = unsupported_reason(cell.params, "numpy", mode)
    if reason:
        raise NotImplementedError(reason)
    weights, buffers, rest = cell.split(inputs)
    config, forward = cell.config, cell.spec.forward

    def infer(x: Any) -> Any:
        return forward(config, weights, buffers, x)

    return Bound(
        fn=infer,
        args=(rest[0],),
        host_outputs=lambda out: [np.asarray(a) for a in flatten(out)],
        computed_dtype="float32",
    )
