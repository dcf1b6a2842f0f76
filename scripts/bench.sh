#!/usr/bin/env bash
# Runs every whole-program benchmark of agentbox and prints medians and ratios
# against baselines measured in the same run. Called by `make bench` after the
# Go micro-benchmarks. Each sub-script installs what it needs (e.g. bubblewrap).
set -euo pipefail
cd "$(dirname "$0")/.."
for s in scripts/bench-run.sh scripts/bench-exec.sh scripts/bench-scripts.sh scripts/bench-audit.sh scripts/bench-corpus.sh; do
  if [ -x "$s" ]; then
    echo "== $s"
    "$s"
  else
    echo "== $s: not present, skipped"
  fi
done
