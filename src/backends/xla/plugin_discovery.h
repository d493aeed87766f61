// Which PJRT plugin the xla backend loads, found the way PyTorch/XLA users
// expect (no PJRT header needed: compiled in every build):
//   1. an explicit path: set_pjrt_plugin_path() (the CLI's --xla_plugin PATH),
//      else the environment variable LOOM_PJRT_PLUGIN=PATH;
//   2. else PJRT_DEVICE=CPU|CUDA|ROCM|TPU (default CPU) picks a known wheel,
//      looked up in the project's .venv/, $VIRTUAL_ENV and python3's
//      site-packages (site.getsitepackages() and the user site):
//        CPU   xla-cpu-pjrt     xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so
//        CUDA  jax-cuda12-pjrt  jax_plugins/xla_cuda12/xla_cuda_plugin.so
//              jax-cuda13-pjrt  jax_plugins/xla_cuda13/xla_cuda_plugin.so
//        ROCM  jax-rocm7-pjrt   jax_plugins/xla_rocm7/xla_rocm_plugin.so
//        TPU   libtpu           libtpu/libtpu.so (or TPU_LIBRARY_PATH=PATH)
// The wheels' file layouts are facts of those packages (CPU checked here;
// the others as their wheels ship them, untested here: docs/backends.md).
#pragma once

#include <string>
#include <vector>

namespace loom::backends::xla {

/// The plugin the CLI's --xla_plugin named (empty: unset). Takes effect
/// only before the xla backend first loads a plugin.
void set_pjrt_plugin_path(std::string path);

/// The plugin file to load. Throws loom::Error with one line, e.g.
///   "[xla] no PJRT plugin for PJRT_DEVICE=CPU: install it with `pip install
///    xla-cpu-pjrt` (looked in .venv/..., /usr/lib/python3/dist-packages), or
///    name the plugin's .so with --xla_plugin PATH / LOOM_PJRT_PLUGIN=PATH"
/// or for an explicit path that does not exist, or an unknown PJRT_DEVICE.
std::string find_pjrt_plugin();

/// The site-packages folders searched, in order (for messages and tests).
std::vector<std::string> pjrt_search_dirs();

}  // namespace loom::backends::xla
