#!/usr/bin/env bash
# scripts/setup.sh: installs every system package loom needs to build and test,
# from Debian's archive (written for bookworm). Idempotent: when everything is
# already installed it runs no apt-get at all. Works as root, or through sudo.
# Then the one Python package the build uses: the XLA CPU PJRT plugin
# (PyPI `xla-cpu-pjrt`: xla_cpu_pjrt.so and the pjrt_c_api.h header CMake
# looks for), pip-installed into the project's own virtual environment
# .venv/ at the repository root (gitignored; never the system Python).
# Then pyarrow (PyPI), whose wheel ships Apache Arrow C++ (libarrow,
# libparquet and their headers): CMake links it for Parquet datasets
# (cmake/LoomDependencies.cmake, loom_find_parquet); Debian packages no Arrow.
# LOOM_SKIP_PYARROW=1 skips it (a .parquet file is then an error saying so).
# Then what the Python package (pyproject.toml, python/) needs to build and
# test in .venv: nanobind, scikit-build-core, numpy, pytest (install_python_build).
# Python packages for regenerating fixtures and for benchmark peers (torch,
# transformers, jax, ...) are NOT installed here: see scripts/setup_peers.sh.
# LOOM_SKIP_XLA_PLUGIN=1 skips the plugin (the xla backend is then unavailable).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# One line per need; keep in step with the find_package calls in CMakeLists.txt
# (each of which names its package here when it fails). Checked on a clean
# bookworm root by scripts/check_fresh_machine.sh, which .ci/run runs.
packages=(
  build-essential g++ cmake ninja-build pkg-config  # compiler, CMake >= 3.25, Ninja, pkg-config
  ccache                                            # faster rebuilds (optional to the build)
  libdnnl-dev                                       # find_package(dnnl): oneDNN GEMM
  ocl-icd-opencl-dev                                # find_package(OpenCL): Debian's oneDNN is built
                                                    #   with its OpenCL GPU runtime, so dnnl-config.cmake
                                                    #   requires the OpenCL loader and headers
  nlohmann-json3-dev                                # find_package(nlohmann_json)
  libcli11-dev                                      # find_package(CLI11): the loom CLI
  libutf8proc-dev                                   # pkg-config libutf8proc: tokenizers (NFC/NFD, categories)
  libpcre2-dev                                      # pkg-config libpcre2-8: the Split pre-tokenizer's
                                                    #   Unicode regexes (Llama-3 / Qwen2 tokenizer.json)
  libgtest-dev libgmock-dev googletest              # find_package(GTest)
  libbenchmark-dev                                  # find_package(benchmark): bench/
  libopenmpi-dev openmpi-bin                        # find_package(MPI): the mpi ProcessGroup
                                                    #   (--ddp_backend mpi) and mpirun for its tests
  iproute2                                          # ip netns / veth: tests/distributed/two_hosts.sh
  python3 python3-pip                               # tools/ scripts and the check_layers CTest
  python3-venv                                      # .venv/ for the xla-cpu-pjrt plugin (below)
  librsvg2-bin                                      # rsvg-convert: training_curves.png next to the
                                                    #   .svg (optional: without it, only the SVG)
  clang libclang-rt-dev                             # fuzz/: clang++ and its libFuzzer runtime
                                                    #   (scripts/fuzz.sh, the fuzz phase of test.sh)
)
# OpenMP and Threads come with g++ (libgomp, libpthread).

# is_installed PKG: true when dpkg reports PKG fully installed (not merely
# known, e.g. removed with its config files left behind).
is_installed() {
  dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed$'
}

missing=()
for pkg in "${packages[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

# install_xla_plugin: pip-installs xla-cpu-pjrt into .venv/ unless its plugin
# and header are already there. The version is pinned (the plugin's PJRT C API
# is 0.81; src/backends/xla/pjrt_plugin.cpp checks the major version).
install_xla_plugin() {
  [[ "${LOOM_SKIP_XLA_PLUGIN:-0}" == "1" ]] && { log "setup: LOOM_SKIP_XLA_PLUGIN=1: no xla plugin"; return 0; }
  local venv="$LOOM_ROOT/.venv"
  local found
  found="$(ls "$venv"/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h 2>/dev/null || true)"
  if [[ -n "$found" ]]; then
    log "setup: xla-cpu-pjrt already in .venv"
    return 0
  fi
  log "setup: pip-installing xla-cpu-pjrt==0.0.1 into $venv (the xla backend's CPU plugin)"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "xla-cpu-pjrt==0.0.1"
  ls "$venv"/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so >/dev/null ||
    die "setup: xla-cpu-pjrt installed no xla_cpu_pjrt.so into $venv"
  log "setup: xla-cpu-pjrt installed"
}

# install_pyarrow: pip-installs pyarrow into .venv/ unless its Arrow C++
# headers are there. Pinned: the version loom was tested with (its libraries
# carry the version in their names, libarrow.so.2600).
install_pyarrow() {
  [[ "${LOOM_SKIP_PYARROW:-0}" == "1" ]] && { log "setup: LOOM_SKIP_PYARROW=1: no Parquet"; return 0; }
  local venv="$LOOM_ROOT/.venv"
  if ls "$venv"/lib/python3*/site-packages/pyarrow/include/parquet/arrow/reader.h >/dev/null 2>&1; then
    log "setup: pyarrow already in .venv"
    return 0
  fi
  log "setup: pip-installing pyarrow==26.0.1 into $venv (Arrow C++ for Parquet datasets)"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "pyarrow==26.0.1"
  ls "$venv"/lib/python3*/site-packages/pyarrow/libparquet.so.* >/dev/null ||
    die "setup: pyarrow installed no libparquet.so.* into $venv"
}

# install_python_build: pip-installs what `pip install --no-build-isolation .`
# and the pytest phase of scripts/test.sh need into .venv/ (docs/python.md),
# unless they are there. Pinned: the versions the package was tested with.
python_build_packages=(nanobind==3.1.0 scikit-build-core==1.1.2 numpy==2.4.6 pytest==9.2.0)
install_python_build() {
  local venv="$LOOM_ROOT/.venv"
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  if "$venv/bin/python" -c 'import nanobind, scikit_build_core, numpy, pytest' 2>/dev/null; then
    log "setup: nanobind, scikit-build-core, numpy, pytest already in .venv"
    return 0
  fi
  log "setup: pip-installing ${python_build_packages[*]} into $venv (the Python package)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${python_build_packages[@]}"
}

if [[ ${#missing[@]} -eq 0 ]]; then
  log "setup: all ${#packages[@]} system packages already installed"
  install_xla_plugin
  install_pyarrow
  install_python_build
  exit 0
fi

command -v apt-get >/dev/null 2>&1 ||
  die "setup: apt-get not found; install by hand: ${missing[*]}"

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 ||
    die "setup: not root and no sudo; as root run: apt-get install ${missing[*]}"
  sudo=(sudo)
fi

log "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"

still_missing=()
for pkg in "${missing[@]}"; do
  is_installed "$pkg" || still_missing+=("$pkg")
done
[[ ${#still_missing[@]} -eq 0 ]] || die "setup: still missing after apt-get: ${still_missing[*]}"
install_xla_plugin
install_pyarrow
install_python_build
log "setup: done"
