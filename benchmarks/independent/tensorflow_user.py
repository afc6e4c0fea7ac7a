"""GEMM or SELU timed the way a TensorFlow user would write it, with nothing from stackwars.

It exists to check stackwars from outside (benchmarks/compare_independent.py): it imports
nothing from stackwars or benchmarks, on purpose, so that a cost stackwars' own set-up adds to
what it times cannot be shared by both sides and hide.

No sync: on the CPU TensorFlow runs ops synchronously (its eager executor is synchronous by
default, and a ``tf.function`` call returns its outputs once its graph has run), so a result is
ready when the call returns. ``.numpy()``, the only wait a user has at hand, would add a copy
to host memory to every call. SELU is written out, as the other scripts and stackwars' selu
workload write it: ``tf.nn.selu`` is one fused kernel, a different computation. The spelling
is seed 000's, ``alpha * exp(x) - alpha``: ``alpha * (exp(x) - 1)`` took twice as long inside
``tf.function`` here (8.4 against 4.3 ms at 2000², 2026-11-23), and stackwars times the seed's.

    python tensorflow_user.py --workload gemm|selu --n N --mode graph --seconds S [--save F]

Prints one JSON line: the median time of one call, the calls timed, TensorFlow's version.
"""

import argparse
import json
import statistics
import time

import numpy as np
import tensorflow as tf

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


@tf.function
def gemm(a, b):
    return tf.matmul(a, b)


@tf.function
def selu(x):
    return SCALE * tf.where(x > 0, x, ALPHA * tf.exp(x) - ALPHA)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=["gemm", "selu"], required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--mode", choices=["graph"], default="graph")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--save", help="also save the inputs and one output (.npz)")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    count = 2 if args.workload == "gemm" else 1
    host = [rng.standard_normal((args.n, args.n)).astype(np.float32) for _ in range(count)]
    inputs = [tf.constant(x) for x in host]
    fn = gemm if args.workload == "gemm" else selu

    for _ in range(10):  # warm-up; the first call traces
        fn(*inputs)
    times = []
    deadline = time.perf_counter() + args.seconds
    while len(times) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn(*inputs)
        times.append(time.perf_counter() - start)

    if args.save:
        np.savez(args.save, *host, output=fn(*inputs).numpy())
    result = {"median_s": statistics.median(times), "calls": len(times)}
    print(json.dumps({**result, "framework_version": tf.__version__}))


if __name__ == "__main__":
    main()
