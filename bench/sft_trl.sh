#!/usr/bin/env bash
# `loom train --task sft` against TRL's SFTTrainer (bench/sft_trl_peer.py) on the same random
# Qwen3-shaped model (the real 151,936-row vocabulary, LAYERS x HIDDEN) and the same
# conversations (tests/fixtures/sft/loss_rows.jsonl, repeated), full fine-tuning, unpacked,
# STEPS steps of BATCH rows, THREADS threads each, in ROUNDS alternating rounds. Prints each
# round's train_runtime of both, their ratio (TRL / loom: > 1 means loom is faster), the median
# ratio, and both first and last losses; lscpu's model and the load first.
#
# Usage: bench/sft_trl.sh [BUILD_DIR=build] [ROUNDS=3] [STEPS=10] [BATCH=4] [LAYERS=2]
#        [HIDDEN=256] [THREADS=2] [PYTHON=/tmp/trlvenv/bin/python]
# Needs ../shared/data/tokenizers/qwen2/tokenizer.json and a python with torch (CPU),
# transformers, trl and datasets.
set -euo pipefail
BUILD=${1:-build}; ROUNDS=${2:-3}; STEPS=${3:-10}; BATCH=${4:-4}; LAYERS=${5:-2}
HIDDEN=${6:-256}; THREADS=${7:-2}; PY=${8:-/tmp/trlvenv/bin/python}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOOM="$ROOT/$BUILD/loom"
SHARED=${LOOM_SHARED_DATA:-$ROOT/../shared/data}
WORK=$(mktemp -d /tmp/loom-sft-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
for _ in 1 2 3 4 5 6 7 8; do cat "$ROOT/tests/fixtures/sft/loss_rows.jsonl"; done >"$WORK/data.jsonl"
"$PY" "$ROOT/bench/sft_trl_peer.py" make "$WORK/model" "$SHARED/tokenizers/qwen2/tokenizer.json" \
  "$ROOT/tests/fixtures/sft/qwen2_tokenizer_config.json" "$LAYERS" "$HIDDEN"
cp "$ROOT/tests/fixtures/sft/chatml_generation.jinja" "$WORK/model/chat_template.jinja"
echo "lscpu: $(lscpu | sed -n 's/^Model name: *//p'); flags: $(grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
ratios=()
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
  OMP_NUM_THREADS=$THREADS "$LOOM" train --task sft --model_name_or_path "$WORK/model" \
    --train_file "$WORK/data.jsonl" --max_length 128 --per_device_train_batch_size "$BATCH" \
    --max_steps "$STEPS" --learning_rate 1e-4 --logging_steps 1 --save_strategy no \
    --output_dir "$WORK/loom" --overwrite_output_dir --device lazy --disable_tqdm \
    --seed 42 >"$WORK/loom.log" 2>&1 || { cat "$WORK/loom.log" >&2; exit 1; }
  loom_rt=$(sed -n "s/.*'train_runtime': '\([0-9.]*\)'.*/\1/p" "$WORK/loom.log" | tail -1)
  loom_losses=$(sed -n "s/.*'loss': '\([0-9.]*\)'.*/\1/p" "$WORK/loom.log" | sed -n '1p;$p' | tr '\n' ' ')
  trl=$(OMP_NUM_THREADS=$THREADS "$PY" "$ROOT/bench/sft_trl_peer.py" train "$WORK/model" \
    "$WORK/data.jsonl" "$WORK/trl" "$STEPS" "$BATCH" 128 "$THREADS" 2>"$WORK/trl.log" | tail -1) ||
    { cat "$WORK/trl.log" >&2; exit 1; }
  trl_rt=$(echo "$trl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["train_runtime"])')
  trl_losses=$(echo "$trl" | python3 -c 'import json,sys; l=json.load(sys.stdin)["losses"]; print("%.4f %.4f" % (l[0], l[-1]))')
  ratio=$(python3 -c "print('%.3f' % ($trl_rt / $loom_rt))")
  ratios+=("$ratio")
  echo "round $r: loom ${loom_rt} s (loss first/last ${loom_losses}), TRL ${trl_rt} s (${trl_losses}), TRL/loom ${ratio}x"
done
echo "median TRL/loom: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')x over ${ROUNDS} rounds (${LAYERS} layers x ${HIDDEN}, vocab 151936, batch ${BATCH} x <=128 tokens, ${STEPS} steps, ${THREADS} threads)"
