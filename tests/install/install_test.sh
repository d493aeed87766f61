#!/usr/bin/env bash
# tests/install/install_test.sh BUILD_DIR WORK_DIR: installs the built loom
# (`cmake --install BUILD_DIR --prefix WORK_DIR/prefix`), then builds and runs
# tests/install/consumer/ against that prefix twice: with CMake's
# find_package(loom CONFIG) and with `pkg-config --cflags --libs loom`.
# Each run must print the consumer's line with the gradient 2x of x = 1, 2, 3.
# The prefix is moved after the install and before the consumers are built:
# the installed tree is relocatable (loomConfig.cmake and loom.pc find their
# prefix from their own location).
# Assumes BUILD_DIR has libloom and the loom CLI built (ctest runs after the build).
set -euo pipefail
build="$1"
work="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
installed="$work/installed"
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"
expect='consumer: grad 2 4 6; models .*gpt2'

# The library folder GNUInstallDirs chose when the build was configured.
libdir="$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")"
libdir="${libdir:-lib}"
cmake --install "$build" --prefix "$installed" >"$work/install.log"
mv "$installed" "$prefix"
for f in include/loom/tensor.h "$libdir/libloom.a" bin/loom "$libdir/cmake/loom/loomConfig.cmake" \
  "$libdir/pkgconfig/loom.pc"; do
  [[ -e "$prefix/$f" ]] || { echo "install_test: $prefix/$f not installed" >&2; exit 1; }
done
"$prefix/bin/loom" --version

# 1. find_package(loom CONFIG)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$here/consumer" -B "$work/cmake_build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$work/configure.log"
cmake --build "$work/cmake_build" >"$work/build.log"
out="$("$work/cmake_build/consumer")"
echo "find_package: $out"
[[ "$out" =~ $expect ]] || { echo "install_test: find_package consumer printed '$out'" >&2; exit 1; }

# 2. pkg-config
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
read -r -a flags <<<"$(pkg-config --cflags --libs loom)"
${CCACHE:-$(command -v ccache || true)} "${CXX:-c++}" -O1 "$here/consumer/main.cpp" \
  -o "$work/consumer_pc" "${flags[@]}"
out="$("$work/consumer_pc")"
echo "pkg-config: $out"
[[ "$out" =~ $expect ]] || { echo "install_test: pkg-config consumer printed '$out'" >&2; exit 1; }
echo "install_test: ok"
