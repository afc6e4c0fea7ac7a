#!/usr/bin/env bash
# The example report docs/ links: seed 000's suite (seed-blog) on every stack, written by
# 'stackwars report' as one self-contained HTML file, plus a screenshot of its first section
# for the README (headless Chromium, Debian's package). About 6 minutes on the reference
# machine (2 cores); run it on an otherwise idle machine. Extra arguments go to 'stackwars run'.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
stackwars run --suite seed-blog --quiet --db "$scratch/runs.sqlite" "$@"
stackwars report latest --db "$scratch/runs.sqlite" --out docs/example-report.html
if command -v chromium >/dev/null; then
    chromium --headless --disable-gpu --no-sandbox --hide-scrollbars --window-size=1280,1000 \
        --screenshot="$PWD/docs/report-screenshot.png" "file://$PWD/docs/example-report.html" \
        2>/dev/null
fi
ls -l docs/example-report.html docs/report-screenshot.png 2>/dev/null || true
