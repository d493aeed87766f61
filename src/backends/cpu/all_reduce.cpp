// cpu all_reduce, all_gather, reduce_scatter: the shared kernel body
// (backends/all_reduce_kernel.h). The sim backend runs it on its stream thread, where its memory is
// accessible.
#include "backends/all_reduce_kernel.h"
#include "backends/cpu/kernels.h"

namespace loom::backends::cpu {

void cpu_all_reduce(const OpCall& call) { run_all_reduce(call); }
void cpu_all_gather(const OpCall& call) { run_all_gather(call); }
void cpu_reduce_scatter(const OpCall& call) { run_reduce_scatter(call); }

}  // namespace loom::backends::cpu
