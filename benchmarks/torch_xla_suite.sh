#!/usr/bin/env bash
# Benchmark: seed 001 on its own system. Its operations at GPT-2 small's shapes on torch_xla's
# lazy tensors beside jax:jit, torchax (torch:xla) and torch:compile, then its six models at
# full size on torch-xla:lazy (cells predicted not to fit the memory budget end oom with the
# prediction). Each cell records torch_xla's own counts per phase (graphs compiled in the first
# run, the second run and steady state, graphs executed per call; `stackwars show --details`
# and the JSON's `counters`). Makes the torch-xla environment first if it is missing. Run it
# on an otherwise idle machine and record the tables in docs/results.md. Extra arguments go to
# both runs, e.g. --budget 2.
set -euo pipefail
out=${STACKWARS_BENCH_OUT:-benchmarks/results}
mkdir -p "$out"
stamp=$(date +%Y-%m-%d)
stackwars env create torch-xla
stackwars run --suite stack-wars-ops --stacks jax:jit,torch:xla,torch:compile,torch-xla:lazy \
  --second-look 0 --db "$out/torch-xla.sqlite" --json "$out/torch-xla-ops-$stamp.json" \
  --markdown "$out/torch-xla-ops-$stamp.md" "$@"
stackwars run --suite models --stacks torch-xla:lazy --second-look 0 \
  --db "$out/torch-xla.sqlite" --json "$out/torch-xla-models-$stamp.json" \
  --markdown "$out/torch-xla-models-$stamp.md" "$@"
