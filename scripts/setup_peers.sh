#!/usr/bin/env bash
# scripts/setup_peers.sh: pip-installs the Python reference libraries used to
# regenerate test fixtures (tools/) and as benchmark peers (bench/): torch,
# transformers, tokenizers, safetensors, numpy, peft (the LoRA fixtures:
# tools/make_lora_fixtures.py, tools/check_lora_roundtrip.py), and jax (CPU:
# bench/gpt2_step_jax_peer.py and bench/bert_step_jax_peer.py, the jax.jit
# peers of the step benchmarks). Then makes the project-owned virtual
# environment .venv-torch-xla (gitignored) for the PyTorch/XLA peers
# (bench/gpt2_step_peer.py and bench/bert_step_peer.py --mode xla, the
# "torch_xla" columns): torch_xla pinned with its matching torch (2.9.0 both),
# transformers < 5 and numpy, apart from $PYTHON's own torch. Large (torch
# alone is gigabytes, twice with the venv) and never needed to build or test:
# scripts/test.sh does not run this. Idempotent: installs nothing into
# $PYTHON when all of its modules already import, and nothing into the venv
# when its python already imports torch_xla, transformers and numpy.
#
# Environment (optional):
#   PYTHON=python3            the interpreter to install for
#   LOOM_TORCH_INDEX_URL=url  a PyTorch wheel index, e.g.
#                             https://download.pytorch.org/whl/cpu for CPU-only torch
#                             (used for $PYTHON's torch and the venv's torch==2.9.0)
#   LOOM_TORCH_XLA=0          skip the .venv-torch-xla venv
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

python="${PYTHON:-python3}"
modules=(torch transformers tokenizers safetensors numpy peft jax)
import_all="import $(IFS=,; echo "${modules[*]}")"

# The PyTorch/XLA peers' venv: torch_xla only works with the torch release it
# was built against, so it gets its own interpreter (bench/step_bench.h
# torch_xla_python() runs it; $LOOM_TORCH_XLA_PYTHON overrides).
torch_xla_venv="$LOOM_ROOT/.venv-torch-xla"
torch_xla_py="$torch_xla_venv/bin/python"
torch_xla_pins=(torch==2.9.0 torch_xla==2.9.0 "transformers<5" numpy)
torch_xla_import="import torch_xla, transformers, numpy"

peers_ok() { "$python" -c "$import_all" 2>/dev/null; }
torch_xla_ok() {
  [[ "${LOOM_TORCH_XLA:-1}" == 0 ]] ||
    { [[ -x "$torch_xla_py" ]] && PJRT_DEVICE=CPU "$torch_xla_py" -c "$torch_xla_import" 2>/dev/null; }
}

install_peers() {
  local pip_args=()
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
}

make_torch_xla_venv() {
  log "setup_peers: making $torch_xla_venv (${torch_xla_pins[*]})"
  [[ -x "$torch_xla_py" ]] || python3 -m venv "$torch_xla_venv"
  if [[ -n "${LOOM_TORCH_INDEX_URL:-}" ]]; then
    "$torch_xla_py" -m pip install --index-url "$LOOM_TORCH_INDEX_URL" torch==2.9.0
  fi
  "$torch_xla_py" -m pip install "${torch_xla_pins[@]}"
  PJRT_DEVICE=CPU "$torch_xla_py" -c "$torch_xla_import"
}

if peers_ok && torch_xla_ok; then
  log "setup_peers: ${modules[*]} already importable by $python"
  if [[ "${LOOM_TORCH_XLA:-1}" == 0 ]]; then
    log "setup_peers: torch_xla's venv skipped (LOOM_TORCH_XLA=0)"
  else
    log "setup_peers: torch_xla already importable by $torch_xla_py"
  fi
  exit 0
fi

bash "$LOOM_ROOT/scripts/setup.sh"  # python3, pip and python3-venv

if peers_ok; then
  log "setup_peers: ${modules[*]} already importable by $python"
else
  install_peers
fi
if torch_xla_ok; then
  log "setup_peers: torch_xla already importable by $torch_xla_py (or LOOM_TORCH_XLA=0)"
else
  make_torch_xla_venv
fi
log "setup_peers: done"
