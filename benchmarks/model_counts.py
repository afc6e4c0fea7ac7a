"""Benchmark: the full-size parameter count of every model, from instantiated models.

torch builds each model under ``torch.device("meta")`` (shapes, no memory), so even LLaMA-3.1 8B
is instantiated; the one Keras definition is built on each Keras backend (JAX, PyTorch,
TensorFlow), each in a process of its own since Keras picks its backend once per process, for
the models that fit comfortably in memory (the others print "skipped" with their size). Each
count must equal the spec's layout arithmetic, which tests compare with the published number.
Usage: ``python benchmarks/model_counts.py`` (a few minutes); record the output in
docs/results.md.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

from stackwars.workloads.models import SPECS
from stackwars.workloads.models.adapter import ModelCell
from stackwars.workloads.models.spec import count

# Keras materialises real float32 variables: only models below this many parameters.
KERAS_LIMIT = 200_000_000
BACKENDS = ("jax", "torch", "tensorflow")
PARAMS = {"scale": "full", "task": "infer", "batch": 2, "seq": 64, "image": 0}


def torch_count(cell: ModelCell) -> int:
    import torch

    with torch.device("meta"):
        module = cell.family_module().build(cell.spec.name, cell.config)
    return sum(p.numel() for p in module.parameters())


def keras_counts(backend: str) -> dict[str, int | None]:
    """Trainable parameters of each built Keras model, in a fresh process on ``backend``."""
    environment = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    out = subprocess.run(
        [sys.executable, __file__, "--keras", backend],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


def keras_main() -> None:
    counts: dict[str, int | None] = {}
    for spec in SPECS:
        cell = ModelCell(spec, {**PARAMS, "dtype": "float32"}, f"keras-{sys.argv[2]}")
        if count(spec.layout(cell.config)) > KERAS_LIMIT:
            counts[spec.name] = None
            continue
        model = cell.family_module("keras").build(spec.name, cell.config, "float32")
        counts[spec.name] = sum(math.prod(v.shape) for v in model.trainable_variables)
    print(json.dumps(counts))


def main() -> int:
    failures = 0
    keras = {backend: keras_counts(backend) for backend in BACKENDS}
    header = "".join(f" {'keras-' + b:>18}" for b in BACKENDS)
    print(f"{'model':14} {'layout':>15} {'torch (meta)':>15}{header}")
    for spec in SPECS:
        layout = count(spec.layout(spec.configs["full"]))
        torch_n = torch_count(ModelCell(spec, {**PARAMS, "dtype": "float32"}, "torch"))
        found = [keras[b][spec.name] for b in BACKENDS]
        texts = "".join(f" {n:>18,}" if n is not None else f" {'skipped':>18}" for n in found)
        print(f"{spec.name:14} {layout:>15,} {torch_n:>15,}{texts}")
        failures += torch_n != layout or any(n is not None and n != layout for n in found)
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--keras"]:
        keras_main()
    else:
        sys.exit(main())
