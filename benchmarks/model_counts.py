"""Benchmark: the full-size parameter count of every model, from instantiated models.

torch builds each model under ``torch.device("meta")`` (shapes, no memory), so even LLaMA-3.1 8B
is instantiated; Keras builds the models that fit comfortably in memory (the others print
"skipped" with their size). Each count must equal the spec's layout arithmetic and the
published number. Usage: ``python benchmarks/model_counts.py`` (about a minute); record the
output in docs/results.md.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from stackwars.workloads.models import SPECS
from stackwars.workloads.models.adapter import ModelCell
from stackwars.workloads.models.spec import count

# Keras materialises real float32 variables: only models below this many parameters.
KERAS_LIMIT = 200_000_000


def torch_count(cell: ModelCell) -> int:
    import torch

    with torch.device("meta"):
        module = cell.family_module().build(cell.spec.name, cell.config)
    return sum(p.numel() for p in module.parameters())


def keras_count(cell: ModelCell) -> int | None:
    if count(cell.spec.layout(cell.config)) > KERAS_LIMIT:
        return None
    model = cell.family_module().build(cell.spec.name, cell.config, "float32")
    return sum(int(v.numpy().size) for v in model.trainable_variables)


def main() -> int:
    failures = 0
    print(f"{'model':14} {'layout':>15} {'torch (meta)':>15} {'keras':>15}")
    for spec in SPECS:
        params = {"scale": "full", "task": "infer", "batch": 2, "seq": 64, "image": 0}
        layout = count(spec.layout(spec.configs["full"]))
        torch_n = torch_count(ModelCell(spec, {**params, "dtype": "float32"}, "torch"))
        keras_n = keras_count(ModelCell(spec, {**params, "dtype": "float32"}, "tensorflow"))
        keras_text = f"{keras_n:,}" if keras_n is not None else "skipped"
        print(f"{spec.name:14} {layout:>15,} {torch_n:>15,} {keras_text:>15}")
        failures += torch_n != layout or (keras_n is not None and keras_n != layout)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
