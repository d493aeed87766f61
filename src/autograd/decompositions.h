// Composite ops written with primitive loom ops. Autograd differentiates a
// composite through these (attention); tests check each against the
// composite op's own kernel.
#pragma once

#include "loom/tensor.h"

namespace loom::autograd {

/// scaled-dot-product attention from matmul, where, max, exp, sum, div.
/// Masked scores are filled with -FLT_MAX and zeroed after exp, so a row
/// with nothing to attend gives zeros (the op's contract), never NaN.
/// k, v may have fewer heads (dim -3) than q, dividing them: they are
/// repeated to q's heads (grouped-query attention). dropout_p > 0 applies
/// the dropout op to the probabilities with `generator` (i64[2] (seed,
/// offset), the attention op's generator operand), so the keep decisions
/// are the attention kernel's.
Tensor attention_decomposed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                            bool causal, double scale, double dropout_p = 0.0,
                            const Tensor& generator = Tensor());

}  // namespace loom::autograd
