#!/usr/bin/env bash
# Data-parallel training speed (issue 12): `loom train` under mpirun, W ranks
# x 1 thread, against PyTorch DDP over gloo (bench/ddp_peer.py), W x 1
# thread, in the same run, on the demo model (GPT-2, 4 layers, width 256,
# 4 heads, block 128, vocab 50257, dropout 0), batch 4 per rank, lazy device.
# loom's steady-state time per step is the difference of two runs' train_runtime
# (WARMUP and WARMUP + STEPS steps; compilation and start-up cancel out).
# Prints tokens/s of both, their ratio at 2 ranks, and the 1 -> 2 rank scaling.
#
# Also prints loom's CPU ms per step (user + sys of all ranks, from the same
# two runs), since the machine may be shared. Environment: DDP_BUCKET_MB
# (--ddp_bucket_cap_mb, default 25); LOOM_DDP_OVERLAP and
# LOOM_MPI_PROGRESS_THREAD reach the ranks when set (docs/distributed.md,
# "Overlap"), e.g. LOOM_DDP_OVERLAP=0 for the blocking path.
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
for v in LOOM_DDP_OVERLAP LOOM_MPI_PROGRESS_THREAD; do
  if [[ -n "${!v:-}" ]]; then MPIRUN+=(-x "$v"); fi
done
BUCKET_MB=${DDP_BUCKET_MB:-25}
export OMP_NUM_THREADS=1

# train_runtime (seconds) of a `loom train` on $1 ranks for $2 steps; its
# CPU seconds (user + sys of every rank) go to $WORK/cpu-$1-$2.
loom_runtime() {
  local ranks=$1 steps=$2 out="$WORK/out-$1-$2"
  local TIMEFORMAT='%U %S'
  { time "${MPIRUN[@]}" -np "$ranks" "$LOOM" train --model_type gpt2 \
    --config_overrides n_layer=4,n_embd=256,n_head=4,n_positions=128,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0 \
    --tokenizer_name "$ROOT/assets/tokenizers/gpt2" \
    --train_file "$ROOT/assets/corpora/austen/prideprejudice.txt" --block_size $T \
    --validation_split_percentage 1 --per_device_train_batch_size $B --max_steps "$steps" \
    --logging_steps 1000 --save_strategy no --eval_strategy no --report_to none \
    --ddp_bucket_cap_mb "$BUCKET_MB" \
    --device lazy --disable_tqdm --output_dir "$out" >"$WORK/log-$1-$2" 2>&1; } \
    2>"$WORK/cpu-$1-$2" || { cat "$WORK/log-$1-$2" >&2; exit 1; }
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['train_runtime'])" \
    "$out/train_results.json"
}

loom_tps() {
  local ranks=$1 t1 t2
  t1=$(loom_runtime "$ranks" "$WARMUP")
  t2=$(loom_runtime "$ranks" $((WARMUP + STEPS)))
  python3 -c "print($STEPS * $ranks * $B * $T / ($t2 - $t1))"
}

# CPU ms per step of the job on $1 ranks (the difference of the two runs).
loom_cpu_ms() {
  python3 - "$WORK/cpu-$1-$WARMUP" "$WORK/cpu-$1-$((WARMUP + STEPS))" "$STEPS" <<'PY'
import sys
cpu = [sum(map(float, open(p).read().split()[-2:])) for p in sys.argv[1:3]]
print(f"{(cpu[1] - cpu[0]) * 1000 / int(sys.argv[3]):.0f}")
PY
}

peer_tps() {
  python3 "$ROOT/bench/ddp_peer.py" --world "$1" --batch_size $B --block_size $T \
    --steps "$STEPS" --warmup "$WARMUP" | tail -1 |
    python3 -c "import json,sys; print(json.loads(sys.stdin.read())['tokens_per_second'])"
}

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
L1=$(loom_tps 1); C1=$(loom_cpu_ms 1); P1=$(peer_tps 1)
L2=$(loom_tps 2); C2=$(loom_cpu_ms 2); P2=$(peer_tps 2)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "loom CPU ms per step (all ranks, user + sys): 1 rank $C1, 2 ranks $C2 (buckets ${BUCKET_MB} MiB)"
python3 - "$L1" "$L2" "$P1" "$P2" <<'PY'
import sys
l1, l2, p1, p2 = map(float, sys.argv[1:])
print(f"loom  1 rank : {l1:10.0f} tokens/s")
print(f"loom  2 ranks: {l2:10.0f} tokens/s  (scaling 1 -> 2: {l2 / l1:.2f}x)")
print(f"torch 1 rank : {p1:10.0f} tokens/s")
print(f"torch 2 ranks: {p2:10.0f} tokens/s  (scaling 1 -> 2: {p2 / p1:.2f}x)")
print(f"loom / torch DDP at 2 ranks x 1 thread: {l2 / p2:.2f}x")
PY
