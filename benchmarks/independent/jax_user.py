"""GEMM, SELU or BERT-base inference timed the way a JAX user would write it, with nothing
from stackwars.

It exists to check stackwars from outside (benchmarks/compare_independent.py): it imports
nothing from stackwars or benchmarks, on purpose, so that a cost stackwars' own set-up adds to
what it times cannot be shared by both sides and hide. JAX dispatches asynchronously, so every
call, warm-up and timed, waits for its whole result (both of BERT's outputs) with
``jax.block_until_ready``.

BERT is written as a JAX user writes a model without a layer library: the parameters a pytree
of random arrays (fixed seed), the forward plain ``jax.numpy`` (post-LN blocks, exact GELU,
the pooler), the whole forward under one ``jax.jit``, returning the sequence output and the
pooled output. ``--scale tiny`` is a model small enough for tests.

    python jax_user.py --workload gemm|selu --n N --mode jit --seconds S [--save OUT.npz]
    python jax_user.py --workload bert --scale full --batch 2 --seq 64 --mode jit --seconds S

Prints one JSON line: the median time of one call, the calls timed, JAX's version. ``--save``
writes the inputs and the output (for BERT the tokens, ``output`` and ``pooled``).
"""

import argparse
import json
import math
import statistics
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805
# BERT-base as published, and a tiny one for tests; LayerNorm epsilon 1e-12 in both.
BERT = {
    "full": {"vocab": 30522, "positions": 512, "d": 768, "layers": 12, "heads": 12, "d_ff": 3072},
    "tiny": {"vocab": 97, "positions": 32, "d": 16, "layers": 2, "heads": 2, "d_ff": 32},
}
EPS = 1e-12


@jax.jit
def gemm(a, b):
    return a @ b


@jax.jit
def selu(x):
    return SCALE * jnp.where(x > 0, x, ALPHA * jnp.exp(x) - ALPHA)


def bert_params(config, seed=0):
    rng = np.random.default_rng(seed)
    d, d_ff = config["d"], config["d_ff"]

    def normal(*shape):
        return jnp.asarray(0.02 * rng.standard_normal(shape, dtype=np.float32))

    def linear(d_in, d_out):
        return {"w": normal(d_in, d_out), "b": jnp.zeros(d_out)}

    def norm():
        return {"g": jnp.ones(d), "b": jnp.zeros(d)}

    layers = [
        {
            **{name: linear(d, d) for name in ("q", "k", "v", "o")},
            "ln1": norm(),
            "fc1": linear(d, d_ff),
            "fc2": linear(d_ff, d),
            "ln2": norm(),
        }
        for _ in range(config["layers"])
    ]
    embeddings = {"word": normal(config["vocab"], d), "position": normal(config["positions"], d)}
    types = {"token_type": normal(2, d), "ln": norm()}  # BERT's two token types
    return {**embeddings, **types, "layers": layers, "pooler": linear(d, d)}


def layer_norm(x, p):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPS) * p["g"] + p["b"]


def linear(x, p):
    return x @ p["w"] + p["b"]


def attention(x, layer, heads):
    b, s, d = x.shape
    q, k, v = (linear(x, layer[name]).reshape(b, s, heads, d // heads) for name in "qkv")
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // heads)
    out = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
    return linear(out.reshape(b, s, d), layer["o"])


@partial(jax.jit, static_argnames="heads")
def bert(params, tokens, heads):
    """Sequence output [b, s, d] and pooled output [b, d]; every token type is 0."""
    x = params["word"][tokens] + params["position"][: tokens.shape[1]] + params["token_type"][0]
    x = layer_norm(x, params["ln"])
    for layer in params["layers"]:
        x = layer_norm(x + attention(x, layer, heads), layer["ln1"])
        mlp = linear(jax.nn.gelu(linear(x, layer["fc1"]), approximate=False), layer["fc2"])
        x = layer_norm(x + mlp, layer["ln2"])
    return x, jnp.tanh(linear(x[:, 0], params["pooler"]))


def workload(args, rng):
    """The function to time, its arguments, and the host inputs ``--save`` writes."""
    if args.workload == "bert":
        config = BERT[args.scale]
        tokens = rng.integers(0, config["vocab"], (args.batch, args.seq), dtype=np.int32)
        fn = partial(bert, heads=config["heads"])
        return fn, [bert_params(config), jnp.asarray(tokens)], [tokens]
    count = 2 if args.workload == "gemm" else 1
    host = [rng.standard_normal((args.n, args.n)).astype(np.float32) for _ in range(count)]
    return gemm if args.workload == "gemm" else selu, [jnp.asarray(x) for x in host], host


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=["gemm", "selu", "bert"], required=True)
    parser.add_argument("--n", type=int, help="matrix size (gemm, selu)")
    parser.add_argument("--scale", choices=list(BERT), default="full", help="bert's size")
    parser.add_argument("--batch", type=int, default=2, help="bert's examples per call")
    parser.add_argument("--seq", type=int, default=64, help="bert's tokens per example")
    parser.add_argument("--mode", choices=["jit"], default="jit")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--save", help="also save the inputs and one output (.npz)")
    args = parser.parse_args()
    if args.workload != "bert" and args.n is None:
        parser.error(f"--workload {args.workload} needs --n")

    fn, inputs, host = workload(args, np.random.default_rng(0))
    for _ in range(10):  # warm-up; the first call compiles
        jax.block_until_ready(fn(*inputs))
    times = []
    deadline = time.perf_counter() + args.seconds
    while len(times) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter()
        jax.block_until_ready(fn(*inputs))
        times.append(time.perf_counter() - start)

    if args.save:
        outputs = jax.tree.leaves(fn(*inputs))  # one array, or BERT's two
        names = ("output", "pooled")[: len(outputs)]
        np.savez(args.save, *host, **dict(zip(names, map(np.asarray, outputs), strict=True)))
    result = {"median_s": statistics.median(times), "calls": len(times)}
    print(json.dumps({**result, "framework_version": jax.__version__}))


if __name__ == "__main__":
    main()
