#!/usr/bin/env bash
# How much of the gradient all-reduce backward hides (issue 12): 2 ranks x
# 1 thread x 6 steps of the demo model (as bench/ddp_step.sh) per bucket cap
# (25 and 4 MiB) and per configuration — blocking (LOOM_DDP_OVERLAP=0, no
# progress thread), overlap with the MPI progress thread (the default), and
# overlap polled only between kernels (LOOM_MPI_PROGRESS_THREAD=0). Prints
# rank 0's AllReduceTime (start -> completion) and AllReduceWaitTime (time
# the executor thread blocked in wait()) from lazy_metrics.json, with the
# job's CPU seconds, wall time and the load average.
#
# Usage: bench/ddp_overlap.sh [BUILD_DIR=build]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
LOOM="$ROOT/${1:-build}/loom"
OUT=$(mktemp -d /tmp/loom-ddp-overlap.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
for cap in 25 4; do
for cfg in "blocking:LOOM_DDP_OVERLAP=0 LOOM_MPI_PROGRESS_THREAD=0" "overlap+thread:LOOM_DDP_OVERLAP=1" "overlap,poll-only:LOOM_MPI_PROGRESS_THREAD=0"; do
  name=${cfg%%:*}; envs=${cfg#*:}; out=$OUT/run
  rm -rf $out
  xs=(); for e in $envs; do xs+=(-x "$e"); done
  TIMEFORMAT='%U %S %R'
  t=$( { time OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS "${xs[@]}" -np 2 $LOOM train --model_type gpt2 \
    --config_overrides n_layer=4,n_embd=256,n_head=4,n_positions=128,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0 \
    --tokenizer_name assets/tokenizers/gpt2 --train_file assets/corpora/austen/prideprejudice.txt --block_size 128 \
    --validation_split_percentage 1 --per_device_train_batch_size 4 --max_steps 6 --logging_steps 1000 \
    --save_strategy no --eval_strategy no --report_to none --ddp_bucket_cap_mb $cap --device lazy --disable_tqdm \
    --output_dir $out >$OUT/log 2>&1; } 2>&1 )
  python3 - "$name" "$cap" "$out/lazy_metrics.json" "$t" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
name, cap, path, t, load = sys.argv[1:]
d = json.load(open(path))
tm = d["timers"]; c = d["counters"]
ar = tm["AllReduceTime"]["total_ns"] / 1e6; wt = tm["AllReduceWaitTime"]["total_ns"] / 1e6
u, s, r = map(float, t.split())
print(f"cap {cap:>2} MiB {name:18s} all-reduces {c['AllReduceCount']:3d}  AllReduceTime {ar:8.1f} ms  AllReduceWaitTime {wt:8.1f} ms  hidden {100*(1-wt/ar):5.1f}%  job cpu {u+s:6.1f} s wall {r:5.1f} s load {load}")
PY
done; done
