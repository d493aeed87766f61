#!/usr/bin/env bash
# scripts/device_bundle.sh: packs the `loom` CLI into a folder that runs on a
# machine without loom's build dependencies (a GPU machine lent for a few
# minutes, with no network and none of our Debian packages; issue 40):
#
#   out/device/
#     loom             launcher (POSIX sh): unpacks payload.tar.gz once into
#                      ${LOOM_BUNDLE_DIR:-${TMPDIR:-/tmp}/loom-device-<id>} and
#                      runs the binary from there: `out/device/loom info`
#     payload.tar.gz   loom (the binary, stripped; RPATH $ORIGIN/lib) and lib/:
#                      every shared library it loads (ldd's closure) beyond
#                      glibc; the compiler's runtimes (libstdc++, libgcc_s,
#                      libgomp) in lib/runtime/, which the launcher links into
#                      lib/ only where the system's copy is missing or older
#                      than the binary needs (a newer system copy is kept: the
#                      PJRT plugin loaded into the process may need it)
#     data/gpt2/       GPT-2's tokenizer (vocab.json, merges.txt)
#     data/austen/     a slice of the Austen corpus (Pride and Prejudice)
#     run.sh           the one-call check on the GPU machine (docs/backends.md)
#     peer/            the JAX peers run.sh times beside loom
#     MANIFEST.txt     what was packed, from which commit, the glibc it needs
#
# gzip, because oneDNN alone is 38 MiB unpacked (11 MiB packed) and the
# folder must stay under LOOM_BUNDLE_MAX_MIB (40). Not shipped: glibc (the
# binary needs the glibc version MANIFEST.txt names, or newer), the PJRT
# plugin (run.sh finds the device's in python3's site-packages, or
# LOOM_PJRT_PLUGIN / --xla_plugin names one) and Open MPI's run-time
# components (mpirun is not part of the bundle: one process per bundle).
#
# Usage: scripts/device_bundle.sh [OUT_DIR]   (default out/device; replaced)
# Environment: LOOM_BUILD_DIR (default build) or LOOM_BUNDLE_BINARY (the loom
# binary to pack, default $LOOM_BUILD_DIR/loom), LOOM_BUNDLE_MAX_MIB (40).
# Assumes: Linux x86-64, glibc, ldd, gzip, tar, python3 (tools/elf_rpath.py);
# strip when binutils is there.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LOOM_ROOT"

out="${1:-out/device}"
binary="${LOOM_BUNDLE_BINARY:-${LOOM_BUILD_DIR:-build}/loom}"
max_mib="${LOOM_BUNDLE_MAX_MIB:-40}"
[[ -x "$binary" ]] || die "device_bundle: no loom binary at $binary (build the loom_cli target first)"
grep -aq '\$ORIGIN/lib' "$binary" ||
  die "device_bundle: $binary has no RPATH \$ORIGIN/lib (built before CMakeLists.txt set it? rebuild loom_cli)"

# glibc's own libraries and the loader: the machine's, never ours.
is_glibc() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libutil.so.* | libresolv.so.* | libanl.so.* | libmvec.so.*) return 0 ;;
  esac
  return 1
}
is_runtime() {
  case "$1" in libstdc++.so.* | libgcc_s.so.* | libgomp.so.*) return 0 ;; esac
  return 1
}

stage="$(mktemp -d "${TMPDIR:-/tmp}/loom-bundle.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/payload/lib/runtime" "$stage/out/data/gpt2" "$stage/out/data/austen" "$stage/out/peer"

cp "$binary" "$stage/payload/loom"
if command -v strip >/dev/null 2>&1; then strip --strip-unneeded "$stage/payload/loom"; fi

# ldd's closure (it resolves dependencies of dependencies): "name => path (addr)".
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' >"$stage/deps.txt"
if ldd "$binary" | grep -q 'not found'; then
  ldd "$binary" | grep 'not found' >&2
  die "device_bundle: $binary has libraries ldd cannot find here"
fi
while read -r name path; do
  is_glibc "$name" && continue
  if is_runtime "$name"; then
    cp -L "$path" "$stage/payload/lib/runtime/$name"
  else
    cp -L "$path" "$stage/payload/lib/$name"
  fi
done <"$stage/deps.txt"
chmod 755 "$stage/payload/lib"/*.so* "$stage/payload/lib/runtime"/*.so* 2>/dev/null || true
# A library with its own DT_RUNPATH (Debian's libmpi, libopen-rte) would look
# for its dependencies there only, never in the binary's RPATH: point it at
# its own folder ($ORIGIN, as a DT_RPATH; tools/elf_rpath.py says why).
python3 tools/elf_rpath.py "$stage/payload/lib"/*.so* >"$stage/rpath.txt" ||
  die "device_bundle: tools/elf_rpath.py failed"

# newest_tag PREFIX FILES...: the newest symbol version PREFIX_x.y.z the files
# reference (grep on the bytes: the version names are strings in the ELF).
newest_tag() {
  local prefix="$1"; shift
  grep -aoh "${prefix}_[0-9][0-9.]*[0-9]" "$@" 2>/dev/null | sort -uV | tail -n 1 || true
}
users=("$stage/payload/loom" "$stage/payload/lib"/*.so*)
# lib/runtime/needs: "<soname> <newest version tag loom and its libraries use>".
{
  for lib in "$stage/payload/lib/runtime"/*.so*; do
    n="$(basename "$lib")"
    case "$n" in
      libstdc++*) tag="$(newest_tag GLIBCXX "${users[@]}")" ;;
      libgcc_s*) tag="$(newest_tag GCC "${users[@]}")" ;;
      libgomp*) tag="$(newest_tag GOMP "${users[@]}")" ;;
      *) tag="" ;;
    esac
    echo "$n ${tag:-none}"
  done
} >"$stage/payload/lib/runtime/needs"
glibc_needed="$(newest_tag GLIBC "${users[@]}" "$stage/payload/lib/runtime"/*.so* | sed 's/GLIBC_//')"

tar -C "$stage/payload" --owner=0 --group=0 --numeric-owner -cf - loom lib |
  gzip -6 >"$stage/out/payload.tar.gz"
payload_id="$(sha256sum "$stage/out/payload.tar.gz" | cut -c1-16)"
echo "$payload_id" >"$stage/out/payload.id"
echo "$glibc_needed" >"$stage/out/glibc.needed"

cp assets/tokenizers/gpt2/{vocab.json,merges.txt,NOTICE.md} "$stage/out/data/gpt2/"
cp assets/corpora/austen/{prideprejudice.txt,NOTICE.md} "$stage/out/data/austen/"
cp scripts/device/run.sh scripts/device/loom "$stage/out/"
cp bench/gpt2_step_jax_peer.py bench/bf16_matmul_peak.py "$stage/out/peer/"
chmod 755 "$stage/out/run.sh" "$stage/out/loom"

{
  echo "loom device bundle (scripts/device_bundle.sh)"
  echo "commit: $(git -C "$LOOM_ROOT" log -1 --format='%h %cs' 2>/dev/null || echo unknown)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
  echo "payload id: $payload_id"
  echo "needs: glibc >= $glibc_needed, Linux x86-64; python3 with a PJRT plugin (run.sh)"
  echo "runtime libraries (used where the system's are missing or older):"
  sed 's/^/  /' "$stage/payload/lib/runtime/needs"
  echo "files (bytes unpacked):"
  (cd "$stage/payload" && find loom lib -type f -printf '  %s %p\n' | sort -k2)
} >"$stage/out/MANIFEST.txt"

bytes="$(du -sb "$stage/out" | cut -f1)"
(( bytes <= max_mib * 1024 * 1024 )) ||
  die "device_bundle: the bundle is $((bytes / 1024 / 1024)) MiB, over LOOM_BUNDLE_MAX_MIB=$max_mib"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -r "$stage/out" "$out"
echo "device bundle: $out, $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB" \
  "($(wc -l <"$stage/deps.txt") libraries by ldd, glibc >= $glibc_needed, payload $payload_id)"
