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
/// repeated to q's heads (grouped-query attention).
Tensor attention_decomposed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                            bool causal, double scale);

}  // namespace loom::autograd
