"""The GPU numbers of the seed-blog suite, measured the way a user of each framework would,
with no stackwars import: compare with `stackwars run --suite seed-blog --device gpu`.

Each figure is the median of REPEATS timed calls after WARMUP calls, every call followed by
the framework's own wait (torch.cuda.synchronize, block_until_ready); the copy to host is
timed alone on a result already computed (y.cpu(), np.asarray(y)).
"""

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch

N, WARMUP, REPEATS = 3000, 10, 50


def median_ms(call, wait):
    for _ in range(WARMUP):
        wait(call())
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        wait(call())
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def selu_jax(x):
    return 1.0507009873554805 * jnp.where(x > 0, x, 1.6732632423543772 * (jnp.exp(x) - 1))


x_t = torch.randn(N, N, device="cuda")
sync = lambda _: torch.cuda.synchronize()  # noqa: E731 - a user's one-liner
y_t = x_t @ x_t
compiled_selu = torch.compile(torch.nn.functional.selu)
rows = {
    "torch gemm": median_ms(lambda: x_t @ x_t, sync),
    "torch selu": median_ms(lambda: torch.nn.functional.selu(x_t), sync),
    "torch compile selu": median_ms(lambda: compiled_selu(x_t), sync),
    "torch to host (y.cpu())": median_ms(y_t.cpu, lambda y: y),
}
x_j = jax.device_put(jnp.asarray(np.random.default_rng(0).standard_normal((N, N), np.float32)))
ready = lambda y: y.block_until_ready()  # noqa: E731
jit_selu = jax.jit(selu_jax)
y_j = (x_j @ x_j).block_until_ready()
rows |= {
    "jax gemm": median_ms(lambda: x_j @ x_j, ready),
    "jax selu (eager)": median_ms(lambda: selu_jax(x_j), ready),
    "jax jit selu": median_ms(lambda: jit_selu(x_j), ready),
    "jax to host (np.asarray(y))": median_ms(lambda: np.asarray(y_j), lambda y: y),
    "jax selu + to host": median_ms(lambda: np.asarray(jit_selu(x_j)), lambda y: y),
}
print(f"jax {jax.__version__} {jax.devices()[0].device_kind}; torch {torch.__version__}")
jax_precision = jax.config.jax_default_matmul_precision  # pyright: ignore[reportAttributeAccessIssue]
print(
    f"jax default matmul precision: {jax_precision}; torch: {torch.get_float32_matmul_precision()}"
)
for name, ms in rows.items():
    print(f"{name:32s} {ms:9.3f} ms")
