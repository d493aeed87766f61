// cpu all_reduce: the shared kernel body (backends/all_reduce_kernel.h). The sim
// backend runs it on its stream thread, where its memory is accessible.
#include "backends/all_reduce_kernel.h"
#include "backends/cpu/kernels.h"

namespace loom::backends::cpu {

void cpu_all_reduce(const OpCall& call) { run_all_reduce(call); }

}  // namespace loom::backends::cpu
