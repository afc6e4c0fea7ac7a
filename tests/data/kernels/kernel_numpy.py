"""A damped rational response, elementwise, in NumPy: P(x) / Q(x) · exp(−a·x²) plus
log(1 + x²) · tanh(s·x), the polynomials by Horner's rule. Stands for a kernel module a
project already has, one per framework (the others beside it)."""

import numpy as np

DAMPING = 0.5


def horner(coefficients, x):
    """Σ coefficients[k] · x**k, lowest degree first."""
    result = np.ones_like(x) * coefficients[-1]
    for k in range(coefficients.shape[0] - 2, -1, -1):
        result = result * x + coefficients[k]
    return result


def kernel(x, p, q, *, scale=1.0):
    ratio = horner(p, x) / horner(q, x)
    return ratio * np.exp(-DAMPING * x * x) + np.log1p(x * x) * np.tanh(scale * x)
