#!/usr/bin/env bash
# out/device/run.sh: the one prepared call on a GPU machine lent for a few
# minutes (issue 40). Runs the device bundle beside it (scripts/device_bundle.sh)
# and writes to $OUT (default ./run-out) at most 8 files: summary.txt (the
# table for bench/RESULTS.md) and one log per part:
#   info      `loom info`: the plugin, its PJRT C API version, the device
#   check     10 demo steps (GPT-2 4x256, dropout on) on lazy:xla and on
#             lazy:cpu, same seed (same Philox bits): losses within 1e-3
#   peak      the card's bf16 matmul peak, measured now (jax; peer/bf16_matmul_peak.py)
#   gpt2      GPT-2 124M, --bf16, B 16 x T 1024 on lazy:xla: step time
#             (TrainStepTime median), tokens/s, MFU against `peak`, XLA's
#             planned peak device memory, first compile cold (empty
#             LOOM_CACHE_DIR); then a second process on the same cache: its
#             compile (from the on-disk executables) and time to first step
#   jax       the same step as one jax.jit program (peer/gpt2_step_jax_peer.py --bf16 1)
#   generate  `loom generate` tokens/s from the model the gpt2 part saved
# Each part runs under `timeout`, clipped to what is left of LOOM_RUN_BUDGET
# seconds (default 540: the device call's limit is 600); a part with under
# 20 s left is skipped and says so. Parts run in the order above.
#
# The plan when the first try runs long: LOOM_RUN_PARTS="info check gpt2"
# (drop peak/jax/generate: about half the time), or LOOM_RUN_STEPS=8 (fewer
# timed GPT-2 steps), or LOOM_RUN_PARTS=gpt2 alone.
#
# Environment: PJRT_DEVICE (default CUDA; CPU for the CPU plugin),
# LOOM_PJRT_PLUGIN (the plugin .so; else found in python3's site-packages:
# jax_plugins/xla_cuda*/xla_cuda_plugin.so for CUDA), LOOM_RUN_PARTS,
# LOOM_RUN_BUDGET, LOOM_RUN_STEPS (default 20), LOOM_RUN_REDUCED=1 (tiny
# sizes, for a test on a CPU: scripts/device_bundle_check.sh), OUT.
# Assumes: bash, python3 (the GPU image's, with jax for peak and jax), coreutils.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$PWD/run-out}"
mkdir -p "$out"
export PJRT_DEVICE="${PJRT_DEVICE:-CUDA}"
parts="${LOOM_RUN_PARTS:-info check peak gpt2 jax generate}"
budget="${LOOM_RUN_BUDGET:-540}"
steps="${LOOM_RUN_STEPS:-20}"
reduced="${LOOM_RUN_REDUCED:-0}"
work="$(mktemp -d "${TMPDIR:-/tmp}/loom-run.XXXXXX")"
trap 'rm -rf "$work"' EXIT
loom="$here/loom"
summary="$out/summary.txt"
start=$SECONDS

# Sizes: the issue's, or tiny ones that run in seconds on a CPU.
if [[ "$reduced" == "1" ]]; then
  demo_cfg="n_layer=1,n_embd=32,n_head=2,n_positions=32"; demo_block=32; demo_batch=2; demo_steps=2
  gpt2_cfg="n_layer=1,n_embd=64,n_head=2,n_positions=64"; gpt2_block=64; gpt2_batch=2
  steps=3; peak_n=512; gen_tokens=8
else
  demo_cfg="n_layer=4,n_embd=256,n_head=4,n_positions=128"; demo_block=128; demo_batch=8; demo_steps=10
  gpt2_cfg="n_layer=12,n_embd=768,n_head=12,n_positions=1024"; gpt2_block=1024; gpt2_batch=16
  peak_n=8192; gen_tokens=200
fi
corpus="$here/data/austen/prideprejudice.txt"
tokenizer="$here/data/gpt2"

say() { echo "$*" >>"$summary"; }

# part NAME MAX_SECONDS FUNCTION: runs FUNCTION with its output in
# $out/NAME.log under timeout (MAX_SECONDS, at most what the budget has left).
part() {
  local name="$1" max="$2" fn="$3"
  [[ " $parts " == *" $name "* ]] || return 0
  local left=$((budget - (SECONDS - start)))
  if ((left < 20)); then
    say "$name: skipped (${left} s of LOOM_RUN_BUDGET=$budget left)"
    return 0
  fi
  local limit=$((max < left ? max : left)) t0=$SECONDS status=0
  echo "== $name (limit ${limit} s)" >>"$out/$name.log"
  echo "[$((SECONDS - start)) s] $name (limit ${limit} s)"
  LOOM_PART_DEADLINE=$((SECONDS + limit)) "$fn" >>"$out/$name.log" 2>&1 || status=$?
  local took=$((SECONDS - t0))
  if ((status == 124 || status == 137)); then
    say "$name: TIMEOUT after ${took} s (limit ${limit} s); see $name.log"
  elif ((status != 0)); then
    say "$name: FAILED (exit $status) after ${took} s; last lines of $name.log:"
    tail -n 5 "$out/$name.log" | sed 's/^/    /' >>"$summary"
  else
    say "$name: done in ${took} s"
  fi
  return 0
}
# limited COMMAND...: COMMAND under timeout, until the running part's deadline.
limited() { timeout -k 10 $((LOOM_PART_DEADLINE - SECONDS > 1 ? LOOM_PART_DEADLINE - SECONDS : 1)) "$@"; }

# The plugin: LOOM_PJRT_PLUGIN, else the device's wheel in python3's
# site-packages (loom's own discovery looks there too; this names it up front).
find_plugin() {
  [[ -n "${LOOM_PJRT_PLUGIN:-}" ]] && return 0
  [[ "$PJRT_DEVICE" == "CUDA" || "$PJRT_DEVICE" == "GPU" ]] || return 0
  local found
  found="$(python3 - <<'EOF' 2>/dev/null
import glob, os, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
for d in dirs:
    for f in sorted(glob.glob(os.path.join(d, "jax_plugins", "xla_cuda*", "xla_cuda_plugin.so")),
                    reverse=True):  # xla_cuda13 before xla_cuda12
        print(f)
        raise SystemExit
EOF
)"
  [[ -n "$found" ]] && export LOOM_PJRT_PLUGIN="$found"
  # The CUDA libraries of the nvidia-* wheels beside it (cuBLAS, cuDNN, ...):
  # JAX finds them from Python; a process of our own names them to the loader.
  local libs
  libs="$(python3 - <<'EOF' 2>/dev/null
import glob, os, site
for d in site.getsitepackages():
    for lib in sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib"))):
        print(lib)
EOF
)"
  [[ -n "$libs" ]] && export LD_LIBRARY_PATH="$(echo "$libs" | paste -sd:)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  return 0
}

run_info() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  echo "plugin: ${LOOM_PJRT_PLUGIN:-(found by loom)}"
  limited "$loom" info
}

# train_demo DEVICE DIR: the demo model, dropout on, one loss per step.
train_demo() {
  limited "$loom" train --task causal-lm --model_type gpt2 --config_overrides "$demo_cfg" \
    --tokenizer_name "$tokenizer" --train_file "$corpus" --block_size "$demo_block" \
    --per_device_train_batch_size "$demo_batch" --max_steps "$demo_steps" --logging_steps 1 \
    --learning_rate 1e-3 --seed 42 --save_strategy no --device "$1" --output_dir "$2" \
    --overwrite_output_dir --disable_tqdm
}
run_check() {
  train_demo lazy:xla "$work/check_xla" || return $?
  train_demo lazy "$work/check_cpu" || return $?
  python3 - "$work/check_xla/trainer_state.json" "$work/check_cpu/trainer_state.json" "$summary" <<'EOF'
import json, sys
def losses(path):
    return [e["loss"] for e in json.load(open(path))["log_history"] if "loss" in e]
x, c = losses(sys.argv[1]), losses(sys.argv[2])
worst = max(abs(a - b) for a, b in zip(x, c)) if x and len(x) == len(c) else float("inf")
ok = worst <= 1e-3
lines = ["check: %d steps lazy:xla vs lazy:cpu, max |loss difference| %.2e: %s" %
         (len(x), worst, "PASS" if ok else "FAIL (over 1e-3)")]
lines += ["  step %2d  xla %.6f  cpu %.6f" % (i + 1, a, b) for i, (a, b) in enumerate(zip(x, c))]
print("\n".join(lines))
open(sys.argv[3], "a").write(lines[0] + "\n")
sys.exit(0 if ok else 1)
EOF
}

run_peak() {
  limited python3 "$here/peer/bf16_matmul_peak.py" --n "$peak_n" | tee "$work/peak.out"
  local status=${PIPESTATUS[0]}
  ((status == 3)) && { say "peak: skipped (no jax in python3)"; return 0; }
  ((status == 0)) || return $status
  tail -n 1 "$work/peak.out" >"$work/peak.json"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print("peak: bf16 matmul %dx%dx%d on %s: %.3g TFLOP/s (jax %s)" % (d["n"], d["n"], d["n"],
      d["device"], d["tflops"], d["jax"]))' "$work/peak.json" | tee -a "$summary"
}

# train_gpt2 DIR STEPS: GPT-2 124M (or the reduced one) under --bf16 on lazy:xla;
# one logged loss at the end (a loss read each step would make the host wait
# for the device every step, and the device for the host's next trace).
train_gpt2() {
  limited "$loom" train --task causal-lm --model_type gpt2 --config_overrides "$gpt2_cfg" \
    --tokenizer_name "$tokenizer" --train_file "$corpus" --block_size "$gpt2_block" \
    --per_device_train_batch_size "$gpt2_batch" --max_steps "$2" --logging_steps "$2" \
    --learning_rate 1e-4 --seed 42 --bf16 --save_strategy no --device lazy:xla \
    --output_dir "$1" --overwrite_output_dir --disable_tqdm
}
run_gpt2() {
  export LOOM_CACHE_DIR="$work/cache"
  local t0 t1
  t0=$EPOCHREALTIME
  train_gpt2 "$work/gpt2" "$steps" || return $?
  echo "cold process: $t0 -> $EPOCHREALTIME (seconds since the epoch)"
  # A second process on the same cache: one step, compiled from the disk.
  t0=$EPOCHREALTIME
  train_gpt2 "$work/gpt2_cached" 1 || return $?
  t1=$EPOCHREALTIME
  python3 - "$work" "$t0" "$t1" "$gpt2_batch" "$gpt2_block" "$gpt2_cfg" "$summary" <<'EOF'
import json, os, sys
work, t0, t1, batch, block, cfg, summary = sys.argv[1:]
cfg = dict(kv.split("=") for kv in cfg.split(","))
L, C = int(cfg["n_layer"]), int(cfg["n_embd"])
V, T, B = 50257, int(block), int(batch)
m = json.load(open(os.path.join(work, "gpt2", "lazy_metrics.json")))
w = json.load(open(os.path.join(work, "gpt2_cached", "lazy_metrics.json")))
def timer(d, name, key="median"):
    t = d.get("timers", {}).get(name) or {}
    if key == "median":
        return t.get("percentiles", {}).get("50%", 0) / 1e6
    return t.get(key, 0) / 1e6
def counter(d, name):
    return d.get("counters", {}).get(name, 0)
step_ms = timer(m, "TrainStepTime")
tokens = B * T
# Model FLOPs per token: 6 x the parameters in matmuls (12 L C^2 + the tied
# head V C) + 12 L C T for attention (llm.c's and PaLM's MFU convention).
flops = (6 * (12 * L * C * C + V * C) + 12 * L * C * T) * tokens
peak = 0.0
try:
    peak = json.load(open(os.path.join(work, "peak.json")))["tflops"]
except Exception:
    pass
achieved = flops / (step_ms / 1e3) / 1e12 if step_ms else 0.0
planned = max((e.get("planned_peak_bytes", 0) for e in m.get("executables", {}).values()),
              default=0)
lines = [
    "gpt2: L%d C%d B%d T%d bf16 lazy:xla: step %.1f ms (median TrainStepTime), %.0f tokens/s, "
    "%.1f TFLOP/s model FLOPs%s" % (L, C, B, T, step_ms, tokens / (step_ms / 1e3) if step_ms else 0,
                                    achieved, ", MFU %.1f%% of the measured bf16 peak %.0f TFLOP/s"
                                    % (100 * achieved / peak, peak) if peak else " (no peak measured)"),
    "gpt2: HostTime %.2f ms/step, ExecuteTime %.1f ms, ExecutorIdleTime %.2f ms (medians), "
    "XLA-planned peak device memory %.2f GiB" % (timer(m, "HostTime"), timer(m, "ExecuteTime"),
                                                 timer(m, "ExecutorIdleTime"), planned / 2**30),
    "gpt2: first compile cold: CompileTime %.1f s (XlaCompileTime %.1f s, %d XLA compiles)" % (
        timer(m, "CompileTime", "total_ns") / 1e3, timer(m, "XlaCompileTime", "total_ns") / 1e3,
        counter(m, "XlaCompile")),
    "gpt2: second process on the disk cache: CompileTime %.2f s, XlaCompile %d, "
    "XlaPersistentCacheHit %d; time to first step (process wall) %.1f s" % (
        timer(w, "CompileTime", "total_ns") / 1e3, counter(w, "XlaCompile"),
        counter(w, "XlaPersistentCacheHit"), float(t1) - float(t0)),
]
print("\n".join(lines))
open(summary, "a").write("\n".join(lines) + "\n")
EOF
}

run_jax() {
  local flags=(--n_layer 12 --n_embd 768 --n_head 12 --block_size "$gpt2_block" --batch_size "$gpt2_batch")
  [[ "$reduced" == "1" ]] && flags=(--n_layer 1 --n_embd 64 --n_head 2 --block_size "$gpt2_block" --batch_size "$gpt2_batch")
  limited python3 "$here/peer/gpt2_step_jax_peer.py" "${flags[@]}" --steps "$steps" --warmup 2 \
    --dropout 0 --bf16 1 | tee "$work/jax.out"
  local status=${PIPESTATUS[0]}
  ((status == 3)) && { say "jax: skipped (no jax in python3)"; return 0; }
  ((status == 0)) || return $status
  tail -n 1 "$work/jax.out" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
print("jax: %s jit on %s: step %.1f ms (median), %.0f tokens/s, compile %.1f s" % (
    d["library"], d["backend"], d["median_ms"], d["tokens"] / (d["median_ms"] / 1e3),
    d["compile_ms"] / 1e3))' | tee -a "$summary"
}

run_generate() {
  [[ -d "$work/gpt2" ]] || { say "generate: skipped (the gpt2 part saved no model)"; return 0; }
  limited "$loom" generate --model_name_or_path "$work/gpt2" --prompt "It is a truth" \
    --max_new_tokens "$gen_tokens" --device lazy:xla 2>&1 | tee "$work/generate.out"
  local status=${PIPESTATUS[0]}
  ((status == 0)) || return $status
  grep -o 'loom: [0-9]* new tokens.*' "$work/generate.out" | sed 's/^loom: /generate: /' >>"$summary"
}

: >"$summary"
say "loom device run: $(date -u +%Y-%m-%dT%H:%M:%SZ), PJRT_DEVICE=$PJRT_DEVICE, parts: $parts$( [[ "$reduced" == 1 ]] && echo ' (reduced sizes)')"
find_plugin
say "plugin: ${LOOM_PJRT_PLUGIN:-(found by loom)}"
part info 60 run_info
part check 180 run_check
part peak 60 run_peak
part gpt2 300 run_gpt2
part jax 180 run_jax
part generate 90 run_generate
say "total: $((SECONDS - start)) s"
cat "$summary"
