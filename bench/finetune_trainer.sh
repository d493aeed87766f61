#!/usr/bin/env bash
# The README's fine-tune job (scripts/finetune.sh: MiniLM, BertForSequenceClassification,
# 3,200 sentences, batch 16 x 64 tokens, 3 epochs, evaluation on start and per epoch)
# through `loom train` and through the Hugging Face Trainer (bench/finetune_trainer_peer.py,
# same data and settings), in the same run, THREADS threads each. Prints both
# train_samples_per_second (train_runtime includes the evaluations during training, in both),
# their ratio (issue 16's goal: >= 1.5x) and both final accuracies.
#
# Usage: bench/finetune_trainer.sh [BUILD_DIR=build] [MAX_STEPS=-1 (the 3 epochs)] [BF16=0]
#        [THREADS=2]
# Needs assets/finetune/ (bash scripts/fetch_finetune.sh) and python3 with torch +
# transformers + accelerate (bash scripts/setup_peers.sh). OMP_NUM_THREADS=THREADS for loom;
# the peer sets its own best set-up (bench/peer_common.py).
set -euo pipefail
BUILD=${1:-build}
MAX_STEPS=${2:--1}
BF16=${3:-0}
THREADS=${4:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOOM="$ROOT/$BUILD/loom"
WORK=$(mktemp -d /tmp/loom-finetune-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
[[ -f "$ROOT/assets/finetune/data/train.csv" ]] ||
  { echo "finetune_trainer: run bash scripts/fetch_finetune.sh first" >&2; exit 2; }
bf16_flag=()
[[ "$BF16" == 1 ]] && bf16_flag=(--bf16 true)

echo "lscpu: $(lscpu | sed -n 's/^Model name: *//p'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS=$THREADS "$LOOM" train --task text-classification \
  --model_name_or_path "$ROOT/assets/finetune/minilm" \
  --train_file "$ROOT/assets/finetune/data/train.csv" \
  --validation_file "$ROOT/assets/finetune/data/eval.csv" \
  --text_column sentence --label_column label --max_seq_length 64 --pad_to_max_length true \
  --output_dir "$WORK/loom" --overwrite_output_dir true --device lazy \
  --per_device_train_batch_size 16 --per_device_eval_batch_size 50 \
  --learning_rate 5e-5 --num_train_epochs 3 --max_steps "$MAX_STEPS" --warmup_steps 0.1 \
  --weight_decay 0.01 --logging_steps 25 --eval_strategy epoch --eval_on_start true \
  --do_eval true --save_strategy no --seed 42 --disable_tqdm "${bf16_flag[@]}" \
  >"$WORK/loom.log" 2>&1 || { cat "$WORK/loom.log" >&2; exit 1; }
grep -E "precision|openmp" "$WORK/loom.log" | head -3 || true
python3 "$ROOT/bench/finetune_trainer_peer.py" --root "$ROOT" --output_dir "$WORK/hf" \
  --threads "$THREADS" --max_steps "$MAX_STEPS" --bf16 "$BF16" >"$WORK/hf.log" 2>&1 ||
  { cat "$WORK/hf.log" >&2; exit 1; }
python3 - "$WORK/loom" "$WORK/hf.log" <<'EOF'
import json, sys
loom = json.load(open(sys.argv[1] + "/train_results.json"))
evals = [e for e in json.load(open(sys.argv[1] + "/trainer_state.json"))["log_history"]
         if "eval_accuracy" in e]
hf = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
print("peer: torch %s, transformers %s, %d threads, optim %s" %
      (hf["torch"], hf["transformers"], hf["threads"], hf["optim"]))
print("%-22s %14s %12s %10s" % ("", "train_runtime s", "samples/s", "accuracy"))
print("%-22s %14.1f %12.2f %10.4f" % ("loom train", loom["train_runtime"],
      loom["train_samples_per_second"], evals[-1]["eval_accuracy"]))
print("%-22s %14.1f %12.2f %10.4f" % ("HF Trainer", hf["train_runtime"],
      hf["train_samples_per_second"], hf["eval_accuracy"]))
print("loom / HF Trainer train samples/s: %.2fx" %
      (loom["train_samples_per_second"] / hf["train_samples_per_second"]))
EOF
