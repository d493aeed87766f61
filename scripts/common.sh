# scripts/common.sh: helpers shared by setup.sh, test.sh and demo.sh.
# Sourced, never run. Assumes bash 4+ and that the sourcing script lives in
# scripts/; sets LOOM_ROOT to the repository root.

LOOM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOOM_JOBS="${LOOM_JOBS:-$(nproc)}"

# log MESSAGE...: one status line on stderr, prefixed so it stands out in CI logs.
log() { printf '==> %s\n' "$*" >&2; }

# die MESSAGE...: one error line on stderr, then exit 1.
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# phase NAME COMMAND...: runs COMMAND, then prints how long it took; records
# "NAME seconds" in LOOM_PHASES for the summary. Returns COMMAND's status.
LOOM_PHASES=()
phase() {
  local name="$1"; shift
  local start=$SECONDS status=0
  log "$name"
  "$@" || status=$?
  local took=$((SECONDS - start))
  LOOM_PHASES+=("$(printf '%-22s %4dm%02ds' "$name" $((took / 60)) $((took % 60)))")
  if [[ $status -ne 0 ]]; then
    log "$name FAILED (exit $status) after ${took}s"
  else
    log "$name done in ${took}s"
  fi
  return $status
}

# print_phases: the table of phase timings recorded so far.
print_phases() {
  log "timings"
  local line
  for line in "${LOOM_PHASES[@]}"; do printf '    %s\n' "$line" >&2; done
  printf '    %-22s %4dm%02ds\n' "total" $((SECONDS / 60)) $((SECONDS % 60)) >&2
}

# configure DIR CMAKE_ARGS...: configures the project with Ninja into DIR,
# using ccache as the compiler launcher when it is installed. A DIR configured
# earlier with another generator is removed first (CMake refuses to switch).
configure() {
  local dir="$1"; shift
  local cache="$dir/CMakeCache.txt"
  if [[ -f "$cache" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
    log "$dir was configured with another generator; removing it"
    rm -rf "$dir"
  fi
  local launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=)
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$LOOM_ROOT" -B "$dir" -G Ninja "${launcher[@]}" "$@"
}
