// The cpu backend (`cpu`, `lazy:cpu`): optimized kernels (vectorized, OpenMP,
// oneDNN GEMM) in a KernelBackend, host memory, an inline stream. Registered
// in backends/registry.cpp; the other backends reuse its kernels (sim runs
// them on its device, xla runs collectives between its stages with them).
#pragma once

#include "backends/kernel_backend.h"

namespace loom::backends {

/// Optimized kernels; the reference kernel for ops it does not optimize.
const KernelBackend& cpu_backend();

}  // namespace loom::backends
