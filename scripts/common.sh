# scripts/common.sh: helpers shared by setup.sh, test.sh and demo.sh.
# Sourced, never run. Assumes bash 4+ and that the sourcing script lives in
# scripts/; sets LOOM_ROOT to the repository root.

LOOM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOOM_JOBS="${LOOM_JOBS:-$(nproc)}"

# log MESSAGE...: one status line on stderr, prefixed so it stands out in CI logs.
log() { printf '==> %s\n' "$*" >&2; }

# die MESSAGE...: one error line on stderr, then exit 1.
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# children_cpu_ticks: CPU time (user + system, in clock ticks) used so far by
# this shell's finished children, from /proc/<pid>/stat fields 16 and 17.
children_cpu_ticks() {
  local stat
  read -r -a stat < "/proc/$$/stat"
  echo $((stat[15] + stat[16]))
}

# mmss SECONDS: "12m05s".
mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# phase NAME COMMAND...: runs COMMAND, then prints how long it took, in wall
# time and in CPU time of the processes it ran (on a busy machine the CPU time
# is the steadier measure: a dedicated N-core machine needs about CPU / N).
# Records a line in LOOM_PHASES for the summary. Returns COMMAND's status.
LOOM_PHASES=()
LOOM_TICKS="$(getconf CLK_TCK)"
phase() {
  local name="$1"; shift
  local start=$SECONDS ticks0 status=0
  ticks0=$(children_cpu_ticks)
  log "$name"
  "$@" || status=$?
  local took=$((SECONDS - start))
  local cpu=$((($(children_cpu_ticks) - ticks0) / LOOM_TICKS))
  LOOM_PHASES+=("$(printf '%-16s %8s wall %8s cpu' "$name" "$(mmss $took)" "$(mmss $cpu)")")
  if [[ $status -ne 0 ]]; then
    log "$name FAILED (exit $status) after ${took}s"
  else
    log "$name done in ${took}s (cpu ${cpu}s)"
  fi
  return $status
}

# print_phases: the table of phase timings recorded so far, and the total.
print_phases() {
  log "timings"
  local line
  for line in "${LOOM_PHASES[@]}"; do printf '    %s\n' "$line" >&2; done
  printf '    %-16s %8s wall %8s cpu\n' "total" "$(mmss $SECONDS)" \
    "$(mmss $(($(children_cpu_ticks) / LOOM_TICKS)))" >&2
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
