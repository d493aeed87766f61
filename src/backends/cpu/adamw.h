// A direct kernel for the fused group AdamW's step traces per parameter
// (src/optim/adamw.cpp: torch's single-tensor op order), used by the batched
// launch (fused_batch.cpp) in place of the interpreter when a group's body
// is exactly that update. Each element goes through the same f32 operations
// in the same order as the interpreter (no contraction into FMAs, the same
// sqrt), so the bits are those of the interpreted group; anything else
// (bf16, broadcasts, other formulas, extra outputs) is not matched.
#pragma once

#include <cstdint>

#include "backends/kernel_backend.h"

namespace loom::backends::cpu {

/// Where each operand of a matched AdamW group is: group input indices
/// (-1 when absent) and the group outputs holding param, exp_avg, exp_avg_sq.
/// The formula (f32, per element, with g = grad * coef when clipped):
///   m' = m + (g - m) * w1;  v' = v * b2 + (g * c2) * g
///   p' = (p * decay | p) + (m' * neg_step) / (sqrt(v') / bc2_sqrt + eps)
struct AdamWGroup {
  int grad = -1, coef = -1, m = -1, w1 = -1, v = -1, b2 = -1, c2 = -1;
  int neg_step = -1, bc2_sqrt = -1, eps = -1, p = -1, decay = -1;
  int out_p = -1, out_m = -1, out_v = -1;
};

/// True (and fills `*out`) when `call`'s group is exactly an AdamW update.
bool match_adamw_group(const FusedCall& call, AdamWGroup* out);

/// Runs a matched group over elements [begin, begin + n). Outputs may share
/// buffers with inputs (each element is read before it is written).
void run_adamw_group(const FusedCall& call, const AdamWGroup& a, int64_t begin, int64_t n);

}  // namespace loom::backends::cpu
