#!/usr/bin/env bash
# tests/distributed/memory_limit_case.sh: the start-up memory check reads the
# cgroup limit of the rank it runs on (core/memory_info.h, tools/loom/train.cpp).
# Rank 1 of a 2-rank `loom train` runs in a memory cgroup (v1 or v2) of
# LIMIT_MB; the model (GPT-2 shape, 8 layers x 512, ~51M parameters: DDP
# needs 16 bytes each per rank, 0.82 GB; full_shard 12, 0.62 GB) fits as
# built but not with DDP's state, so rank 1 refuses before training and
# names --fsdp full_shard. Exits 77 (skip) without root, a memory cgroup or
# mpirun.
#   memory_limit_case.sh LOOM CORPUS TOKENIZER_DIR OUT_DIR [LIMIT_MB=1000]
set -uo pipefail
loom=$1 corpus=$2 tokenizer=$3 out=$4 limit_mb=${5:-1000}
here=$(cd "$(dirname "$0")" && pwd)
name=loom_memcheck_$$
cg=""
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: needs root to make a memory cgroup"
  exit 77
fi
if [[ -d /sys/fs/cgroup/memory ]]; then
  cg=/sys/fs/cgroup/memory/$name
  { mkdir "$cg" && echo $((limit_mb << 20)) >"$cg/memory.limit_in_bytes"; } 2>/dev/null ||
    { rmdir "$cg" 2>/dev/null; cg=""; }
elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  cg=/sys/fs/cgroup/$name
  { mkdir "$cg" && echo $((limit_mb << 20)) >"$cg/memory.max"; } 2>/dev/null ||
    { rmdir "$cg" 2>/dev/null; cg=""; }
fi
if [[ -z $cg ]]; then
  echo "SKIP: cannot make a memory cgroup (cgroup v1 or v2 memory controller needed)"
  exit 77
fi
wrap=$(mktemp /tmp/loom-memcheck.XXXXXX)
trap 'rm -f "$wrap"; rmdir "$cg" 2>/dev/null' EXIT
printf '#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then\n  echo $$ >"%s/cgroup.procs" && grep -q %s /proc/$$/cgroup ||\n    { echo "rank 1 is not in the cgroup" >&2; exit 9; }\nfi\nexec "$@"\n' \
  "$cg" "$name" >"$wrap"
chmod +x "$wrap"
"$here/mpi_case.sh" nonzero 120 \
  "\\[rank 1\\] \\[loom train\\] memory per rank \\(ddp\\): the model's state needs [0-9.]+ [MG]B, but this rank has [0-9.]+ [MG]B \\([0-9.]+ [kMG]?B available, cgroup memory\\.(limit_in_bytes|max).*--fsdp full_shard needs [0-9.]+ [MG]B per rank" \
  2 "$wrap" "$loom" train --model_type gpt2 --config_overrides n_layer=8,n_embd=512,n_head=8 \
  --tokenizer_name "$tokenizer" --train_file "$corpus" --block_size 16 --max_steps 1 \
  --device lazy --report_to none --output_dir "$out" --overwrite_output_dir
