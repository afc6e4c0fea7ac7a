"""The damped rational response in JAX (see kernel_numpy.py)."""

import jax.numpy as jnp

DAMPING = 0.5


def horner(coefficients, x):
    result = jnp.ones_like(x) * coefficients[-1]
    for k in range(coefficients.shape[0] - 2, -1, -1):
        result = result * x + coefficients[k]
    return result


def kernel(x, p, q, *, scale=1.0):
    ratio = horner(p, x) / horner(q, x)
    return ratio * jnp.exp(-DAMPING * x * x) + jnp.log1p(x * x) * jnp.tanh(scale * x)
