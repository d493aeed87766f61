#!/usr/bin/env bash
# scripts/test.sh: installs what is missing, builds loom and runs every test,
# then the Python package's pytest suite (python/tests/), then builds and
# runs them again under AddressSanitizer + UndefinedBehavior-
# Sanitizer, then the tests that start threads under ThreadSanitizer, then runs
# each libFuzzer harness of fuzz/ for a short fixed time (scripts/fuzz.sh).
# Exits non-zero on the first failure and prints each phase's time. Measured on
# 2 cores (2026-12-02): build 8-11 min, tests 9.5, asan build ~12, asan tests
# ~10, tsan build ~8, tsan tests ~8-9, fuzz ~6 (build, then 9 x 15 s of runs).
# Under CI=true, MPI is required (-DLOOM_MPI=ON): with AUTO a machine without
# Open MPI would turn every multi-rank test into a skip and CI would still pass.
#
# Scope: LOOM_TEST_SCOPE=all (the default by hand, and scripts/milestone_check.sh)
# runs every phase above. LOOM_TEST_SCOPE=change (.ci/run, on every change)
# runs the Release tests and the Python suite in full, but ASan only over the
# unit and kernel suites (the end-to-end ones, `asan_e2e` below, ran in the
# Release phase just before) and neither TSan nor fuzz: those run in
# scripts/milestone_check.sh before each milestone closes (docs/testing.md).
#
# Environment (all optional):
#   LOOM_TEST_SCOPE=all|change  which phases run (default: all)
#   LOOM_SKIP_ASAN=1        skip the sanitizer and fuzz phases (quick local runs; CI runs them)
#   LOOM_SKIP_FUZZ=1        skip the fuzz phase only
#   LOOM_SKIP_TSAN=1        skip the ThreadSanitizer phase only
#   LOOM_TSAN_BUILD_DIR=dir ThreadSanitizer build folder (default: build-tsan)
#   LOOM_FUZZ_SECONDS=s     run time of each fuzz harness    (default: 15)
#   LOOM_MPI=ON|AUTO|OFF    the mpi ProcessGroup         (default: ON under CI=true, else AUTO)
#   LOOM_BUILD_DIR=dir      main build folder            (default: build)
#   LOOM_ASAN_BUILD_DIR=dir sanitizer build folder       (default: build-asan)
#   LOOM_JOBS=n             parallel compile/test jobs   (default: nproc)
#   LOOM_TEST_TIMEOUT=s     per-test timeout in seconds  (default: 600)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"

scope="${LOOM_TEST_SCOPE:-all}"
case "$scope" in
  all) ;;
  change) export LOOM_SKIP_TSAN=1 LOOM_SKIP_FUZZ=1 ;;
  *) die "LOOM_TEST_SCOPE=$scope: expected all or change" ;;
esac
log "scope: $scope"

build_dir="${LOOM_BUILD_DIR:-build}"
asan_dir="${LOOM_ASAN_BUILD_DIR:-build-asan}"
test_timeout="${LOOM_TEST_TIMEOUT:-600}"
# Parquet (Arrow C++ from setup.sh's pyarrow) likewise: required under CI, so
# its tests never skip there. Given explicitly because the build folder is also
# the Python package's, where it defaults to OFF (CMakeLists.txt).
if [[ "${CI:-}" == "true" ]]; then
  mpi="${LOOM_MPI:-ON}"
  parquet="${LOOM_PARQUET:-ON}"
else
  mpi="${LOOM_MPI:-AUTO}"
  parquet="${LOOM_PARQUET:-AUTO}"
fi

# run_ctest DIR [ctest args...]: every registered test (or those the args
# select); zero selected tests is a failure.
# Prints the 20 slowest tests afterwards (also when some failed).
run_ctest() {
  local dir="$1" status=0
  shift
  ctest --test-dir "$dir" --output-on-failure --no-tests=error \
    --timeout "$test_timeout" -j"$LOOM_JOBS" --output-junit ctest-junit.xml "$@" || status=$?
  print_slowest "$dir/ctest-junit.xml"
  return $status
}

# run_python_tests: `pip install .` of the Python package (pyproject.toml)
# into .venv, built in the main build folder (scikit-build-core's build-dir):
# that folder was configured with LOOM_PYTHON=ON (the library with -fPIC, the
# extension built), so pip compiles nothing again. Then python/tests/ with
# pytest. A failed install, and pytest's exit code 5 (no tests collected),
# fail the phase too. LOOM_CLI names the CLI for the tests that compare with it.
run_python_tests() {
  CMAKE_BUILD_PARALLEL_LEVEL="$LOOM_JOBS" "$LOOM_ROOT/.venv/bin/python" -m pip install -q \
    --disable-pip-version-check --no-build-isolation -C build-dir="$LOOM_ROOT/$build_dir" \
    -C cmake.define.LOOM_BUILD_BENCH=ON -C cmake.define.LOOM_PARQUET="$parquet" "$LOOM_ROOT" || return $?
  local status=0
  # LOOM_CLI: test_run_clm.py compares the Python Trainer's losses with `loom train`'s.
  LOOM_CLI="$LOOM_ROOT/$build_dir/loom" "$LOOM_ROOT/.venv/bin/python" -m pytest -q \
    -p no:cacheprovider "$LOOM_ROOT/python/tests" || status=$?
  [[ $status -eq 5 ]] && log "python: pytest collected no tests"
  return $status
}

trap print_phases EXIT

phase "setup" bash scripts/setup.sh

# LOOM_PYTHON=ON: the Python phase's `pip install .` builds in this folder.
phase "configure" configure "$build_dir" \
  -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_BENCH=ON -DLOOM_SANITIZE=OFF -DLOOM_UNITY_BUILD=ON \
  -DLOOM_MPI="$mpi" -DLOOM_PARQUET="$parquet" -DLOOM_PYTHON=ON -DPython_EXECUTABLE="$LOOM_ROOT/.venv/bin/python"
phase "build" cmake --build "$build_dir" -j"$LOOM_JOBS"
# Release tests that run only at LOOM_TEST_SCOPE=all (scripts/milestone_check.sh),
# 824 of the phase's 2,084 test-seconds on 2 cores (2026-12-08). Each has a
# cheaper sibling that runs on every change:
#   Devices/Soak.*: 3,000-step resident-set soaks; the short memory checks
#     (Lazy.PeakMemoryDoesNotGrowWithSteps, OptimLazy.PeakMemory*,
#     XlaBackend.DeviceMemoryStaysFlat*) run every time;
#   Devices/(ExactResume|NumItemsInBatch) on lazy:xla: the same cases run on
#     lazy and lazy:sim, and lazy:xla's equality with lazy:cpu step by step is
#     XlaBackend.* and Models/TenSteps/*_lazy_xla;
#   Op/XlaLowerExec.MatchesLazyCpu: every op case on the PJRT plugin through
#     the lowering alone; Op/BackendForward.MatchesLazyCpu/xla_* runs the same
#     cases through the lazy:xla device (the lowering included).
release_milestone='^Devices/Soak\.|^Devices/(ExactResume|NumItemsInBatch)\..*/lazy_xla|^Op/XlaLowerExec\.MatchesLazyCpu/'
release_args=()
[[ "$scope" == "change" ]] && release_args=(-E "$release_milestone")
phase "test" run_ctest "$build_dir" "${release_args[@]}"
phase "python" run_python_tests

if [[ "${LOOM_SKIP_ASAN:-0}" == "1" ]]; then
  log "LOOM_SKIP_ASAN=1: skipping the sanitizer phase"
  exit 0
fi

# Sanitizer build: -O1 -g1 compiles faster than -O2 -g and still gives
# file:line stack traces; NDEBUG is left undefined so asserts run too.
# Benchmarks are not built here (they are compiled in the main build).
export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# Leaks inside third-party libraries loom cannot fix (the PJRT plugin's MLIR
# compiler): tests/lsan.supp, each with its reason.
export LSAN_OPTIONS="suppressions=$LOOM_ROOT/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
phase "asan configure" configure "$asan_dir" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DLOOM_BUILD_BENCH=OFF -DLOOM_SANITIZE=ON -DLOOM_UNITY_BUILD=ON -DLOOM_MPI="$mpi" -DLOOM_PARQUET="$parquet"
# At LOOM_TEST_SCOPE=change only what the unit and kernel suites run: the test
# binary (it depends on the CLI, the dist worker and the fake plugins), not the
# examples, whose tests are end-to-end ones.
asan_targets=()
[[ "$scope" == "change" ]] && asan_targets=(--target loom_tests)
phase "asan build" cmake --build "$asan_dir" -j"$LOOM_JOBS" "${asan_targets[@]}"
# Not under ASan: lazy:xla's cross-device suites (op table, whole models, exact
# resume, CLI, mpirun). Each of their XLA compiles runs inside the prebuilt,
# uninstrumented PJRT plugin, through ASan's slow allocator: 1,420 s of the
# phase's 2,400 s on 2 cores (2026-12-02), for no instrumented loom code that
# the Xla* unit tests (lowering of every op case, PJRT client, executables,
# collective split) do not already run here. The Release phase runs them all.
asan_exclude='(Op/BackendForward.*xla|Op/XlaLowerExec\.|_lazy_xla|Devices/.*xla|^XlaCli\.|^dist_train_lazy_xla)'
# The end-to-end suites: whole jobs through the CLI (tests/cli/: suites named
# *Cli* and LoomBadInput*; loom and mpirun), the
# examples, the documented commands, multi-step runs of whole models on every
# device. Under LOOM_TEST_SCOPE=change they run once, in the Release phase;
# the library code they reach runs under ASan through the unit suites.
# And the tests that check scripts and the build, not compiled code
# (device_bundle_cpu packs the CLI, examples_setup, cmake_missing_dep_*,
# check_layers): the Release phase runs them.
asan_e2e='((^|/)(LoomBadInput[A-Za-z]*|[A-Za-z]*Cli([A-Z][A-Za-z]*)?)\.|^example|^device_bundle_cpu$|^cmake_missing_dep_|^check_layers$|^dist_(two_hosts|train|cli|memory_limit)|^doc_commands|^Devices/(ExactResume|Soak|LoraTrainer)\.|^Models/)'
if [[ "$scope" == "change" ]]; then
  asan_exclude="${asan_exclude%)}|${asan_e2e#(}"
fi
phase "asan test" run_ctest "$asan_dir" -E "$asan_exclude"

# ThreadSanitizer: only the tests that start threads (CMakeLists.txt's
# LOOM_TSAN_TESTS: lazy:sim's stream, the executor, DataLoader workers, the
# DeviceLoader, MPI collectives and DDP through the CLI) and the mpirun cases.
# OMP_NUM_THREADS=1: libgomp is not built with TSan, so its barriers are
# invisible and every OpenMP loop would be reported; with one thread OpenMP
# starts none, and the threads loom starts itself are what is checked.
# Reports fail the test (exitcode 66); known-benign ones are in
# tests/tsan.supp, each with its reason.
if [[ "${LOOM_SKIP_TSAN:-0}" == "1" ]]; then
  log "LOOM_SKIP_TSAN=1: skipping the ThreadSanitizer phase"
else
  tsan_dir="${LOOM_TSAN_BUILD_DIR:-build-tsan}"
  phase "tsan configure" configure "$tsan_dir" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DLOOM_BUILD_BENCH=OFF -DLOOM_SANITIZE=thread -DLOOM_UNITY_BUILD=ON -DLOOM_MPI="$mpi"
  phase "tsan build" cmake --build "$tsan_dir" -j"$LOOM_JOBS" --target loom_tests
  # Test names with a dot are the gtest cases of the TSan binary; dist_* the
  # mpirun ones, less the lazy:xla job: the PJRT plugin is not instrumented and
  # runs its own thread pool, and under TSan its compile outlasts the test's
  # 180 s (2026-12-02); the Release and ASan phases run it. Nor the cut-link
  # job: it asserts that the job ends within 15 s of the cut, a wall-clock
  # limit TSan's slowdown would decide, not the code (Release and ASan run it).
  # Nor the memory-limit job: its rank 1 runs in a 1000 MB cgroup, and TSan's
  # shadow memory (several times the program's own) is charged to the cgroup,
  # so the kernel kills the rank before loom's own check can refuse (CI
  # 2026-12-02: signal 9 after 6 s); the Release and ASan phases run it.
  phase "tsan test" env OMP_NUM_THREADS=1 \
    TSAN_OPTIONS="exitcode=66:halt_on_error=0:second_deadlock_stack=1:suppressions=$LOOM_ROOT/tests/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
    ctest --test-dir "$tsan_dir" --output-on-failure --no-tests=error --output-junit ctest-junit.xml \
    --timeout "$test_timeout" -j"$LOOM_JOBS" -R '\.|^dist_' -E '^dist_train_lazy_xla|^dist_two_hosts_cut_link|^dist_memory_limit_refuses_ddp'
  print_slowest "$tsan_dir/ctest-junit.xml"
fi

if [[ "${LOOM_SKIP_FUZZ:-0}" == "1" ]]; then
  log "LOOM_SKIP_FUZZ=1: skipping the fuzz phase"
  exit 0
fi
phase "fuzz" bash scripts/fuzz.sh
