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

# print_slowest JUNIT_XML [N]: the N (default 20) slowest tests of one ctest
# run, from the JUnit file ctest wrote (--output-junit), slowest first, with
# their seconds. Prints nothing when the file is absent.
print_slowest() {
  local xml="$1" n="${2:-20}"
  [[ -f "$xml" ]] || return 0
  log "the $n slowest tests ($xml)"
  python3 - "$xml" "$n" <<'PY' >&2
import sys, xml.etree.ElementTree as ET
cases = [(float(c.get("time") or 0), c.get("name")) for c in ET.parse(sys.argv[1]).iter("testcase")]
for t, name in sorted(cases, reverse=True)[: int(sys.argv[2])]:
    print(f"    {t:8.1f} s  {name}")
PY
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
