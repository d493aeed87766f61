#!/usr/bin/env bash
# tests/device/device_bundle_test.sh LOOM_BINARY: the device bundle (issue 40)
# on this machine's CPU: scripts/device_bundle.sh packs LOOM_BINARY (it fails
# over 40 MiB), then the bundle's run.sh runs every part in its reduced mode
# with PJRT_DEVICE=CPU on the CPU plugin of the source tree's .venv. Checks
# summary.txt: loom info names the plugin and platform cpu; the lazy:xla vs
# lazy:cpu check PASSes; the GPT-2 part gives tokens/s, and its second process
# compiled nothing (XlaCompile 0) and loaded from the disk cache; generate
# gives tokens/s. The peak and jax parts run when python3 has jax, else they
# say skipped. Exit 77 (CTest: skipped) without a plugin; CI (CI=true) fails
# instead, as LOOM_REQUIRE_XLA does.
set -uo pipefail
loom="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
plugin="${LOOM_PJRT_PLUGIN:-$(ls "$root"/.venv/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so 2>/dev/null | head -n 1)}"
if [[ ! -f "$plugin" ]]; then
  echo "no CPU PJRT plugin (.venv: scripts/setup.sh)"
  [[ "${CI:-}" == "true" || "${CI:-}" == "1" ]] && exit 1
  exit 77
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/loom-bundle-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [[ -f "$tmp/out/summary.txt" ]] && sed 's/^/  | /' "$tmp/out/summary.txt"; exit 1; }

t0=$SECONDS
LOOM_BUNDLE_BINARY="$loom" bash "$root/scripts/device_bundle.sh" "$tmp/device" || fail "device_bundle.sh"
echo "bundle made in $((SECONDS - t0)) s: $(du -sh "$tmp/device" | cut -f1)"
[[ -x "$tmp/device/loom" && -f "$tmp/device/payload.tar.gz" && -f "$tmp/device/data/gpt2/vocab.json" ]] ||
  fail "the bundle lacks a file"

t0=$SECONDS
OUT="$tmp/out" PJRT_DEVICE=CPU LOOM_PJRT_PLUGIN="$plugin" LOOM_RUN_REDUCED=1 \
  LOOM_BUNDLE_DIR="$tmp/unpacked" bash "$tmp/device/run.sh" || fail "run.sh exited $?"
echo "run.sh (reduced, CPU) took $((SECONDS - t0)) s"
s="$tmp/out/summary.txt"
[[ $(ls "$tmp/out" | wc -l) -le 8 ]] || fail "run.sh wrote more than the 8 files \$OUT brings back"
grep -q "platform cpu" "$tmp/out/info.log" || fail "loom info does not name platform cpu"
grep -q "^check: 2 steps lazy:xla vs lazy:cpu, .*: PASS" "$s" || fail "the check part did not pass"
grep -q "^gpt2: .* tokens/s" "$s" || fail "no GPT-2 tokens/s"
grep -Eq "^gpt2: second process on the disk cache: .*XlaCompile 0, XlaPersistentCacheHit [1-9]" "$s" ||
  fail "the second process compiled again"
grep -q "^generate: .* tokens/s" "$s" || fail "no generate tokens/s"
grep -Eq "^(peak|jax): " "$s" || fail "peak/jax neither ran nor said skipped"
if grep -Eq "FAILED|TIMEOUT" "$s"; then fail "a part failed"; fi
echo "ok: device bundle and run.sh (reduced) on the CPU plugin"
