#!/usr/bin/env bash
# Sharded data parallel against DDP (issue 22): 2 ranks x 1 thread of
# `loom train` with DDP, --fsdp shard_grad_op and --fsdp full_shard, for
# GPT-2 124M and a ~350M Llama (random weights, dropout 0, AdamW, batch 1 x
# 128 tokens), and the PyTorch peers (FSDP2 fully_shard and DDP over gloo,
# bench/fsdp_peer.py) when torch is installed. Per mode: each rank's peak RSS
# (GNU time's maximum resident set, the final save included) and rank 0's
# training peak (TrainPeakRssBytes), the step time (the median of rank 0's
# TrainStepTime over 1 + STEPS steps: no start-up, no first step),
# and the bytes each rank sent or received per step from lazy_metrics.json
# (AllReduceBytes, ReduceScatterBytes, AllGatherBytes) against the theory
# (DDP: all_reduce of 4N; ZeRO-2: reduce_scatter 4N + all_gather 4N; ZeRO-3:
# plus about 4N regathered for backward; N = parameters). The load average is
# printed beside every line. LOOM_GATHER_SCHEDULE=0 runs full_shard with the
# whole-step gathers (no per-layer regather).
# The runs alternate: each of ROUNDS rounds runs every configuration once
# (loom ddp, shard_grad_op, full_shard, then torch DDP and FSDP2), and the
# summary (bench/fsdp_summary.py) prints each configuration's medians and the
# median over rounds of the per-round ratios the goals name: full_shard's
# training peak and step time over DDP's, its tokens/s over torch FSDP2's.
#
# Usage: bench/fsdp_step.sh [BUILD_DIR=build] [STEPS=6] [MODELS="gpt2 llama"] [ROUNDS=3]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
LOOM="$ROOT/${1:-build}/loom"
STEPS=${2:-6}
MODELS=${3:-gpt2 llama}
ROUNDS=${4:-3}
OUT=$(mktemp -d /tmp/loom-fsdp-step.XXXXXX)
[[ -d $OUT ]] || { echo "fsdp_step: mktemp failed" >&2; exit 1; }
trap 'rm -rf "$OUT"' EXIT
GPT2=(--model_type gpt2 --config_overrides resid_pdrop=0,embd_pdrop=0,attn_pdrop=0)
LLAMA=(--model_type llama --config_overrides
       hidden_size=1024,intermediate_size=2816,num_hidden_layers=24,num_attention_heads=16,num_key_value_heads=16)
export LOOM_GATHER_SCHEDULE=${LOOM_GATHER_SCHEDULE:-1}

# The per-rank wrapper: GNU time writes that rank's peak RSS (KiB).
printf '#!/bin/sh\nexec /usr/bin/time -f %%M -o "%s/rss.$OMPI_COMM_WORLD_RANK" "$@"\n' "$OUT" \
  >"$OUT/rank_rss.sh"
chmod +x "$OUT/rank_rss.sh"

# run_loom STEPS MODE MODEL_ARGS...: one 2-rank `loom train`; prints its train_runtime (s).
run_loom() {
  local steps=$1 mode=$2
  shift 2
  local fs=()
  [[ $mode != ddp ]] && fs=(--fsdp "$mode")
  rm -rf "${OUT:?}/run" "${OUT:?}"/rss.*
  OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE mpirun --allow-run-as-root --oversubscribe \
    --bind-to none -x OMP_NUM_THREADS -x OMP_WAIT_POLICY -x LOOM_GATHER_SCHEDULE \
    -np 2 "$OUT/rank_rss.sh" "$LOOM" train "$@" \
    --tokenizer_name assets/tokenizers/gpt2 --train_file assets/corpora/austen/prideprejudice.txt \
    --block_size 128 --validation_split_percentage 1 --per_device_train_batch_size 1 \
    --max_steps "$steps" --logging_steps 1000 --optim adamw_torch --save_strategy no \
    --eval_strategy no --report_to none --device lazy --disable_tqdm "${fs[@]}" \
    --output_dir "$OUT/run" >"$OUT/log" 2>&1 || { tail -3 "$OUT/log" >&2; return 1; }
  python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['train_runtime'])" \
    "$OUT/run/train_results.json"
}

TSV="$OUT/runs.tsv"  # model, round, engine, mode, training peak MiB, step ms, tokens/s
HAVE_TORCH=0
python3 -c "import torch, transformers" 2>/dev/null && HAVE_TORCH=1
[[ $HAVE_TORCH == 1 ]] ||
  echo "PyTorch peer: skipped (python3 has no torch / transformers: scripts/setup_peers.sh)"
for model in $MODELS; do
  if [[ $model == gpt2 ]]; then M=("${GPT2[@]}"); else M=("${LLAMA[@]}"); fi
  for round in $(seq 1 "$ROUNDS"); do
    echo "== $model, round $round of $ROUNDS"
    for mode in ddp shard_grad_op full_shard; do
      tn=$(run_loom $((STEPS + 1)) "$mode" "${M[@]}") || { echo "loom  $model $mode: failed"; continue; }
      python3 bench/fsdp_report.py "$model" "$mode" "$OUT" "$STEPS" 0 "$tn" \
        "$(cut -d' ' -f1 /proc/loadavg)" "$round" "$TSV"
    done
    [[ $HAVE_TORCH == 1 ]] || continue
    for mode in ddp fsdp; do
      (unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
       OMP_WAIT_POLICY=PASSIVE python3 bench/fsdp_peer.py --model "$model" --mode "$mode" \
         --steps "$STEPS" 2>&1 | grep "^torch") | tee "$OUT/peer.log"
      python3 bench/fsdp_summary.py --peer "$model" "$round" "$mode" "$OUT/peer.log" "$TSV"
    done
  done
done
if [[ -s "$TSV" ]]; then
  python3 bench/fsdp_summary.py "$TSV"
else
  echo "fsdp_step: no run finished (no $TSV)" >&2
  exit 1
fi
