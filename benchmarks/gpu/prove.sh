#!/usr/bin/env bash
# The GPU proofs, run on the device machine (docs/accelerators.md, docs/results.md "On a real GPU"):
#   DEADLINE=SECONDS bash benchmarks/gpu/prove.sh STEP...   with OUT set to a folder for the results.
# The machine has torch and jax built for CUDA and no network: the small wheels stackwars
# lacks there travel in .whl/ (torchax, keras and its two missing needs).
# Steps run in the order given, which should be the order of their value: each is bounded by
# `timeout`, by its own cap and by what is left of DEADLINE (seconds from the start, default
# 560), so one hang or a slow step cannot take the later steps' time or the results with it.
# The device tool brings back at most 8 files: every log, JSON and store goes into one folder
# that is packed into $OUT/prove.tgz after each step, so a call cut off keeps what it finished.
set -u
OUT=${OUT:?set OUT to a folder}
DEADLINE=${DEADLINE:-560}
started=$SECONDS
work=/tmp/prove
mkdir -p "$work"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 COLUMNS=220
export STACKWARS_DB=$work/gpu.sqlite
sw="python3 -m stackwars"
gpu="--device gpu --timeout 240"

step() {  # name, cap in seconds, command...
  local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - (SECONDS - started)))
  local limit=$((cap < left ? cap : left))
  if [ "$limit" -lt 15 ]; then echo "=== $name skipped: ${left}s left of the deadline"; return; fi
  echo "=== $name ($(date -u +%H:%M:%S), at most ${limit}s)"
  timeout "$limit" bash -c '"$@"' "$name" "$@" > "$work/$name.log" 2>&1
  echo "=== $name exit $? after $((SECONDS - started))s"
  tail -n 25 "$work/$name.log"
  tar czf "$OUT/prove.tgz" -C "$work" .
}

largest_batch() {  # stack [plan step]: the largest batch --find-max-batch printed for it on the gpu
  awk -F'│' -v stack="$1" '$4 ~ " "stack" " {gsub(/ /, "", $5); print $5; exit}' "$work/${2:-maxbatch-plan}.log"
}

second_model_at_its_answer() {  # BERT-base's train step on torch at its largest batch predicted
  local torch_batch
  torch_batch=$(largest_batch torch:eager maxbatch-bert-plan)
  [ -n "$torch_batch" ] || { echo "no batch found in maxbatch-bert-plan.log"; return 1; }
  $sw run --workload bert-base --param task=train --param batch="$torch_batch" --stacks torch:eager $gpu \
    --budget 1 --label maxbatch-bert-torch --json "$work/maxbatch-bert-torch.json"
}

run_at_batches() {  # torch at the largest batch predicted with the default allocator (the fourth
  # visit ran expandable segments at its answer: 0.998x; the cached free block is counted since)
  local torch_batch
  torch_batch=$(largest_batch torch:eager)
  echo "largest batch predicted: torch:eager $torch_batch"
  [ -n "$torch_batch" ] || { echo "no batch found in maxbatch-plan.log"; return 1; }
  $sw run --workload gpt2-small --param task=train --param batch="$torch_batch" --stacks torch:eager $gpu \
    --budget 1 --label maxbatch-torch --json "$work/maxbatch-torch.json"
}

jax_memory() {  # what XLA's own buffer assignment needs for jax's train step, compiled for the GPU
  # and not run: at batch 64 (whose measured peak is on record) and at jax's largest batch
  # predicted (which ran out of memory on the H200 asking for one 97.6 GiB buffer)
  local jax_batch
  jax_batch=$(largest_batch jax:jit)
  echo "largest batch predicted: jax:jit $jax_batch"
  for batch in 64 $jax_batch; do
    $sw ir --workload gpt2-small --param task=train --param batch="$batch" --stacks jax:jit \
      --device gpu --stage memory_analysis --out "$work/ir-jax-$batch"
    cat "$work/ir-jax-$batch/jax_jit/memory_analysis.txt"
  done
}

jax_at_its_answer() {  # jax at its largest batch predicted, pre-allocating its share: XLA's own
  # analysis says the step needs 99.5 GiB of the 105.3 its allocator allows on an H200, yet the
  # run without pre-allocation ran out asking for its 97.6 GiB of temporaries (fifth visit):
  # one region of the whole share tells whether the allocator's growth left no room
  local jax_batch
  jax_batch=$(largest_batch jax:jit)
  [ -n "$jax_batch" ] || { echo "no batch found in maxbatch-plan.log"; return 1; }
  $sw run --workload gpt2-small --param task=train --param batch="$jax_batch" --stacks jax:jit $gpu \
    --budget 1 --preallocate --label maxbatch-jax-preallocate --json "$work/maxbatch-jax-preallocate.json"
}

models_rest() {  # the model cells no visit reached (device peaks; times are not quoted: they
  # share the GPU), the compiled ones last since torch:compile's train steps take minutes each
  $sw run --workload bert-base --param task=train --stacks keras-jax:jit $gpu --budget 0.5 \
    --label models-rest --json "$work/models-rest.json"
  $sw run --workload gpt2-small --param task=train --stacks jax:jit,torch:eager $gpu --budget 0.5 \
    --jobs 2 --label models-gpt2-train --json "$work/models-gpt2-train.json"
  $sw run --workload gpt2-small,bert-base --param task=infer,train --stacks torch:compile $gpu \
    --budget 0.5 --jobs 4 --label models-compile --json "$work/models-compile.json"
  $sw run --workload resnet50,vit-b16 --param task=train --stacks torch:compile $gpu --budget 0.5 \
    --jobs 2 --label models-compile-train --json "$work/models-compile-train.json"
}

allocator_settings() {  # one model's train step under each allocator setting, one cell at a time
  local cells="--workload gpt2-small --param task=train --param batch=64 $gpu --budget 1"
  $sw run $cells --stacks jax:jit,torch:eager --label alloc-default --json "$work/alloc-default.json"
  $sw run $cells --stacks jax:jit --preallocate --label alloc-preallocate --json "$work/alloc-preallocate.json"
  $sw run $cells --stacks jax:jit,torch:eager --memory-fraction 0.5 --label alloc-fraction-0.5 \
    --json "$work/alloc-fraction.json"
  $sw run $cells --stacks torch:eager --allocator-conf expandable_segments:True \
    --label alloc-expandable --json "$work/alloc-expandable.json"
}

precisions() {  # float32 GEMM under each --matmul-precision
  for precision in highest high default; do
    $sw run --workload gemm --param n=8192 --stacks jax:jit,torch:eager,torch:xla $gpu --budget 1 \
      --matmul-precision $precision --label "precision-$precision" --json "$work/precision-$precision.json"
  done
}

selu_both_sides() {  # the user's four variants, then stackwars' jax:eager SELU at both x64 settings
  python3 benchmarks/gpu/selu_isolation.py
  for x64 in off on; do
    $sw run --workload selu --param n=3000 --stacks jax:eager $gpu --budget 1 --x64 $x64 \
      --label "selu-x64-$x64" --json "$work/selu-x64-$x64.json"
  done
}

fixes() {  # the cells the second visit's fixes touch, again: parity and device peaks
  $sw run --workload resnet50 --param task=infer,train --stacks torch:eager,jax:jit $gpu --budget 0.5 \
    --jobs 4 --label fixes-resnet --json "$work/fixes-resnet.json"
  $sw run --workload gemm --param n=8192 --stacks jax:jit,torch:eager,torch:xla $gpu --budget 1 \
    --matmul-precision high --label fixes-gemm-high --json "$work/fixes-gemm-high.json"
  $sw run --workload gpt-neo-1.3b --param task=infer --stacks torch:eager $gpu --budget 0.5 \
    --label fixes-gpt-neo --json "$work/fixes-gpt-neo.json"
}

large_models() {  # GPT-Neo two cells at a time (their peaks add up); LLaMA's train step, predicted
  $sw run --workload gpt-neo-1.3b --param task=infer,train --stacks jax:jit,torch:eager $gpu --budget 0.5 \
    --jobs 2 --label gpt-neo-gpu --json "$work/gpt-neo.json"
  $sw run --workload llama-3.1-8b --param task=train --stacks jax:jit,torch:eager $gpu \
    --label llama-train-gpu --json "$work/llama-train.json"
}

plan_max_batch() {  # GPT-2 small's train step: the largest batch predicted to fit, per stack
  step maxbatch-plan 40 $sw run --workload gpt2-small --param task=train --stacks jax:jit,torch:eager \
    $gpu --find-max-batch
}

export -f fixes large_models models_rest largest_batch run_at_batches jax_memory jax_at_its_answer second_model_at_its_answer allocator_settings precisions selu_both_sides
export sw gpu work
models="resnet50,bert-base,gpt2-small,vit-b16"
model_stacks="jax:jit,torch:eager,torch:compile,torch:xla,keras-jax:jit"
for what in "$@"; do case $what in
  facts) nvidia-smi -L; python3 -c 'import jax, torch; print(jax.__version__, torch.__version__)'
         step env 60 $sw env ;;
  answers) step answers 180 python3 benchmarks/gpu/record_answers.py ;;
  # Seed 001's models on the GPU: device peak against the prediction for every cell, eight
  # cells at a time (each worker's device peak is its own; their times are side by side and
  # the run says so), then the large models.
  models) step models 200 $sw run --workload "$models" --param task=infer,train --stacks "$model_stacks" \
            $gpu --budget 0.5 --jobs 8 --label models-gpu --json "$work/models.json" ;;
  fixes) step fixes 200 fixes ;;
  large-models) step large-models 100 large_models ;;
  maxbatch) plan_max_batch
            step maxbatch 100 run_at_batches ;;
  jax-memory) step jax-memory 120 jax_memory ;;
  # --find-max-batch for a second model (issue 39 asks for two), run at torch's answer.
  maxbatch-bert) step maxbatch-bert-plan 40 $sw run --workload bert-base --param task=train \
                   --stacks jax:jit,torch:eager $gpu --find-max-batch
                 step maxbatch-bert 100 second_model_at_its_answer ;;
  # jax at its own answer, pre-allocating (the plan made here unless maxbatch made it).
  jax-maxbatch) [ -s "$work/maxbatch-plan.log" ] || plan_max_batch
                step jax-maxbatch 100 jax_at_its_answer ;;
  models-rest) step models-rest 200 models_rest ;;
  allocator) step allocator 100 allocator_settings ;;
  precision) step precision 80 precisions ;;
  selu) step selu 50 selu_both_sides ;;
  # CLAIMS narrows the claims (the fourth visit ran the three whose CPU side is short).
  claims) step claims 300 $sw claims --builtin --only "${CLAIMS:-seed000-gpu-*,seed002-accelerator*}" --repeat 3 --budget 1 \
            --json "$work/claims.json" --markdown "$work/claims.md" ;;
  selftest) step selftest 520 $sw selftest --device gpu ;;
  # The calibration's sizes since 2026-11-27, on one stack per way of waiting.
  selftest-some) step selftest-some 120 $sw selftest --device gpu --stacks jax:jit,torch:eager,torch:compile ;;
  peak) step peak 240 $sw env --peak --device gpu ;;
  blog-gpu) step blog-gpu 250 $sw run --suite seed-blog --device gpu --budget 2 --json "$work/blog-gpu.json" --label seed-blog-gpu ;;
  blog-cpu) step blog-cpu 420 $sw run --suite seed-blog --budget 2 --json "$work/blog-cpu.json" --label seed-blog-cpu ;;
  independent) step independent 100 python3 benchmarks/gpu/independent.py ;;
  *) echo "unknown step $what"; exit 2 ;;
esac; done
echo "=== done after $((SECONDS - started))s"
