// The xla backend's process-wide PJRT state, usable in every build: the
// plugin (plugin_discovery.h) loaded and its client created once, on first
// use, with one line printed to stderr
//   loom: xla: PJRT plugin <path> (PJRT C API 0.81, platform cpu, 4 devices)
// and run_mlir, which compiles StableHLO text and runs it on host arrays
// (the xla lowering's tests use it). In a build without the PJRT header
// (LOOM_WITH_PJRT=0) unavailable_xla_reason() says so and the rest throws it.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "loom/xla_plugin.h"  // unavailable_xla_reason, XlaInfo, xla_info
#include "ops/attrs.h"

namespace loom::backends {

class Backend;
/// XLA through a PJRT plugin (xla_backend.h): StableHLO compiled by the
/// plugin, memory in PJRT buffers; unavailable_reason() when no plugin (or
/// no PJRT header: unavailable.cpp). Registered in backends/registry.cpp.
const Backend& xla_backend();

}  // namespace loom::backends

namespace loom::backends::xla {

class PjrtClient;

/// The process's client, loading the plugin on first use (and printing its
/// line); throws loom::Error with unavailable_xla_reason(true).
const PjrtClient& xla_client();

/// A host array: type and row-major bytes.
struct HostArray {
  ops::TensorType type;
  std::vector<std::byte> bytes;

  template <typename T>
  static HostArray of(Shape shape, const std::vector<T>& values, DType dtype) {
    HostArray a{{std::move(shape), dtype}, std::vector<std::byte>(values.size() * sizeof(T))};
    if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
    return a;
  }
  template <typename T>
  std::vector<T> values() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

/// Compiles `mlir` (a StableHLO module whose public func is @main) with
/// the process's client and runs it on device `device` with `inputs` (one
/// per argument, in order; donated arguments are copied first, so inputs
/// are never consumed). Returns the results, types from the executable.
/// Throws loom::Error with PJRT's message (parse or verifier errors, a
/// shape mismatch) or unavailable_xla_reason().
std::vector<HostArray> run_mlir(const std::string& mlir, const std::vector<HostArray>& inputs,
                                int device = 0);

}  // namespace loom::backends::xla
