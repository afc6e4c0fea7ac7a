"""GEMM or SELU timed the way a JAX user would write it, with nothing from stackwars.

It exists to check stackwars from outside (benchmarks/compare_independent.py): it imports
nothing from stackwars or benchmarks, on purpose, so that a cost stackwars' own set-up adds to
what it times cannot be shared by both sides and hide. JAX dispatches asynchronously, so every
call, warm-up and timed, waits for its result with ``.block_until_ready()``.

    python jax_user.py --workload gemm|selu --n N --mode jit --seconds S [--save OUT.npz]

Prints one JSON line: the median time of one call, the calls timed, JAX's version.
"""

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


@jax.jit
def gemm(a, b):
    return a @ b


@jax.jit
def selu(x):
    return SCALE * jnp.where(x > 0, x, ALPHA * jnp.exp(x) - ALPHA)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=["gemm", "selu"], required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--mode", choices=["jit"], default="jit")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--save", help="also save the inputs and one output (.npz)")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    count = 2 if args.workload == "gemm" else 1
    host = [rng.standard_normal((args.n, args.n)).astype(np.float32) for _ in range(count)]
    inputs = [jnp.asarray(x) for x in host]
    fn = gemm if args.workload == "gemm" else selu

    for _ in range(10):  # warm-up; the first call compiles
        fn(*inputs).block_until_ready()
    times = []
    deadline = time.perf_counter() + args.seconds
    while len(times) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn(*inputs).block_until_ready()
        times.append(time.perf_counter() - start)

    if args.save:
        np.savez(args.save, *host, output=np.asarray(fn(*inputs)))
    result = {"median_s": statistics.median(times), "calls": len(times)}
    print(json.dumps({**result, "framework_version": jax.__version__}))


if __name__ == "__main__":
    main()
