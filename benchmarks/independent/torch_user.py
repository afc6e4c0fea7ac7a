"""GEMM, SELU or BERT-base inference timed the way a PyTorch user would write it, with nothing
from stackwars.

It exists to check stackwars from outside (benchmarks/compare_independent.py): it imports
nothing from stackwars or benchmarks, on purpose, so that a cost stackwars' own set-up adds to
what it times cannot be shared by both sides and hide. On the CPU an eager torch op returns
when its work is done: there is nothing to wait for (on a GPU one would call
``torch.cuda.synchronize()``). SELU is written out, as the other scripts and stackwars' selu
workload write it: ``torch.nn.functional.selu`` is one fused kernel, a different computation.

BERT is what a torch user writes: embeddings (word, position, token type, all types 0) and
their LayerNorm, then ``nn.TransformerEncoder`` over ``nn.TransformerEncoderLayer(d, heads,
d_ff, activation="gelu", batch_first=True, layer_norm_eps=1e-12)`` (post-LN, exact GELU, as
BERT), then the pooler; random weights (``torch.manual_seed(0)``), ``eval()``, called under
``torch.inference_mode()``. Under those conditions torch runs each encoder layer through its
fast path (one native op per layer, ``aten::_transformer_encoder_layer_fwd``, for attention,
norms and MLP): that is part of what a user of ``nn.TransformerEncoder`` gets, so it is part
of what this script times.

    python torch_user.py --workload gemm|selu --n N --mode eager --seconds S [--save OUT.npz]
    python torch_user.py --workload bert --scale full --batch 2 --seq 64 --mode eager --seconds S

Prints one JSON line: the median time of one call, the calls timed, torch's version. ``--save``
writes the inputs and the output (for BERT the tokens, ``output`` and ``pooled``).
"""

import argparse
import json
import statistics
import time

import numpy as np
import torch
from torch import nn

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805
# BERT-base as published, and a tiny one for tests; LayerNorm epsilon 1e-12 in both.
BERT = {
    "full": {"vocab": 30522, "positions": 512, "d": 768, "layers": 12, "heads": 12, "d_ff": 3072},
    "tiny": {"vocab": 97, "positions": 32, "d": 16, "layers": 2, "heads": 2, "d_ff": 32},
}
EPS = 1e-12


def gemm(a, b):
    return torch.matmul(a, b)


def selu(x):
    return SCALE * torch.where(x > 0, x, ALPHA * torch.exp(x) - ALPHA)


class Bert(nn.Module):
    def __init__(self, config):
        super().__init__()
        d = config["d"]
        self.word = nn.Embedding(config["vocab"], d)
        self.position = nn.Embedding(config["positions"], d)
        self.token_type = nn.Embedding(2, d)  # BERT's two token types
        self.norm = nn.LayerNorm(d, eps=EPS)
        layer = nn.TransformerEncoderLayer(
            d,
            config["heads"],
            config["d_ff"],
            activation="gelu",
            batch_first=True,
            layer_norm_eps=EPS,
        )
        self.encoder = nn.TransformerEncoder(layer, config["layers"])
        self.pooler = nn.Linear(d, d)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1])
        types = torch.zeros_like(tokens)
        x = self.word(tokens) + self.position(positions) + self.token_type(types)
        x = self.encoder(self.norm(x))
        return x, torch.tanh(self.pooler(x[:, 0]))


def workload(args, rng):
    """The function to time, its arguments, and the host inputs ``--save`` writes."""
    if args.workload == "bert":
        config = BERT[args.scale]
        tokens = rng.integers(0, config["vocab"], (args.batch, args.seq))
        torch.manual_seed(0)
        return Bert(config).eval(), [torch.from_numpy(tokens)], [tokens]
    count = 2 if args.workload == "gemm" else 1
    host = [rng.standard_normal((args.n, args.n)).astype(np.float32) for _ in range(count)]
    return gemm if args.workload == "gemm" else selu, [torch.from_numpy(x) for x in host], host


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=["gemm", "selu", "bert"], required=True)
    parser.add_argument("--n", type=int, help="matrix size (gemm, selu)")
    parser.add_argument("--scale", choices=list(BERT), default="full", help="bert's size")
    parser.add_argument("--batch", type=int, default=2, help="bert's examples per call")
    parser.add_argument("--seq", type=int, default=64, help="bert's tokens per example")
    parser.add_argument("--mode", choices=["eager"], default="eager")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--save", help="also save the inputs and one output (.npz)")
    args = parser.parse_args()
    if args.workload != "bert" and args.n is None:
        parser.error(f"--workload {args.workload} needs --n")

    fn, inputs, host = workload(args, np.random.default_rng(0))
    # Inference mode for the model only: gemm and selu stay as they always ran.
    with torch.inference_mode(args.workload == "bert"):
        for _ in range(10):  # warm-up
            fn(*inputs)
        times = []
        deadline = time.perf_counter() + args.seconds
        while len(times) < 5 or time.perf_counter() < deadline:
            start = time.perf_counter()
            fn(*inputs)
            times.append(time.perf_counter() - start)

        if args.save:
            out = fn(*inputs)
            outputs = out if args.workload == "bert" else (out,)
            names = ("output", "pooled")[: len(outputs)]
            arrays = (tensor.numpy() for tensor in outputs)
            np.savez(args.save, *host, **dict(zip(names, arrays, strict=True)))
    result = {"median_s": statistics.median(times), "calls": len(times)}
    print(json.dumps({**result, "framework_version": torch.__version__}))


if __name__ == "__main__":
    main()
