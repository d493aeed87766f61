// The PJRT plugin the xla backend (lazy:xla, docs/backends.md) loads, for
// front ends: the one switch (the CLI's --xla_plugin) and what `loom info`
// reports about it.
// Assumes nothing else: without a call, the plugin is found from PJRT_DEVICE /
// LOOM_PJRT_PLUGIN and the pip wheels. Implemented in
// src/backends/xla/plugin_discovery.cpp.
#pragma once

#include <string>

namespace loom::backends::xla {

/// Uses the PJRT plugin .so at `path` instead of searching for one. Call it
/// before anything names a lazy:xla device (the plugin loads on first use);
/// a bad path surfaces then, as the device's unavailable reason.
void set_pjrt_plugin_path(std::string path);

/// Empty when a PJRT plugin was found (and, with `load` or once it was
/// loaded, loaded and its client started); else one line saying why not (no
/// plugin found: which pip package to install; with `load`: a version
/// mismatch, a client that failed; a build without the header). Without
/// `load` it only looks for the file: the lazy device asks every registered
/// backend at start-up, and a process that never uses lazy:xla loads nothing.
/// Implemented in src/backends/xla/xla_runtime.cpp (unavailable.cpp without
/// the PJRT header).
std::string unavailable_xla_reason(bool load = false);

/// What `loom info` lists (loads the plugin): empty fields when unavailable.
struct XlaInfo {
  std::string plugin_path, api_version, header_version, platform_name, platform_version;
  std::string device_kind;  // "cpu", "NVIDIA H100 80GB HBM3", ... (PjrtClient::device_kind)
  int device_count = 0;
};
XlaInfo xla_info();

}  // namespace loom::backends::xla
