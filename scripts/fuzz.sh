#!/usr/bin/env bash
# scripts/fuzz.sh: builds the libFuzzer harnesses of fuzz/ with clang
# (-DLOOM_FUZZ=ON) and runs each for a fixed time from its committed seed
# corpus. Exits non-zero when a harness finds a crash, a sanitizer report, a
# timeout or an out-of-memory; the input is saved as
# <build>/fuzz-artifacts/<target>-crash-<sha1> (reproduce: run the harness
# with that file as its argument), and must become a regression test in tests/.
# scripts/test.sh runs this as its "fuzz" phase; docs/testing.md has more.
#
# Environment (all optional):
#   LOOM_FUZZ_BUILD_DIR=dir  fuzz build folder                 (default: build-fuzz)
#   LOOM_FUZZ_SECONDS=s      run time of each harness          (default: 15: nine
#                            harnesses in the ~2 minutes six took at 20 s)
#   LOOM_FUZZ_TARGETS="a b"  harnesses to run                  (default: all nine)
#   LOOM_JOBS=n              parallel compile jobs             (default: nproc)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"

build_dir="${LOOM_FUZZ_BUILD_DIR:-build-fuzz}"
seconds="${LOOM_FUZZ_SECONDS:-15}"
targets=(${LOOM_FUZZ_TARGETS:-safetensors config tokenizer_json tokenizer_vocab text_table cli_flags
  adapter_config shard_index split_pattern})

command -v clang++ >/dev/null 2>&1 || die "fuzz: clang++ not found (scripts/setup.sh installs clang)"
configure "$build_dir" -DLOOM_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
cmake --build "$build_dir" -j"$LOOM_JOBS" --target fuzz_all

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
artifacts="$build_dir/fuzz-artifacts"
mkdir -p "$artifacts"
failed=()
for t in "${targets[@]}"; do
  [[ -d fuzz/corpus/$t ]] || die "fuzz: no seed corpus fuzz/corpus/$t"
  # libFuzzer adds the inputs it finds to the first folder: a scratch copy,
  # so the committed seeds stay small.
  work="$build_dir/fuzz-corpus/$t"
  rm -rf "$work" && mkdir -p "$work" && cp fuzz/corpus/"$t"/* "$work"/
  log "fuzz_$t for ${seconds}s"
  # -max_len 8192: the seeds are below 4 KiB; larger inputs only slow a
  # short run down. -timeout 10: one input running 10 s counts as a hang.
  # -rss_limit_mb / -malloc_limit_mb: a reader allocating > 2 GiB is a finding.
  if ! "$build_dir/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=2048 -dict=fuzz/json.dict -print_final_stats=1 \
      -artifact_prefix="$artifacts/$t-" "$work" 2>"$build_dir/fuzz-$t.log"; then
    tail -n 40 "$build_dir/fuzz-$t.log" >&2
    failed+=("$t")
  else
    grep -E '^stat::number_of_executed_units|^Done' "$build_dir/fuzz-$t.log" >&2 || true
  fi
done
[[ ${#failed[@]} -eq 0 ]] || die "fuzz: findings in ${failed[*]} (inputs in $artifacts)"
log "fuzz: ${#targets[@]} harnesses ran ${seconds}s each with no findings"
