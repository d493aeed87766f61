// The simulated device `lazy:sim` (sim_backend.cpp): the cpu backend's
// kernels on memory host code cannot touch, run on its own stream thread.
// Registered in backends/registry.cpp.
#pragma once

#include "backends/kernel_backend.h"

namespace loom::backends {

const KernelBackend& sim_backend();

}  // namespace loom::backends
