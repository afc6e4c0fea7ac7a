"""NumPy pieces of the transformer workloads' references and hand-written backward passes:
a stable softmax, the gradients of a matmul's weight and bias, and their FLOP counts. Registers
no workload."""

from __future__ import annotations

from typing import Any

# Max, subtract, exp, sum and divide per element of a stable softmax.
SOFTMAX_FLOPS_PER_ELEMENT = 5
# Backward of softmax per element: dp*p, its row sum, subtract, multiply by p.
SOFTMAX_GRAD_FLOPS_PER_ELEMENT = 4


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
