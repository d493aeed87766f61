// Reference all_reduce (and all_gather, reduce_scatter): the operand copied, then reduced over the
// process group (backends/all_reduce_kernel.h); on one rank the identity, which is the oracle the
// op tests check the cpu kernel against.
#include "backends/all_reduce_kernel.h"
#include "backends/reference/reference.h"

namespace loom::backends::reference {

void ref_all_reduce(const OpCall& c) { run_all_reduce(c); }
void ref_all_gather(const OpCall& c) { run_all_gather(c); }
void ref_reduce_scatter(const OpCall& c) { run_reduce_scatter(c); }

}  // namespace loom::backends::reference
