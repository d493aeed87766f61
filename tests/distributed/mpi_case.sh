#!/usr/bin/env bash
# tests/distributed/mpi_case.sh: runs one multi-rank scenario under mpirun and checks
# how it ended (the CTests of tests/distributed/, see CMakeLists.txt).
#   mpi_case.sh EXPECT MAX_SECONDS REGEX NP PROGRAM ARGS...
# EXPECT is "zero" or "nonzero" (the job's exit code), MAX_SECONDS the most
# the job may take (a hang fails), REGEX an extended regex the combined
# output must match. Exits 77 (CTest's SKIP_RETURN_CODE) with a message when
# mpirun is missing. Runs as root with Open MPI's root switches and
# --oversubscribe (more ranks than cores).
set -uo pipefail
expect=$1 max_s=$2 regex=$3 np=$4
shift 4
mpirun=$(command -v mpirun || true)
if [[ -z $mpirun ]]; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin, or scripts/setup.sh)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under the sanitizer build: Open MPI keeps its allocations until exit (and
# MPI_Abort skips every destructor), which LeakSanitizer would report as ours.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# Loopback TCP and shared memory only: no probing of other interfaces.
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_rmaps_base_oversubscribe=1
if [[ ${LOOM_WITH_MPI:-1} == 0 ]]; then
  echo "SKIP: loom was built without MPI (apt-get install libopenmpi-dev, then reconfigure)"
  exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
timeout -k 5 $((max_s + 30)) "$mpirun" -np "$np" --oversubscribe --bind-to none "$@" >"$out" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
cat "$out"
echo "mpi_case: exit code $rc after ${elapsed}s (expected $expect within ${max_s}s)"
fail=0
if [[ $expect == zero && $rc -ne 0 ]]; then echo "FAIL: exit code $rc, expected 0"; fail=1; fi
if [[ $expect == nonzero && $rc -eq 0 ]]; then echo "FAIL: exit code 0, expected non-zero"; fail=1; fi
# (mpirun itself exits 137 when a rank died of SIGKILL; a hang shows in the time.)
if ((rc == 124)); then echo "FAIL: the job hung (killed by timeout)"; fail=1; fi
if ((elapsed > max_s)); then echo "FAIL: took ${elapsed}s, more than ${max_s}s"; fail=1; fi
if ! grep -Eq -- "$regex" "$out"; then echo "FAIL: output does not match /$regex/"; fail=1; fi
exit $fail
