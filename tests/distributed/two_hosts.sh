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
#     to the veth subnet, so the ranks' traffic crosses the veth pair;
#   - TCP keepalive on mpirun's links to its daemons after 5 s idle, 3 probes
#     1 s apart: a dead link ends the job in seconds (Open MPI's default,
#     300 s + 9 x 20 s, would keep mpirun waiting 8 minutes after the ranks
#     have stopped).
# --cut-link REGEX SECONDS: when the output first matches REGEX, hostb's end
# of the veth pair is set down (`ip link set down`: the network between the
# ranks is cut mid-run); the job must then end within SECONDS, else FAIL.
# CTest dist_two_hosts_cut_link. mpirun (Open MPI 4.1) ends only because both
# namespaces set net.ipv4.tcp_retries2=3 (below): with Linux's default its
# kill order to the unreachable daemon is retransmitted for ~15 minutes.
# LOOM_TWO_HOSTS_TAG=x (default empty) suffixes the namespace and veth names,
# so that two such jobs (other users of the machine) do not remove each other's.
# Exit code: CMD's job's (with --expect, 1 as well when the output does not
# match each extended regex REGEX; with --cut-link, 0 when the job ended, for
# any reason, in time after the cut and matched every --expect); 77 (CTest SKIP_RETURN_CODE) with a message when
# not root, or ip / unshare / mpirun are missing, or namespaces cannot be
# made. The namespaces and /etc/netns entries are removed on every exit.
set -uo pipefail
self=$(readlink -f "${BASH_SOURCE[0]}")

tag=${LOOM_TWO_HOSTS_TAG:-}
if [[ ${1:-} == --agent ]]; then  # the rsh agent: HOST COMMAND...
  host=$2
  shift 2
  exec ip netns exec "loom_$host$tag" unshare --uts sh -c "hostname $host && $*"
fi

expect=()  # --expect may be given more than once: every regex must match
cut_when=""
cut_within=0
while [[ ${1:-} == --expect || ${1:-} == --cut-link ]]; do
  if [[ $1 == --expect ]]; then
    expect+=("$2")
    shift 2
  else
    cut_when=$2
    cut_within=$3
    shift 3
  fi
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
cut_at=$(mktemp)
nsa=loom_hosta$tag nsb=loom_hostb$tag va=loomva$tag vb=loomvb$tag
watcher=""
# kill_namespace_procs: ends what still runs inside the two namespaces (an
# Open MPI daemon orphaned on hostb once its link to mpirun was cut would
# otherwise live on, holding the output file open).
kill_namespace_procs() {
  local ns
  for ns in $nsa $nsb; do
    ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null
  done
}
cleanup() {
  [[ -z $watcher ]] || kill "$watcher" 2>/dev/null
  kill_namespace_procs
  rm -f "$out" "$cut_at"
  ip netns del $nsa 2>/dev/null
  ip netns del $nsb 2>/dev/null
  rm -rf /etc/netns/$nsa /etc/netns/$nsb
}
cleanup
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add $nsa 2>/dev/null || skip "cannot create a network namespace (ip netns add failed)"
ip netns add $nsb || exit 1
ip link add $va type veth peer name $vb || skip "cannot create a veth pair"
# TCP gives up on unacknowledged data after 3 retransmissions (about 3 s)
# instead of Linux's default 15 (about 15 minutes): once the link is cut,
# mpirun's pending kill order to hostb's daemon then fails in seconds and
# mpirun exits (keepalive covers only idle connections). Per namespace; the
# setting a cluster would make on its hosts (docs/distributed.md).
for ns in $nsa $nsb; do
  ip netns exec $ns sysctl -qw net.ipv4.tcp_retries2=3 2>/dev/null ||
    echo "two_hosts: cannot set net.ipv4.tcp_retries2 in $ns"
done
ip link set $va netns $nsa && ip link set $vb netns $nsb || exit 1
ip -n $nsa addr add $net.1/24 dev $va && ip -n $nsb addr add $net.2/24 dev $vb || exit 1
for ns in $nsa $nsb; do
  ip -n $ns link set lo up && ip -n $ns link set "loomv${ns:9:1}$tag" up || exit 1
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
  --mca btl_tcp_if_include $net.0/24 --mca oob_tcp_if_include $net.0/24 \
  --mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3 \
  "$@")
if [[ -n $cut_when ]]; then  # cuts the link once the output matches cut_when
  (
    until grep -Eq -- "$cut_when" "$out" 2>/dev/null; do sleep 0.2; done
    ip -n $nsb link set $vb down && date +%s.%N >"$cut_at" &&
      echo "two_hosts: link $vb on hostb set down (output matched /$cut_when/)"
  ) &
  watcher=$!
fi
# The job writes into $out (not a pipe: a process it leaves behind could keep
# a pipe open forever); tail shows it as it comes and stops with the job.
timeout -k 5 "${LOOM_TWO_HOSTS_TIMEOUT:-240}" \
  ip netns exec $nsa unshare --uts sh -c "hostname hosta && exec $cmd" >"$out" 2>&1 &
job=$!
tail -f -n +1 --pid=$job "$out"
wait $job
rc=$?
ended=$(date +%s.%N)
echo "two_hosts: exit code $rc; veth bytes received on hostb: $(ip -n $nsb -s link show $vb | awk '/RX:/{getline; print $1}')"
matched=1
for e in "${expect[@]}"; do
  if ! grep -Eq -- "$e" "$out"; then
    echo "FAIL: output does not match /$e/"
    matched=0
    [[ $rc -ne 0 ]] || rc=1
  fi
done
if [[ -n $cut_when ]]; then
  if [[ ! -s $cut_at ]]; then
    echo "FAIL: the output never matched /$cut_when/, so the link was never cut"
    exit 1
  fi
  took=$(awk -v a="$(cat "$cut_at")" -v b="$ended" 'BEGIN { printf "%.1f", b - a }')
  echo "two_hosts: the job ended ${took} s after the link was cut (limit ${cut_within} s)"
  if awk -v t="$took" -v l="$cut_within" 'BEGIN { exit !(t > l) }'; then
    echo "FAIL: the job took longer than ${cut_within} s to end after the cut"
    exit 1
  fi
  [[ $matched -eq 1 ]] || exit 1
  exit 0
fi
exit $rc
