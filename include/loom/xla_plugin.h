// The PJRT plugin the xla backend (lazy:xla, docs/backends.md) loads: the one
// public switch of that backend, for front ends (the CLI's --xla_plugin).
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

}  // namespace loom::backends::xla
