#!/usr/bin/env bash
# The GPU proof of issue 28, run on the device machine (docs/accelerators.md):
#   bash benchmarks/gpu/prove.sh STEP...   with OUT set to a folder for the results.
# The machine has torch and jax built for CUDA and no network: the small wheels stackwars
# lacks there travel in .whl/ (torchax, keras and its two missing needs). Each step is
# bounded by `timeout` so one hang cannot take the others' results with it.
set -u
OUT=${OUT:?set OUT to a folder}
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
export STACKWARS_DB=$OUT/gpu.sqlite
sw="python3 -m stackwars"
step() {  # name, seconds, command...
  local name=$1 limit=$2; shift 2
  echo "=== $name ($(date -u +%H:%M:%S))"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; echo "=== $name exit $?"; tail -n 40 "$OUT/$name.log"
}
for what in "$@"; do case $what in
  facts) nvidia-smi -L; python3 -c 'import jax, torch; print(jax.__version__, torch.__version__)'
         step env 120 $sw env
         step answers 180 python3 benchmarks/gpu/record_answers.py ;;
  selftest) step selftest 520 $sw selftest --device gpu ;;
  peak) step peak 240 $sw env --peak --device gpu ;;
  blog-gpu) step blog-gpu 250 $sw run --suite seed-blog --device gpu --budget 2 --json "$OUT/blog-gpu.json" --label seed-blog-gpu ;;
  blog-cpu) step blog-cpu 420 $sw run --suite seed-blog --budget 2 --json "$OUT/blog-cpu.json" --label seed-blog-cpu ;;
  claims) step claims 230 $sw claims --builtin --only 'seed000-gpu-*,seed002-accelerator*' --repeat 2 --budget 2 --json "$OUT/claims.json" --markdown "$OUT/claims.md" ;;
  independent) step independent 100 python3 benchmarks/gpu/independent.py ;;
  *) echo "unknown step $what"; exit 2 ;;
esac; done
