#!/usr/bin/env bash
# Data-parallel training speed (issue 12): `loom train` under mpirun, W ranks
# x 1 thread, against PyTorch DDP over gloo (bench/ddp_peer.py), W x 1
# thread, in the same run, on the demo model (GPT-2, 4 layers, width 256,
# 4 heads, block 128, vocab 50257, dropout 0), batch 4 per rank, lazy device.
# loom's steady-state time per step is the difference of two runs' train_runtime
# (WARMUP and WARMUP + STEPS steps; compilation and start-up cancel out).
# Prints tokens/s of both, their ratio at 2 ranks, and the 1 -> 2 rank scaling.
#
# Usage: bench/ddp_step.sh [BUILD_DIR=build] [STEPS=10] [WARMUP=3]
# Needs mpirun (openmpi-bin), a loom built with MPI, python3 with torch + transformers.
set -euo pipefail
BUILD=${1:-build}
STEPS=${2:-10}
WARMUP=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOOM="$ROOT/$BUILD/loom"
WORK=$(mktemp -d /tmp/loom-ddp-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
B=4 T=128
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS)
export OMP_NUM_THREADS=1

# train_runtime (seconds) of a `loom train` on $1 ranks for $2 steps.
loom_runtime() {
  local ranks=$1 steps=$2 out="$WORK/out-$1-$2"
  "${MPIRUN[@]}" -np "$ranks" "$LOOM" train --model_type gpt2 \
    --config_overrides n_layer=4,n_embd=256,n_head=4,n_positions=128,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0 \
    --tokenizer_name "$ROOT/assets/tokenizers/gpt2" \
    --train_file "$ROOT/assets/corpora/austen/prideprejudice.txt" --block_size $T \
    --validation_split_percentage 1 --per_device_train_batch_size $B --max_steps "$steps" \
    --logging_steps 1000 --save_strategy no --eval_strategy no --report_to none \
    --device lazy --disable_tqdm --output_dir "$out" >"$WORK/log-$1-$2" 2>&1 ||
    { cat "$WORK/log-$1-$2" >&2; exit 1; }
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['train_runtime'])" \
    "$out/train_results.json"
}

loom_tps() {
  local ranks=$1 t1 t2
  t1=$(loom_runtime "$ranks" "$WARMUP")
  t2=$(loom_runtime "$ranks" $((WARMUP + STEPS)))
  python3 -c "print($STEPS * $ranks * $B * $T / ($t2 - $t1))"
}

peer_tps() {
  python3 "$ROOT/bench/ddp_peer.py" --world "$1" --batch_size $B --block_size $T \
    --steps "$STEPS" --warmup "$WARMUP" | tail -1 |
    python3 -c "import json,sys; print(json.loads(sys.stdin.read())['tokens_per_second'])"
}

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
L1=$(loom_tps 1); P1=$(peer_tps 1)
L2=$(loom_tps 2); P2=$(peer_tps 2)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$L1" "$L2" "$P1" "$P2" <<'PY'
import sys
l1, l2, p1, p2 = map(float, sys.argv[1:])
print(f"loom  1 rank : {l1:10.0f} tokens/s")
print(f"loom  2 ranks: {l2:10.0f} tokens/s  (scaling 1 -> 2: {l2 / l1:.2f}x)")
print(f"torch 1 rank : {p1:10.0f} tokens/s")
print(f"torch 2 ranks: {p2:10.0f} tokens/s  (scaling 1 -> 2: {p2 / p1:.2f}x)")
print(f"loom / torch DDP at 2 ranks x 1 thread: {l2 / p2:.2f}x")
PY
