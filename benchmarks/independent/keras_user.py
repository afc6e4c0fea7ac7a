"""BERT-base inference timed the way a Keras 3 user would write it, with nothing from stackwars.

It exists to check stackwars' Keras stacks from outside (benchmarks/compare_independent.py):
it imports nothing from stackwars or benchmarks, on purpose, so that a cost stackwars' own
set-up adds to what it times cannot be shared by both sides and hide.

The backend is chosen as Keras's documentation says: ``KERAS_BACKEND`` set before the first
``import keras`` (Keras reads it once, at import); the script then checks that
``keras.backend.backend()`` is the one asked for.

The model is written from ``keras.layers`` the way keras.io's transformer examples write one:
an embedding layer (word, position and token type ``Embedding`` tables, every type 0, then
``LayerNormalization(epsilon=1e-12)``), post-LN transformer blocks of ``MultiHeadAttention``
and a ``Dense(d_ff, activation="gelu")``/``Dense(d)`` MLP (Keras's GELU is the exact one), and
the pooler ``Dense(d, activation="tanh")`` on the first token, assembled as a functional
``keras.Model`` with two outputs (sequence and pooled). Weights are Keras's default
initialisers under ``keras.utils.set_random_seed(0)``.

``--mode jit`` (JAX only): ``model.predict_on_batch(tokens)`` after
``model.compile(jit_compile=True)``. That is Keras's own API for predicting one batch, the one
a Keras user calls without writing any backend code: Keras's JAX trainer compiles its predict
step with ``jax.jit`` and hands back NumPy arrays, so the result is complete when it returns.
``jax.jit`` over ``model.stateless_call`` is what a JAX user borrowing Keras's layers writes
instead, and close to what stackwars' keras-jax:jit stack runs; timing the trainer's path,
with its per-call variable bookkeeping and copy to NumPy, checks stackwars against the code
it did not prepare.

``--mode eager``: ``model(x, training=False)`` on a backend tensor; under ``torch.no_grad()``
on PyTorch (as Keras's own predict runs). Each call is synchronised the backend's way: JAX
dispatches asynchronously, so ``jax.block_until_ready`` on both outputs; PyTorch on the CPU is
synchronous, an op returns when its work is done.

    python keras_user.py --backend jax|torch --mode jit|eager --scale full --batch 2 --seq 64 \\
        --seconds S [--save OUT.npz]

Prints one JSON line: the median time of one call, the calls timed, the backend library's
version, Keras's version and the backend. ``--save`` writes the tokens, ``output`` and
``pooled``.
"""

import argparse
import contextlib
import importlib
import json
import os
import statistics
import time
from functools import partial

import numpy as np

# BERT-base as published, and a tiny one for tests; LayerNorm epsilon 1e-12 in both.
BERT = {
    "full": {"vocab": 30522, "positions": 512, "d": 768, "layers": 12, "heads": 12, "d_ff": 3072},
    "tiny": {"vocab": 97, "positions": 32, "d": 16, "layers": 2, "heads": 2, "d_ff": 32},
}
EPS = 1e-12


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["jax", "torch"], required=True)
    parser.add_argument("--workload", choices=["bert"], default="bert")
    parser.add_argument("--scale", choices=list(BERT), default="full", help="bert's size")
    parser.add_argument("--batch", type=int, default=2, help="examples per call")
    parser.add_argument("--seq", type=int, default=64, help="tokens per example")
    parser.add_argument("--mode", choices=["jit", "eager"], required=True)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--save", help="also save the tokens and one output (.npz)")
    args = parser.parse_args()
    if args.mode == "jit" and args.backend != "jax":
        # Keras's compiled predict on PyTorch is torch.compile, which recompiles on Keras's
        # layer hooks call after call (seen with Keras 3.15, torch 2.13): not a steady state.
        parser.error("--mode jit is for --backend jax; use --mode eager on torch")
    return args


ARGS = parse_args()
os.environ["KERAS_BACKEND"] = ARGS.backend  # before Keras is imported: it reads it once

import keras  # noqa: E402
from keras import layers, ops  # noqa: E402


class Embeddings(layers.Layer):
    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        d = config["d"]
        self.word = layers.Embedding(config["vocab"], d)
        self.position = layers.Embedding(config["positions"], d)
        self.token_type = layers.Embedding(2, d)  # BERT's two token types
        self.norm = layers.LayerNormalization(epsilon=EPS)

    def call(self, tokens):
        positions = ops.arange(tokens.shape[1])
        types = ops.zeros_like(tokens)
        return self.norm(self.word(tokens) + self.position(positions) + self.token_type(types))


class TransformerBlock(layers.Layer):
    """Post-LN, as BERT: x = LN(x + attention(x)), then x = LN(x + MLP(x))."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        d, heads = config["d"], config["heads"]
        self.attention = layers.MultiHeadAttention(heads, key_dim=d // heads)
        self.mlp = keras.Sequential(
            [layers.Dense(config["d_ff"], activation="gelu"), layers.Dense(d)]
        )
        self.norm1 = layers.LayerNormalization(epsilon=EPS)
        self.norm2 = layers.LayerNormalization(epsilon=EPS)

    def call(self, x):
        x = self.norm1(x + self.attention(x, x))
        return self.norm2(x + self.mlp(x))


def bert(config, seq):
    tokens = keras.Input(shape=(seq,), dtype="int32")
    x = Embeddings(config)(tokens)
    for _ in range(config["layers"]):
        x = TransformerBlock(config)(x)
    pooled = layers.Dense(config["d"], activation="tanh")(x[:, 0])
    return keras.Model(tokens, [x, pooled])


def no_wait(out):
    """Nothing to wait for: NumPy results, or PyTorch on the CPU (done when an op returns)."""


def timed_call(model, tokens):
    """The call to time and how to wait for its result."""
    if ARGS.mode == "jit":
        model.compile(jit_compile=True)
        return partial(model.predict_on_batch, tokens), no_wait
    call = partial(model, ops.convert_to_tensor(tokens), training=False)
    if ARGS.backend == "jax":
        import jax

        return call, jax.block_until_ready
    return call, no_wait


def no_grad():
    """``torch.no_grad()`` on PyTorch, as Keras's own predict runs the model."""
    if ARGS.backend == "torch":
        import torch

        return torch.no_grad()
    return contextlib.nullcontext()


def main():
    running = keras.backend.backend()
    if running != ARGS.backend:
        raise SystemExit(f"Keras runs on {running!r}, not {ARGS.backend!r}")
    config = BERT[ARGS.scale]
    keras.utils.set_random_seed(0)
    model = bert(config, ARGS.seq)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, config["vocab"], (ARGS.batch, ARGS.seq), dtype=np.int32)
    call, sync = timed_call(model, tokens)

    with no_grad():
        for _ in range(10):  # warm-up; in jit mode the first call compiles
            sync(call())
        times = []
        deadline = time.perf_counter() + ARGS.seconds
        while len(times) < 5 or time.perf_counter() < deadline:
            start = time.perf_counter()
            sync(call())
            times.append(time.perf_counter() - start)
        if ARGS.save:
            output, pooled = (np.asarray(out) for out in call())
            np.savez(ARGS.save, tokens, output=output, pooled=pooled)

    library = importlib.import_module(ARGS.backend)
    result = {"median_s": statistics.median(times), "calls": len(times)}
    versions = {"framework_version": library.__version__, "keras_version": keras.__version__}
    print(json.dumps({**result, **versions, "backend": running}))


if __name__ == "__main__":
    main()
