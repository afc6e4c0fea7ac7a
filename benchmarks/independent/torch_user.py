"""GEMM or SELU timed the way a PyTorch user would write it, with nothing from stackwars.

It exists to check stackwars from outside (benchmarks/compare_independent.py): it imports
nothing from stackwars or benchmarks, on purpose, so that a cost stackwars' own set-up adds to
what it times cannot be shared by both sides and hide. On the CPU an eager torch op returns
when its work is done: there is nothing to wait for (on a GPU one would call
``torch.cuda.synchronize()``). SELU is written out, as the other scripts and stackwars' selu
workload write it: ``torch.nn.functional.selu`` is one fused kernel, a different computation.

    python torch_user.py --workload gemm|selu --n N --mode eager --seconds S [--save OUT.npz]

Prints one JSON line: the median time of one call, the calls timed, torch's version.
"""

import argparse
import json
import statistics
import time

import numpy as np
import torch

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def gemm(a, b):
    return torch.matmul(a, b)


def selu(x):
    return SCALE * torch.where(x > 0, x, ALPHA * torch.exp(x) - ALPHA)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=["gemm", "selu"], required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--mode", choices=["eager"], default="eager")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--save", help="also save the inputs and one output (.npz)")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    count = 2 if args.workload == "gemm" else 1
    host = [rng.standard_normal((args.n, args.n)).astype(np.float32) for _ in range(count)]
    inputs = [torch.from_numpy(x) for x in host]
    fn = gemm if args.workload == "gemm" else selu

    for _ in range(10):  # warm-up
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
    print(json.dumps({**result, "framework_version": torch.__version__}))


if __name__ == "__main__":
    main()
