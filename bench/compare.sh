#!/usr/bin/env bash
# bench/compare.sh: loom against every peer, alternating, in ROUNDS rounds
# (issue 24). Each round runs each job once; a job is one step bench
# (bench_gpt2_step / bench_bert_step), which times loom lazy and then each
# peer (PyTorch eager, torch.compile, JAX jit, PyTorch/XLA, loom lazy:xla)
# in one process on the same threads; the finetune job runs
# bench/finetune_trainer.sh (loom train, then the HF Trainer). Single runs on
# a shared machine swing ±30 %, so bench/compare_summary.py reports each
# implementation's median ms/step and the median over rounds of the
# per-round ratio peer / loom (> 1: loom is faster), the roofline's fraction
# of the measured GEMM peak, bf16 against loom's own fp32 of the same round,
# and the fine-tune's samples/s ratio.
#
# Usage: bench/compare.sh [BUILD_DIR=build] [ROUNDS=3] [JOBS="demo gpt2 bert bf16"]
#                         [THREADS=2]
# Jobs: demo (the demo model's step: GPT-2 4 x 256, B8 T128), gpt2 (124M,
# B4 T256), bert (MiniLM shape, B16 T64), bf16 (the demo step under
# AutocastGuard / torch.autocast; JAX and PyTorch/XLA left out), bert_bf16, finetune (needs
# scripts/fetch_finetune.sh; MAX_STEPS env, default -1 = 3 epochs).
# Raw logs and results.tsv go to $OUT (default: a fresh /tmp folder, printed).
# Peers need scripts/setup_peers.sh; a missing peer prints a skip line.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
JOBS=${3:-"demo gpt2 bert bf16"}
THREADS=${4:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$(mktemp -d /tmp/loom-compare.XXXXXX)}
mkdir -p "$OUT"
STEPS=${STEPS:-5}
WARMUP=${WARMUP:-2}

demo_shape=(--n_layer 4 --n_embd 256 --n_head 4 --block_size 128 --batch_size 8)
gpt2_shape=(--n_layer 12 --n_embd 768 --n_head 12 --block_size 256 --batch_size 4)
common=(--threads "$THREADS" --steps "$STEPS" --warmup "$WARMUP" --loom_eager 0 --compile 1)

run_job() {  # job round -> $OUT/<job>.<round>.log
  local job=$1 round=$2 log="$OUT/$1.$2.log"
  case "$job" in
    demo) "$ROOT/$BUILD/bench_gpt2_step" "${demo_shape[@]}" "${common[@]}" ;;
    gpt2) "$ROOT/$BUILD/bench_gpt2_step" "${gpt2_shape[@]}" "${common[@]}" ;;
    bf16) "$ROOT/$BUILD/bench_gpt2_step" "${demo_shape[@]}" "${common[@]}" --bf16 1 \
            --xla 0 --jax 0 --torch_xla 0 ;;
    bert) "$ROOT/$BUILD/bench_bert_step" "${common[@]}" ;;
    bert_bf16) "$ROOT/$BUILD/bench_bert_step" "${common[@]}" --bf16 1 --jax 0 --torch_xla 0 ;;
    finetune) bash "$ROOT/bench/finetune_trainer.sh" "$BUILD" "${MAX_STEPS:--1}" 0 "$THREADS" ;;
    *) echo "compare: unknown job $job" >&2; return 2 ;;
  esac >"$log" 2>&1 || { echo "compare: $job round $round failed (log $log)" >&2; tail -5 "$log" >&2; }
}

echo "lscpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs," \
  "flags: $(grep -o -w -E 'avx2|avx512f|avx512_bf16|avx512_vnni|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "compare: $ROUNDS rounds of: $JOBS; logs in $OUT"
for round in $(seq 1 "$ROUNDS"); do
  for job in $JOBS; do
    start=$(date +%s)
    echo "round $round: $job (load $(cut -d' ' -f1 /proc/loadavg))"
    run_job "$job" "$round"
    echo "  $(($(date +%s) - start)) s"
  done
done
python3 "$ROOT/bench/compare_summary.py" "$OUT" | tee "$OUT/summary.txt"
