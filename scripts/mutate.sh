#!/usr/bin/env bash
# scripts/mutate.sh: the weekly mutation run, outside .ci/run's 40-minute
# budget: tools/mutate.py over every mutant (a scratch copy in build-mutate/,
# the checkout untouched), niced so that it can share a machine, writing its
# table to build-mutate/mutate_result.md; `scripts/mutate.sh --write` also
# updates the committed tools/mutate_result.md (commit it). Exits 1 when a
# mutant survived: each survivor is a missing test (docs/testing.md,
# "Mutation runs").
#
# Meant for a scheduled CI job (e.g. weekly), not for every push: the first
# build of the scratch copy takes ~20 minutes on 2 cores, then ~1-2 minutes
# per mutant (some run multi-rank CLI tests under mpirun).
#
# Environment (all optional):
#   LOOM_MUTATE_ARGS="..."  extra tools/mutate.py arguments (e.g. "--unity",
#                           "--deadline 05:30", "--only a b")
#   LOOM_JOBS=n             parallel compile jobs (default: nproc)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"
command -v mpirun >/dev/null 2>&1 || die "mutate: mpirun not found: the DDP mutants need it (scripts/setup.sh)"
trap print_phases EXIT
# shellcheck disable=SC2086  # LOOM_MUTATE_ARGS is a list of words
phase "mutate" nice -n 10 python3 tools/mutate.py --jobs "$LOOM_JOBS" ${LOOM_MUTATE_ARGS:-} "$@"
