#!/usr/bin/env bash
# scripts/mutate.sh: the weekly mutation run, outside .ci/run's 40-minute
# budget: tools/mutate.py over every mutant (a scratch copy in build-mutate/,
# the checkout untouched), niced so that it can share a machine, writing its
# table to build-mutate/mutate_result.md; `scripts/mutate.sh --write` also
# updates the committed tools/mutate_result.md (commit it). Exits 1 when a
# mutant survived: each survivor is a missing test (docs/testing.md,
# "Mutation runs").
#
# Meant for a scheduled CI job (e.g. weekly), not for every push: by default a
# unity build at -O1 (--unity --quick-build): the scratch copy builds in ~3
# minutes on 2 cores, then ~20 s per mutant (a rebuild of its unity chunk and
# its test subset, some under mpirun); 38 mutants in ~14 minutes.
#
# Environment (all optional):
#   LOOM_MUTATE_ARGS="..."  tools/mutate.py arguments (default "--unity
#                           --quick-build"; e.g. "" for a plain -O2 build,
#                           "--deadline 05:30", "--only a b")
#   LOOM_JOBS=n             parallel compile jobs (default: nproc)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"
command -v mpirun >/dev/null 2>&1 || die "mutate: mpirun not found: the DDP mutants need it (scripts/setup.sh)"
trap print_phases EXIT
# shellcheck disable=SC2086  # LOOM_MUTATE_ARGS is a list of words
phase "mutate" nice -n 10 python3 tools/mutate.py --jobs "$LOOM_JOBS" ${LOOM_MUTATE_ARGS---unity --quick-build} "$@"
