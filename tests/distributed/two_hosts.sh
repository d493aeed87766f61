#!/usr/bin/env bash
# tests/distributed/two_hosts.sh [--expect REGEX]... CMD...: runs CMD as a 2-rank Open MPI job on two
# "hosts" made on this machine, one rank each, talking over TCP:
#   - two network namespaces (ip netns) joined by a veth pair, 10.231.N.1/2,
#     each with its own host name (a UTS namespace: unshare --uts) and an
#     /etc/hosts naming both (ip netns exec bind-mounts /etc/netns/<ns>/hosts);
#   - mpirun runs inside the first ("hosta") with --host hosta,hostb; Open MPI
#     starts its daemon on "hostb" through the rsh agent (--mca plm_rsh_agent),
#     this script called as `two_hosts.sh --agent HOST COMMAND...`, which enters
#     that host's namespaces instead of ssh-ing;
#   - --mca btl tcp,self (no shared memory) and both TCP interfaces limited
#     to the veth subnet, so the ranks' traffic crosses the veth pair.
# Exit code: CMD's job's (with --expect, 1 as well when the output does not
# match each extended regex REGEX); 77 (CTest SKIP_RETURN_CODE) with a message when
# not root, or ip / unshare / mpirun are missing, or namespaces cannot be
# made. The namespaces and /etc/netns entries are removed on every exit.
set -uo pipefail
self=$(readlink -f "${BASH_SOURCE[0]}")

if [[ ${1:-} == --agent ]]; then  # the rsh agent: HOST COMMAND...
  host=$2
  shift 2
  exec ip netns exec "loom_$host" unshare --uts sh -c "hostname $host && $*"
fi

expect=()  # --expect may be given more than once: every regex must match
while [[ ${1:-} == --expect ]]; do
  expect+=("$2")
  shift 2
done
skip() {
  echo "SKIP: $*"
  exit 77
}
[[ $# -ge 1 ]] || { echo "usage: two_hosts.sh CMD..." >&2; exit 2; }
[[ ${LOOM_WITH_MPI:-1} != 0 ]] || skip "loom was built without MPI"
[[ $(id -u) -eq 0 ]] || skip "two_hosts.sh needs root (network namespaces)"
for tool in ip unshare mpirun hostname; do
  command -v $tool >/dev/null || skip "$tool not found (scripts/setup.sh installs iproute2, openmpi-bin)"
done

# One job at a time on this machine: fixed names, so a leftover from a killed
# run is removed here rather than piling up.
net=10.231.77
out=$(mktemp)
cleanup() {
  rm -f "$out"
  ip netns del loom_hosta 2>/dev/null
  ip netns del loom_hostb 2>/dev/null
  rm -rf /etc/netns/loom_hosta /etc/netns/loom_hostb
}
cleanup
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add loom_hosta 2>/dev/null || skip "cannot create a network namespace (ip netns add failed)"
ip netns add loom_hostb || exit 1
ip link add loomva type veth peer name loomvb || skip "cannot create a veth pair"
ip link set loomva netns loom_hosta && ip link set loomvb netns loom_hostb || exit 1
ip -n loom_hosta addr add $net.1/24 dev loomva && ip -n loom_hostb addr add $net.2/24 dev loomvb || exit 1
for ns in loom_hosta loom_hostb; do
  ip -n $ns link set lo up && ip -n $ns link set "loomv${ns: -1}" up || exit 1
  mkdir -p /etc/netns/$ns
  printf '127.0.0.1 localhost\n%s.1 hosta\n%s.2 hostb\n' $net $net >/etc/netns/$ns/hosts
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under the sanitizer build: Open MPI keeps its allocations until exit (and
# MPI_Abort skips every destructor), which LeakSanitizer would report as ours.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# The command line mpirun runs in hosta's namespaces (quoted once for sh -c).
cmd=$(printf '%q ' mpirun -np 2 --host hosta,hostb --oversubscribe --bind-to none \
  --mca plm_rsh_agent "$self --agent" --mca btl tcp,self \
  --mca btl_tcp_if_include $net.0/24 --mca oob_tcp_if_include $net.0/24 "$@")
timeout -k 5 "${LOOM_TWO_HOSTS_TIMEOUT:-240}" \
  ip netns exec loom_hosta unshare --uts sh -c "hostname hosta && exec $cmd" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
echo "two_hosts: exit code $rc; veth bytes received on hostb: $(ip -n loom_hostb -s link show loomvb | awk '/RX:/{getline; print $1}')"
for e in "${expect[@]}"; do
  if ! grep -Eq -- "$e" "$out"; then
    echo "FAIL: output does not match /$e/"
    [[ $rc -ne 0 ]] || rc=1
  fi
done
exit $rc
