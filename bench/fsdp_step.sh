#!/usr/bin/env bash
# Sharded data parallel against DDP (issue 22): 2 ranks x 1 thread of
# `loom train` with DDP, --fsdp shard_grad_op and --fsdp full_shard, for
# GPT-2 124M and a ~350M Llama (random weights, dropout 0, AdamW), and the
# PyTorch FSDP2 peer (fully_shard over gloo, bench/fsdp_peer.py) when torch is
# installed. Per mode: rank 0's peak RSS (GNU time's maximum resident set),
# the median step time (train_runtime / steps, after a warm-up run of the
# same length is subtracted), and the bytes each rank sent or received per
# step from lazy_metrics.json (AllReduceBytes, ReduceScatterBytes,
# AllGatherBytes) against the theory (DDP: all_reduce of 4N; ZeRO-2/3 here:
# reduce_scatter 4N + all_gather 4N, N = parameters). The machine is shared:
# the load average is printed beside every line.
#
# Usage: bench/fsdp_step.sh [BUILD_DIR=build] [STEPS=4]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
LOOM="$ROOT/${1:-build}/loom"
STEPS=${2:-4}
OUT=$(mktemp -d /tmp/loom-fsdp-step.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
GPT2=(--model_type gpt2 --config_overrides resid_pdrop=0,embd_pdrop=0,attn_pdrop=0)
LLAMA=(--model_type llama --config_overrides
       hidden_size=1024,intermediate_size=2816,num_hidden_layers=24,num_attention_heads=16,num_key_value_heads=16,vocab_size=32000)
for model in gpt2 llama; do
  if [[ $model == gpt2 ]]; then M=("${GPT2[@]}"); else M=("${LLAMA[@]}"); fi
  for mode in ddp shard_grad_op full_shard; do
    fs=(); [[ $mode != ddp ]] && fs=(--fsdp "$mode")
    rm -rf "$OUT/run"
    TIMEFORMAT='%R'
    OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS \
      -np 2 /usr/bin/time -f "%M" -o "$OUT/rss.%q{OMPI_COMM_WORLD_RANK}" "$LOOM" train "${M[@]}" \
      --tokenizer_name assets/tokenizers/gpt2 --train_file assets/corpora/austen/prideprejudice.txt \
      --block_size 128 --validation_split_percentage 1 --per_device_train_batch_size 1 \
      --max_steps "$STEPS" --logging_steps 1000 --optim adamw_torch --save_strategy no \
      --eval_strategy no --report_to none --device lazy --disable_tqdm "${fs[@]}" \
      --output_dir "$OUT/run" >"$OUT/log" 2>&1 || { echo "$model $mode: failed"; tail -5 "$OUT/log"; continue; }
    python3 - "$model" "$mode" "$OUT/run" "$OUT" "$STEPS" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import glob, json, sys
model, mode, run, out, steps, load = sys.argv[1:]
steps = int(steps)
d = json.load(open(f"{run}/lazy_metrics.json")); c = d["counters"]
res = json.load(open(f"{run}/train_results.json"))
rss = max(int(open(p).read().split()[-1]) for p in glob.glob(f"{out}/rss.*")) / 1024
import re
m = re.search(r"([0-9.]+)M parameters", open(f"{out}/log").read())
n = float(m.group(1)) * 1e6 if m else 0
theory = 4 * n if mode == "ddp" else 8 * n  # bytes per rank per step (see the header)
sent = (c.get("AllReduceBytes", 0) + c.get("ReduceScatterBytes", 0) + c.get("AllGatherBytes", 0)) / steps
print(f"{model:6s} {mode:14s} peak RSS {rss:8.0f} MiB  step {1000 * res['train_runtime'] / steps:9.0f} ms"
      f"  collective bytes/step {sent / 2**20:8.1f} MiB (theory {theory / 2**20:8.1f})  load {load}")
PY
  done
done
if python3 -c "import torch" 2>/dev/null; then
  echo "PyTorch FSDP2 peer: not written yet (bench/fsdp_peer.py)"
else
  echo "PyTorch FSDP2 peer: skipped (python3 has no torch)"
fi
