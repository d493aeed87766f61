#!/usr/bin/env bash
# scripts/milestone_check.sh: everything .ci/run leaves out of the run on each
# change, run before each milestone closes (the closing note names this script
# and reports its phase table). It is .ci/run's two phases at full scope: the
# fresh-machine check, then scripts/test.sh with LOOM_TEST_SCOPE=all: the
# Release tests, the Python suite, ASan + UBSan over every suite (the
# end-to-end ones too; less lazy:xla's cross-device suites, as always), the
# ThreadSanitizer phase and the fuzz phase. About 70 minutes on 2 cores with a
# cold compiler cache. Same assumptions as .ci/run (Debian, root for the
# fresh-machine check; it skips itself with a message otherwise).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"
unset LOOM_SKIP_ASAN LOOM_SKIP_FUZZ LOOM_SKIP_TSAN
export LOOM_TEST_SCOPE=all
trap print_phases EXIT
phase "fresh machine" bash scripts/check_fresh_machine.sh
phase "tests (all)" bash scripts/test.sh
