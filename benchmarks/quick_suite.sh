#!/usr/bin/env bash
# Benchmark: wall time of the default run (the quick suite, every installed stack).
# Target: about 90 s on the reference machine (2 cores). Run it on an otherwise idle machine;
# record the result in docs/results.md.
set -euo pipefail
db=$(mktemp -d)/quick.sqlite
start=$(date +%s.%N)
stackwars run --db "$db" --quiet "$@"
end=$(date +%s.%N)
echo "quick suite wall time: $(echo "$end - $start" | bc) s (results in $db)"
