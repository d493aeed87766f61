#!/usr/bin/env bash
# scripts/check_fresh_machine.sh: proves the README's install path on a clean
# machine. Builds a minimal Debian bookworm root (debootstrap --variant=minbase,
# from the mirror in this machine's own apt sources), copies a clean `git clone`
# of this checkout's HEAD into it, and runs there what a new user runs:
# scripts/setup.sh, then scripts/demo.sh (the CLI build, a short `loom train` of
# the demo's job, its checks and `loom generate`). Then the device bundle
# (issue 40): scripts/device_bundle.sh packs that build, and a second fresh
# root from the same base, with none of loom's packages, runs the bundle's
# `loom info` and two `lazy:xla` training steps on XLA's CPU plugin (the
# plugin .so from the first root's .venv, bind-mounted read-only and named by
# LOOM_PJRT_PLUGIN: a GPU machine has its own plugin, so the bundle carries
# none). Prints one PASS or FAIL line; on failure also the last lines of the
# failing phase's log.
#
# Assumes: a Debian-like host with apt-get, run as root (debootstrap, chroot and
# mount need it; without root it skips with a message and exits 0), and no
# network beyond the package archive. The root's mounts live in a private mount
# namespace (unshare), so they vanish with it even if this script is killed;
# the root itself is removed on exit, also on failure or Ctrl-C.
#
# The base root (debootstrap's output, before any loom step) is cached as a
# tarball between runs, and downloaded .deb files are kept in an archive cache
# bind-mounted into the root: a later run installs every package anew but does
# not download them again. Each run starts from a fresh copy of the base root.
#
# Environment (all optional):
#   LOOM_FRESH_CACHE=dir   base-root and .deb cache (default /var/cache/loom-fresh)
#   LOOM_FRESH_MAX_AGE=d   rebuild the cached base root after d days (default 30)
#   LOOM_FRESH_STEPS=n     optimizer steps of the short demo run (default 4)
#   LOOM_FRESH_DROP=pkg    remove pkg from the clone's setup.sh first: the check
#                          must then FAIL (how to prove it catches a missing package)
#   LOOM_FRESH_KEEP=1      keep the root and logs for a look (printed path)
#   LOOM_FRESH_TIMEOUT=s   limit for each phase in seconds (default 1800)
#   LOOM_FRESH_BUNDLE=dir  only the bundle phase, on the bundle dir (made here by
#                          scripts/device_bundle.sh) and the plugin
#                          LOOM_PJRT_PLUGIN (default: this checkout's .venv's)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"

suite=bookworm
cache_dir="${LOOM_FRESH_CACHE:-/var/cache/loom-fresh}"
max_age_days="${LOOM_FRESH_MAX_AGE:-30}"
steps="${LOOM_FRESH_STEPS:-4}"
phase_timeout="${LOOM_FRESH_TIMEOUT:-1800}"
# A phase (`__phase`) is this script run again: it inherits work and root
# from main's environment, so they are never reset here.
work="${work:-}"
child=""
self="$LOOM_ROOT/scripts/$(basename "${BASH_SOURCE[0]}")"

# mounts_under DIR: the mount points at or below DIR in this namespace.
mounts_under() {
  awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo
}

# cleanup: stop a running phase, then remove the root, never through a mount.
cleanup() {
  local status=$?
  trap '' INT TERM  # a second Ctrl-C must not cut the clean-up short
  if [[ -n "$child" ]] && kill -0 "$child" 2>/dev/null; then
    kill -TERM -- "-$child" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 "$child" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  if [[ -n "$work" && -d "$work" ]]; then
    local m
    for m in $(mounts_under "$work" | sort -r); do umount -l "$m" 2>/dev/null || true; done
    if [[ -n "$(mounts_under "$work")" ]]; then
      echo "fresh-machine check: mounts left under $work; not removing it" >&2
    elif [[ "${LOOM_FRESH_KEEP:-0}" == "1" ]]; then
      echo "fresh-machine check: kept $work" >&2
    else
      rm -rf --one-file-system "$work"
    fi
  fi
  exit "$status"
}
# fail PHASE STATUS LOG: the FAIL line, then the log's last lines.
fail() {
  local inner
  inner="$(sed -n -E 's/^==> (.*) FAILED .*/\1/p' "$3" | tail -n 1)"
  echo "FAIL: fresh-machine check: phase '$1'${inner:+ (its step '$inner')} failed (exit $2);" \
    "last lines of its log:"
  tail -n 40 "$3" | sed 's/^/    | /'
  exit 1
}

# step NAME FUNCTION ARGS...: runs this script's FUNCTION (through
# `check_fresh_machine.sh __phase`) in its own process group, so cleanup can
# stop all of it, with output to logs/NAME.log, under the phase time limit;
# records its time like common.sh's phase.
step() {
  local name="$1"; shift
  local log_file="$work/logs/$name.log" start=$SECONDS status=0
  log "fresh: $name"
  setsid timeout -k 60 -s TERM "$phase_timeout" bash "$self" __phase "$@" >"$log_file" 2>&1 </dev/null &
  child=$!
  wait "$child" || status=$?
  child=""
  local took=$((SECONDS - start))
  LOOM_PHASES+=("$(printf '%-16s %8s wall' "$name" "$(mmss $took)")")
  [[ $status -eq 0 ]] || { print_phases; fail "$name" "$status" "$log_file"; }
  log "fresh: $name done in ${took}s"
}

# host_sources: "URI SUITE" for each enabled deb source of this machine for a
# bookworm suite with the main component (one-line and deb822 formats). Plain
# awk: the host may not have python3 before setup.sh ran.
host_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//g' "$f" | awk -v want="$suite" '
      $1 == "deb" && NF >= 4 && ($3 == want || index($3, want "-") == 1) {
        for (i = 4; i <= NF; i++) if ($i == "main") { sub(/\/$/, "", $2); print $2, $3; break }
      }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    awk -v want="$suite" '
      function flush(  n, u, s, i, j, t, main) {
        main = 0; for (i in comps) if (comps[i] == "main") main = 1
        t = 0; for (i in types) if (types[i] == "deb") t = 1
        if (t && main && tolower(enabled) != "no")
          for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
            if (suites[j] == want || index(suites[j], want "-") == 1) {
              u = uris[i]; sub(/\/$/, "", u); print u, suites[j]
            }
        delete types; delete comps; delete uris; delete suites; nu = ns = 0; enabled = "yes"
      }
      BEGIN { enabled = "yes" }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      {
        key = tolower($1); sub(/:$/, "", key)
        if (key == "types") for (i = 2; i <= NF; i++) types[i] = $i
        if (key == "components") for (i = 2; i <= NF; i++) comps[i] = $i
        if (key == "uris") for (i = 2; i <= NF; i++) uris[++nu] = $i
        if (key == "suites") for (i = 2; i <= NF; i++) suites[++ns] = $i
        if (key == "enabled") enabled = $2
      }
      END { flush() }' "$f"
  done | awk '!seen[$0]++'
}

# host_apt_conf: this machine's Acquire settings that the archive needs
# (a proxy; validity checks turned off for a snapshot mirror), as apt.conf lines.
host_apt_conf() {
  apt-config dump | grep -E '^Acquire::(Check-Valid-Until|Check-Date|https?::Proxy) ' || true
}

# in_root COMMAND: runs COMMAND (a bash command line) in the root, as a new
# user's root login would: clean environment, /proc, /dev and /sys mounted, the
# .deb cache at /var/cache/apt/archives; all mounts in a private namespace.
in_root() {
  unshare --mount --propagation private --fork -- bash -c '
    set -e
    root="$1" debs="$2" cmd="$3"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t sysfs -o ro sysfs "$root/sys"
    mount --bind "$debs" "$root/var/cache/apt/archives"
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/bash -c "$cmd"' _ "$root" "$cache_dir/debs" "$1"
}

# base_root: the cached debootstrap tarball, made when missing or too old.
base_root() {
  local mirror="$1" tarball="$2"
  if [[ -f "$tarball" ]] && [[ -z "$(find "$tarball" -mtime +"$max_age_days")" ]]; then
    echo "cached base root: $tarball"
    return 0
  fi
  command -v debootstrap >/dev/null 2>&1 || {
    env DEBIAN_FRONTEND=noninteractive apt-get update -q
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap
  }
  local base="$work/base"
  # In its own mount namespace: what debootstrap mounts in the target goes with it.
  unshare --mount --propagation private --fork -- \
    debootstrap --variant=minbase "$suite" "$base" "$mirror"
  rm -rf "$base/var/cache/apt/archives"/*.deb "$base/var/lib/apt/lists"/*
  tar -C "$base" --numeric-owner -czf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf --one-file-system "$base"
}

# host_pip_conf ROOT: this machine's pip settings for PyPI in the root, as its
# apt sources are: the CA bundle pip trusts here (PIP_CERT, or pip.conf's
# global.cert; a proxy's own CA may be in it) becomes the root's
# /etc/pip.conf cert. setup.sh pip-installs the xla plugin (xla-cpu-pjrt), and
# the root's own ca-certificates bundle does not hold such a CA. Nothing when
# pip here uses the system's CAs.
host_pip_conf() {
  local cert="${PIP_CERT:-}"
  [[ -n "$cert" ]] || cert="$(sed -n 's/^ *cert *= *//p' /etc/pip.conf 2>/dev/null | head -n 1)"
  [[ -n "$cert" && -f "$cert" ]] || return 0
  cp -L "$cert" "$1/etc/loom-fresh-host-ca.crt"
  printf '[global]\ncert = /etc/loom-fresh-host-ca.crt\n' >"$1/etc/pip.conf"
  echo "pip in the root trusts this machine's CA bundle ($cert)"
}

# prepare_root TARBALL: a fresh root from the base, with this machine's apt
# sources and settings and its DNS, and a clean clone of HEAD in /root/loom.
prepare_root() {
  mkdir -p "$root"
  tar -C "$root" --numeric-owner -xzf "$1"
  rm -f "$root"/etc/apt/sources.list.d/*
  host_sources | awk '{ print "deb " $1 " " $2 " main" }' >"$root/etc/apt/sources.list"
  host_apt_conf >"$root/etc/apt/apt.conf.d/90loom-fresh-host"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  host_pip_conf "$root"
  echo "apt sources in the root:"; cat "$root/etc/apt/sources.list"
  git clone --quiet --no-hardlinks "$LOOM_ROOT" "$root/root/loom"
  git -C "$root/root/loom" log -1 --format='cloned %h %s'
  if [[ -n "${LOOM_FRESH_DROP:-}" ]]; then
    local setup="$root/root/loom/scripts/setup.sh"
    local re
    re="$(printf '%s' "$LOOM_FRESH_DROP" | sed 's/[][\.*^$+?(){}|/]/\\&/g')"
    sed -i -E "/^packages=\(/,/^\)/ s/(^|[[:space:]])${re}([[:space:]]|$)/\1\2/" "$setup"
    if sed -n '/^packages=(/,/^)/p' "$setup" | sed 's/#.*//' | grep -qwF -- "$LOOM_FRESH_DROP"; then
      echo "LOOM_FRESH_DROP: ${LOOM_FRESH_DROP} is still in setup.sh's package list"
      return 1
    fi
    echo "LOOM_FRESH_DROP: removed ${LOOM_FRESH_DROP} from setup.sh:"
    sed -n '/^packages=(/,/^)/p' "$setup"
  fi
}

# in_bare_root ROOT PLUGIN COMMAND: runs COMMAND (a bash command line) in ROOT
# as in_root does, with the PJRT plugin file PLUGIN bind-mounted read-only at
# /opt/pjrt/xla_cpu_pjrt.so and named by LOOM_PJRT_PLUGIN; no .deb cache.
in_bare_root() {
  unshare --mount --propagation private --fork -- bash -c '
    set -e
    root="$1" plugin="$2" cmd="$3"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t sysfs -o ro sysfs "$root/sys"
    mkdir -p "$root/opt/pjrt"
    touch "$root/opt/pjrt/xla_cpu_pjrt.so"
    mount --bind -o ro "$plugin" "$root/opt/pjrt/xla_cpu_pjrt.so"
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      LOOM_PJRT_PLUGIN=/opt/pjrt/xla_cpu_pjrt.so /bin/bash -c "$cmd"' _ "$1" "$2" "$3"
}

# bundle_check TARBALL BUNDLE PLUGIN: a second fresh root from the base (no
# loom package in it: checked), the bundle copied to /root/device, then its
# `loom info` (the plugin's platform line) and two lazy:xla steps of a tiny
# GPT-2 on the bundle's own tokenizer and corpus slice.
bundle_check() {
  local bare="$work/bare"
  mkdir -p "$bare"
  tar -C "$bare" --numeric-owner -xzf "$1"
  cp -r "$2" "$bare/root/device"
  du -sh "$bare/root/device"
  in_bare_root "$bare" "$3" '
    set -e
    if ls /usr/lib/x86_64-linux-gnu/libdnnl* /usr/lib/x86_64-linux-gnu/libmpi* 2>/dev/null; then
      echo "the bare root has loom dependencies installed"; exit 1
    fi
    cd /root/device
    ./loom info | tee /tmp/info.txt
    grep -q "^xla: .*platform cpu" /tmp/info.txt
    ./loom train --task causal-lm --model_type gpt2 \
      --config_overrides n_layer=1,n_embd=32,n_head=2,n_positions=32 \
      --tokenizer_name data/gpt2 --train_file data/austen/prideprejudice.txt \
      --max_train_samples 64 --block_size 32 --per_device_train_batch_size 2 \
      --max_steps 2 --logging_steps 1 --save_strategy no --device lazy:xla \
      --output_dir /tmp/bundle_out --disable_tqdm | tee /tmp/train.txt
    grep -q "train_loss" /tmp/train.txt
    test "$(grep -c "[{ ].loss.: " /tmp/train.txt)" = 2  # one logged loss per step
    echo "bundle ok: loom info and 2 lazy:xla steps in a root without loom'"'"'s packages"'
}

# bundle_only BUNDLE: LOOM_FRESH_BUNDLE's path: the base root and the bundle check.
bundle_only() {
  local plugin="${LOOM_PJRT_PLUGIN:-}"
  [[ -n "$plugin" ]] ||
    plugin="$(ls "$LOOM_ROOT"/.venv/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so 2>/dev/null | head -n 1)"
  [[ -f "$plugin" ]] || { echo "FAIL: fresh-machine check: no CPU PJRT plugin (LOOM_PJRT_PLUGIN)"; exit 1; }
  [[ -x "$1/loom" ]] || { echo "FAIL: fresh-machine check: $1 is not a device bundle"; exit 1; }
  step bundle-clean bundle_check "$2" "$(cd "$1" && pwd)" "$(readlink -f "$plugin")"
  print_phases
  echo "PASS: fresh-machine check: the device bundle $1 ran loom info and 2 lazy:xla steps" \
    "in a clean $suite root in $(mmss $SECONDS)"
  exit 0
}

main() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: fresh-machine check: needs root (debootstrap, chroot, mount)"
    exit 0
  fi
  if ! unshare --mount --fork true 2>/dev/null; then
    echo "SKIP: fresh-machine check: cannot make a mount namespace here (unshare --mount)"
    exit 0
  fi
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  mkdir -p "$cache_dir/debs/partial"
  work="$(mktemp -d /var/tmp/loom-fresh.XXXXXX)"
  root="$work/root"
  export work root
  mkdir -p "$work/logs"

  local sources mirror
  sources="$(host_sources)"
  mirror="$(awk -v s="$suite" '$2 == s { print $1; exit }' <<<"$sources")"
  [[ -n "$mirror" ]] || { echo "FAIL: fresh-machine check: no '$suite main' source in /etc/apt"; exit 1; }
  local key
  key="$(printf '%s' "$mirror" | md5sum | cut -c1-12)"
  local tarball="$cache_dir/$suite-minbase-$key.tar.gz"
  if ! git -C "$LOOM_ROOT" diff --quiet HEAD 2>/dev/null; then
    log "fresh: the work tree has uncommitted changes; the check runs HEAD only"
  fi

  step base-root base_root "$mirror" "$tarball"
  [[ -z "${LOOM_FRESH_BUNDLE:-}" ]] || bundle_only "$LOOM_FRESH_BUNDLE" "$tarball"
  step prepare prepare_root "$tarball"
  step setup in_root "cd /root/loom && bash scripts/setup.sh"
  # The README's first command, shortened: a few steps, two small evaluations.
  local eval_steps=$(((steps + 1) / 2))
  step demo in_root "cd /root/loom && CCACHE_DISABLE=1 LOOM_DEMO_STEPS=$steps \
    LOOM_DEMO_EVAL_STEPS=$eval_steps LOOM_DEMO_EVAL_SAMPLES=16 bash scripts/demo.sh"
  step bundle in_root "cd /root/loom && LOOM_BUILD_DIR=build bash scripts/device_bundle.sh out/device"
  local plugin
  plugin="$(ls "$root"/root/loom/.venv/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so | head -n 1)"
  step bundle-clean bundle_check "$tarball" "$root/root/loom/out/device" "$plugin"
  print_phases
  local commit
  commit="$(git -C "$LOOM_ROOT" log -1 --format=%h)"
  echo "PASS: fresh-machine check: on a clean $suite root, scripts/setup.sh and scripts/demo.sh" \
    "($steps steps, loom generate) passed for $commit, and its device bundle in a root" \
    "without loom's packages, in $(mmss $SECONDS)"
}

if [[ "${1:-}" == "__phase" ]]; then
  shift
  # Never run a phase outside main's own work folder (base_root removes
  # "$work/base"; an empty $work would make that /base).
  [[ "$work" == /var/tmp/loom-fresh.* && "${root:-}" == "$work/root" ]] ||
    { echo "check_fresh_machine.sh: __phase needs main's work folder, got '$work'" >&2; exit 2; }
  "$@"
else
  main "$@"
fi
