"""Seed 002's polynomial timed the way the post timed it (%timeit's timeit loops), with plain
NumPy and JAX and nothing from stackwars: the independent side of docs/results.md's
``--inputs per-call`` comparison. Prints one line per form: seconds per call, mean and best
of 7 repeats. ``python benchmarks/seed002_timeit.py [N]`` (10000, the post's size)."""

import sys
import timeit

import jax
import jax.numpy as jnp
import numpy as np


def f(x):
    return -4 * x * x * x + 9 * x * x + 6 * x - 3


n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
x = np.random.randn(n, n)  # float64, as the post; jnp.array makes float32 (no x64)
x32, jitted = x.astype(np.float32), jax.jit(f)
resident = jnp.array(x32)
forms = {
    "numpy f(x), float64": lambda: f(x),
    "jax.jit(f)(jnp.array(x)), as the post (not waited for)": lambda: jax.jit(f)(jnp.array(x)),
    "jax.jit(f)(jnp.array(x)), waited for": lambda: jitted(jnp.array(x)).block_until_ready(),
    "jax.jit(f)(jnp.array(x32)), float32 host, waited for": lambda: jitted(
        jnp.array(x32)
    ).block_until_ready(),
    "jax.jit(f)(jax.device_put(x32)), waited for": lambda: jitted(
        jax.device_put(x32)
    ).block_until_ready(),
    "jax.jit(f)(resident), waited for": lambda: jitted(resident).block_until_ready(),
}
for name, call in forms.items():
    for _ in range(2):  # compile and warm up, as %timeit's first loops do
        call()
    loops = max(1, int(0.5 / timeit.timeit(call, number=1)))
    times = [t / loops for t in timeit.repeat(call, number=loops, repeat=7)]
    print(f"{name}: mean {sum(times) / 7 * 1e3:.1f} ms, best {min(times) * 1e3:.1f} ms")
