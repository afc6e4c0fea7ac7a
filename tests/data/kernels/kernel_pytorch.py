"""The damped rational response in PyTorch (see kernel_numpy.py)."""

import torch

DAMPING = 0.5


def horner(coefficients, x):
    result = torch.ones_like(x) * coefficients[-1]
    for k in range(coefficients.shape[0] - 2, -1, -1):
        result = result * x + coefficients[k]
    return result


def kernel(x, p, q, *, scale=1.0):
    ratio = horner(p, x) / horner(q, x)
    return ratio * torch.exp(-DAMPING * x * x) + torch.log1p(x * x) * torch.tanh(scale * x)
