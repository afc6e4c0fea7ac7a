"""The damped rational response in TensorFlow (see kernel_numpy.py)."""

import tensorflow as tf

DAMPING = 0.5


def horner(coefficients, x):
    result = tf.ones_like(x) * coefficients[-1]
    for k in range(coefficients.shape[0] - 2, -1, -1):
        result = result * x + coefficients[k]
    return result


def kernel(x, p, q, *, scale=1.0):
    ratio = horner(p, x) / horner(q, x)
    return ratio * tf.exp(-DAMPING * x * x) + tf.math.log1p(x * x) * tf.tanh(scale * x)
