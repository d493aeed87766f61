#!/usr/bin/env bash
# A Llama that one process cannot hold trains sharded (issue 22, "Done when"):
# rank 1 of a 2-rank `loom train` runs inside a memory cgroup (cgroup v1
# memory.limit_in_bytes, or v2 memory.max; swap limited to the same) of
# LIMIT_MB. First with DDP, which needs 16 bytes per parameter on each rank and
# is expected to fail (loom's size check, or the kernel's OOM kill of that
# rank) — if it trains, the limit does not separate the modes and the script
# fails; then with --fsdp full_shard, which must train STEPS steps and save a
# model.safetensors that transformers' LlamaForCausalLM loads (no missing or
# unexpected keys) and computes a finite loss with (python3 with torch +
# transformers: scripts/setup_peers.sh).
#
# Needs root (it makes /sys/fs/cgroup/memory/loom_fsdp_limit); exits 77 when
# no memory cgroup can be made.
#
# Usage: bench/fsdp_memory_limit.sh [BUILD_DIR=build] [LIMIT_MB=5500] [STEPS=3]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
LOOM="$ROOT/${1:-build}/loom"
LIMIT_MB=${2:-5500}
STEPS=${3:-3}
OUT=$(mktemp -d /tmp/loom-fsdp-limit.XXXXXX)
[[ -d $OUT ]] || exit 1
cg=""
trap 'rm -rf "$OUT"; [[ -n $cg ]] && rmdir "$cg" 2>/dev/null' EXIT
# 24 layers, 1024 wide, MLP 2816: about 360M parameters with GPT-2's vocabulary
# (16 bytes each: 5.8 GB per DDP rank before activations).
LLAMA=(--model_type llama --config_overrides
       hidden_size=1024,intermediate_size=2816,num_hidden_layers=24,num_attention_heads=16,num_key_value_heads=16)

if [[ -d /sys/fs/cgroup/memory ]]; then
  cg=/sys/fs/cgroup/memory/loom_fsdp_limit
  mkdir -p "$cg" 2>/dev/null && echo $((LIMIT_MB << 20)) >"$cg/memory.limit_in_bytes" 2>/dev/null ||
    { rmdir "$cg" 2>/dev/null; cg=""; }
  [[ -n $cg && -f $cg/memory.memsw.limit_in_bytes ]] &&
    echo $((LIMIT_MB << 20)) >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  cg=/sys/fs/cgroup/loom_fsdp_limit
  mkdir -p "$cg" 2>/dev/null && echo $((LIMIT_MB << 20)) >"$cg/memory.max" 2>/dev/null ||
    { rmdir "$cg" 2>/dev/null; cg=""; }
  [[ -n $cg ]] && echo 0 >"$cg/memory.swap.max" 2>/dev/null
fi
[[ -n $cg ]] || { echo "SKIP: cannot make a memory cgroup (root and cgroup v1/v2 memory needed)"; exit 77; }

# Rank 1 enters the cgroup (checked: else the job fails), then becomes
# loom; GNU time writes each rank's peak RSS.
printf '#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then\n  echo $$ >"%s/cgroup.procs" && grep -q loom_fsdp_limit /proc/$$/cgroup ||\n    { echo "rank 1 is not in the cgroup" >&2; exit 9; }\nfi\nexec /usr/bin/time -f %%M -o "%s/rss.$OMPI_COMM_WORLD_RANK" "$@"\n' \
  "$cg" "$OUT" >"$OUT/limited_rank.sh"
chmod +x "$OUT/limited_rank.sh"

run() {  # run MODE: prints the job's tail and returns its exit code
  local mode=$1 fs=()
  [[ $mode != ddp ]] && fs=(--fsdp "$mode")
  rm -rf "${OUT:?}/$mode" "${OUT:?}"/rss.*
  OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS \
    -np 2 "$OUT/limited_rank.sh" "$LOOM" train "${LLAMA[@]}" \
    --tokenizer_name assets/tokenizers/gpt2 --train_file assets/corpora/austen/prideprejudice.txt \
    --block_size 128 --validation_split_percentage 1 --max_eval_samples 8 --do_eval \
    --per_device_train_batch_size 1 --per_device_eval_batch_size 1 --max_steps "$STEPS" \
    --logging_steps 1 --save_strategy no --report_to none --device lazy --disable_tqdm \
    "${fs[@]}" --output_dir "$OUT/$mode" >"$OUT/$mode.log" 2>&1
  local rc=$?
  echo "== $mode under a ${LIMIT_MB} MB cgroup on rank 1: exit $rc; peak RSS per rank (MiB):" \
    "$(for f in "$OUT"/rss.*; do k=$(tail -1 "$f" 2>/dev/null); [[ $k =~ ^[0-9]+$ ]] && echo -n "$((k / 1024)) "; done)"
  grep -E "memory per rank|loom: error|Killed|killed|eval_loss|train_loss" "$OUT/$mode.log" | cut -c1-400 | head -8
  return $rc
}

run ddp && { echo "FAIL: DDP trained under the limit too: lower LIMIT_MB"; exit 1; }
run full_shard || { echo "FAIL: full_shard did not train under the limit"; exit 1; }
if python3 -c "import torch, transformers" 2>/dev/null; then
  python3 - "$OUT/full_shard" <<'PY'
import json, math, sys, torch, transformers
out = sys.argv[1]
model, info = transformers.LlamaForCausalLM.from_pretrained(out, output_loading_info=True)
bad = {k: v for k, v in info.items() if v}
print("transformers LlamaForCausalLM.from_pretrained:", "ok" if not bad else bad,
      f"({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters)")
# The saved weights compute: transformers' loss on the corpus's first 128
# tokens (finite; beside loom's own eval_loss).
import tokenizers
tok = tokenizers.ByteLevelBPETokenizer(f"{out}/vocab.json", f"{out}/merges.txt")
text = open("assets/corpora/austen/prideprejudice.txt", encoding="utf-8").read()[:4000]
ids = torch.tensor([tok.encode(text).ids[:128]])
with torch.no_grad():
    loss = model(ids, labels=ids).loss.item()
print(f"transformers loss on the first block: {loss:.3f} (uniform {math.log(model.config.vocab_size):.3f});",
      "loom eval_loss:", json.load(open(f"{out}/all_results.json")).get("eval_loss"))
sys.exit(1 if bad or not math.isfinite(loss) else 0)
PY
else
  echo "transformers check skipped (python3 has no torch / transformers: scripts/setup_peers.sh)"
fi
