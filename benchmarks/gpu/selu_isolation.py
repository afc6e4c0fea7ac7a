"""Why a user's eager jax SELU on the H100 was 1.5x slower than stackwars' jax:eager call+sync.

The user's script (benchmarks/gpu/independent.py, 2026-11-25) ran with x64 off and the form
``alpha * (exp(x) - 1)``; stackwars ran with x64 on and ``alpha * exp(x) - alpha``. This script
measures the four combinations the way a user would, with no stackwars import: SELU of a
3000x3000 float32 array in eager jax, the median of REPEATS calls after WARMUP, each call
followed by ``block_until_ready``. Each x64 setting runs in a fresh process, since jax reads it
before it makes its first array. It prints one line per combination, with the result's dtype
(x64 on must not promote float32). prove.sh's selu step runs stackwars' jax:eager SELU at both
x64 settings beside it.
"""

import statistics
import subprocess
import sys
import time

N, WARMUP, REPEATS = 3000, 10, 100
LAMBDA, ALPHA = 1.0507009873554805, 1.6732632423543772


def measure(x64: bool) -> None:
    import jax

    jax.config.update("jax_enable_x64", x64)
    import jax.numpy as jnp
    import numpy as np

    forms = {
        "alpha*(exp(x)-1)": lambda x: LAMBDA * jnp.where(x > 0, x, ALPHA * (jnp.exp(x) - 1)),
        "alpha*exp(x)-alpha": lambda x: LAMBDA * jnp.where(x > 0, x, ALPHA * jnp.exp(x) - ALPHA),
    }
    x = jax.device_put(np.random.default_rng(0).standard_normal((N, N), np.float32))
    for name, selu in forms.items():
        for _ in range(WARMUP):
            selu(x).block_until_ready()
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            selu(x).block_until_ready()
            times.append(time.perf_counter() - start)
        dtype = selu(x).dtype
        print(
            f"x64 {'on ' if x64 else 'off'}  {name:20s} {1e6 * statistics.median(times):9.1f} µs"
            f"  (min {1e6 * min(times):.1f}, result {dtype}, {x.devices()})",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) == 2:
        measure(sys.argv[1] == "on")
    else:
        import jax

        print(f"jax {jax.__version__}; median of {REPEATS} calls after {WARMUP}, each waited for")
        for setting in ("off", "on"):
            subprocess.run([sys.executable, __file__, setting], check=True)
