// Fused-group batches: runs of consecutive, independent elementwise fused
// steps that a backend may execute in one launch, one parallel pass over
// all their elements (the "multi-tensor apply" behind torch's foreach and
// fused optimizers: torch/optim/adamw.py's _multi_tensor_adamw / _fused_adamw,
// aten/src/ATen/native/cuda/fused_adam_impl.cu). The typical run is an
// optimizer step: one fused group per parameter (clip factor, AdamW's
// update of param, exp_avg and exp_avg_sq), none reading another's results.
//
// A batch is only formed where running its members at the same time gives
// the bytes of running them one after another under the memory plan: no
// member reads a value another member writes, and no member writes storage
// (an arena range, or the graph input it is donated) that another member
// reads or writes. Each member's own elements are evaluated as before, so
// results are bit-identical to the unbatched schedule.
#pragma once

#include <vector>

#include "compiler/memory/plan.h"
#include "compiler/program.h"

namespace loom::compiler::memory {

/// Per step of `program`: the number of steps, starting at it, that run as
/// one batch (>= 2 for a batch head), 1 for a step that runs alone, 0 for a
/// member after a batch's head. Only fused elementwise steps without a
/// reduction, not in `plan.alias_steps`, join batches. `min_members` is the
/// smallest batch formed (below it every step runs alone).
std::vector<int> plan_fused_batches(const Program& program, const MemoryPlan& plan,
                                    int min_members = 2);

/// False when LOOM_FUSED_BATCH=0 is set (every step runs alone: the
/// unbatched schedule, for comparison and debugging); core/settings.h caches it.
bool fused_batches_enabled();

}  // namespace loom::compiler::memory
