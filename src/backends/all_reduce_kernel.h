// The one all_reduce kernel body the backends share: copy the operand into
// the output, then reduce the output in place over
// dist::graph_process_group() (identity on one rank). Assumes host-visible
// buffers while the kernel runs (cpu, reference, and sim's stream thread).
#pragma once

#include "backends/backend.h"

namespace loom::backends {

/// Runs an all_reduce OpCall (attrs->index: 0 sum, 1 mean). Throws
/// loom::Error "[all_reduce] ..." when the group's collective fails or
/// times out (--ddp_timeout).
void run_all_reduce(const OpCall& call);

}  // namespace loom::backends
