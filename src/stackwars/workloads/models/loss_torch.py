"""The torch models' loss, written so torchax can lower it (torch:xla trains every model).

Under torchax every torch call is dispatched as an operator, ``torch.promote_types`` included,
and that one has no lowering (torchax 0.0.13): the widening is decided in plain Python."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def at_least_float32(dtype: torch.dtype) -> torch.dtype:
    """float64 stays, narrower floats widen."""
    return dtype if dtype.itemsize >= torch.float32.itemsize else torch.float32


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every label, in float32 or wider."""
    wide = logits.to(at_least_float32(logits.dtype))
    return F.cross_entropy(wide.reshape(-1, logits.shape[-1]), labels.reshape(-1).long())
