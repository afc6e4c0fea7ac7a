#!/usr/bin/env bash
# Benchmark: the models suite at full size (seed 001's end-to-end tables on every stack):
# first run and its breakdown, runs to steady state, steady time with its CI, measured peak
# memory next to the prediction, and parity (inference against float64 NumPy, training across
# stacks). Cells predicted not to fit the memory budget are reported oom with the prediction.
# Takes about an hour on the reference machine (2 cores); run it on an otherwise idle machine
# and record the tables in docs/results.md. Extra arguments go to 'stackwars run', e.g.
#   benchmarks/models_suite.sh --stacks jax:jit,torch:eager
set -euo pipefail
out=${STACKWARS_BENCH_OUT:-benchmarks/results}
mkdir -p "$out"
stamp=$(date +%Y-%m-%d)
python benchmarks/model_counts.py | tee "$out/model-counts-$stamp.txt"
stackwars run --suite models --db "$out/models.sqlite" --json "$out/models-$stamp.json" \
  --markdown "$out/models-$stamp.md" "$@"
stackwars run --workload llama-3.1-8b --param dtype=float32,bfloat16 --stacks torch:eager \
  --find-max-batch | tee "$out/llama-max-batch-$stamp.txt"
