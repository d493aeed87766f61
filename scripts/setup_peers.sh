#!/usr/bin/env bash
# scripts/setup_peers.sh: pip-installs the Python reference libraries used to
# regenerate test fixtures (tools/) and as benchmark peers (bench/): torch,
# transformers, tokenizers, safetensors, numpy, peft (the LoRA fixtures:
# tools/make_lora_fixtures.py, tools/check_lora_roundtrip.py), and jax (CPU:
# bench/gpt2_step_jax_peer.py, the jax.jit peer of loom's lazy:xla column). Large (torch alone is
# gigabytes) and never needed to build or test: scripts/test.sh does not run
# this. Idempotent: does nothing when all of them already import.
#
# Environment (optional):
#   PYTHON=python3            the interpreter to install for
#   LOOM_TORCH_INDEX_URL=url  a PyTorch wheel index, e.g.
#                             https://download.pytorch.org/whl/cpu for CPU-only torch
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

python="${PYTHON:-python3}"
modules=(torch transformers tokenizers safetensors numpy peft jax)
import_all="import $(IFS=,; echo "${modules[*]}")"

if "$python" -c "$import_all" 2>/dev/null; then
  log "setup_peers: ${modules[*]} already importable by $python"
  exit 0
fi

bash "$LOOM_ROOT/scripts/setup.sh"  # python3 and pip

pip_args=()
# Debian marks its own Python "externally managed" (PEP 668); installing into
# it needs this flag. A virtual environment or pyenv Python does not.
if "$python" -c 'import sys, sysconfig, os; p = os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED"); sys.exit(0 if os.path.exists(p) and sys.prefix == sys.base_prefix else 1)'; then
  pip_args+=(--break-system-packages)
fi

if [[ -n "${LOOM_TORCH_INDEX_URL:-}" ]]; then
  "$python" -m pip install "${pip_args[@]}" --index-url "$LOOM_TORCH_INDEX_URL" torch
fi
"$python" -m pip install "${pip_args[@]}" "${modules[@]}"
"$python" -c "$import_all"
log "setup_peers: done"
