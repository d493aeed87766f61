// Optimized cpu kernels: the registry maps an op kind to its optimized
// kernel (nullptr = use the reference kernel). Each family lives in its own
// file (elementwise.cpp, reduce.cpp, gemm.cpp, ...).
#pragma once

#include "backends/backend.h"

namespace loom::backends::cpu {

/// The optimized kernel for `op`, or nullptr.
Kernel optimized_kernel(ops::OpKind op);

}  // namespace loom::backends::cpu
