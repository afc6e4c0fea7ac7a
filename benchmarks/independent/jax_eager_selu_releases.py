"""A user's check of `stackwars bisect`'s answer, with no stackwars import: eager jax SELU on a
64x64 float32 array, timed with timeit in each release's environment.

    python benchmarks/independent/jax_eager_selu_releases.py 0.7.0 0.7.2 0.8.0 0.8.1 0.9.2 0.10.2

Each release runs in the environment `stackwars bisect` made for it
(~/.cache/stackwars/environments/jax-VERSION, or $STACKWARS_ENVS), in a fresh process: the
best of 7 repeats of 500 calls, each call waited for, after 200 warm-up calls. Run the
releases twice, in opposite orders, to see the machine's drift.
"""

import os
import subprocess
import sys
from pathlib import Path

SNIPPET = """
import timeit
import jax, jax.numpy as jnp, numpy as np
x = jnp.asarray(np.random.default_rng(0).standard_normal((64, 64)), dtype=jnp.float32)
L, A = 1.0507009873554805, 1.6732632423543772
def selu():
    return (L * jnp.where(x > 0, x, A * jnp.exp(x) - A)).block_until_ready()
for _ in range(200):
    selu()
best = min(timeit.repeat(selu, number=500, repeat=7)) / 500
print(f"jax {jax.__version__}: {best * 1e6:.1f} us a call")
"""

root = Path(os.environ.get("STACKWARS_ENVS", Path.home() / ".cache/stackwars/environments"))
for version in [*sys.argv[1:], *reversed(sys.argv[1:])]:
    python = root / f"jax-{version}" / "venv" / "bin" / "python"
    subprocess.run(
        [str(python), "-c", SNIPPET], check=True, env={**os.environ, "JAX_PLATFORMS": "cpu"}
    )
