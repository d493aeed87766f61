// Decompositions of composite ops into primitive loom ops.
#include "autograd/decompositions.h"

#include <cfloat>
#include <cmath>

#include "loom/ops.h"

namespace loom::autograd {

Tensor attention_decomposed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                            bool causal, double scale) {
  int64_t t = q.size(-2), s = k.size(-2);
  double sc = scale != 0 ? scale : 1.0 / std::sqrt(double(q.size(-1)));
  Tensor scores = matmul(q, k, false, true) * sc;  // [..., T, S]
  Tensor keep;                                    // bool, broadcasts to scores
  if (causal) {
    Tensor rows = reshape(arange(t, DType::i64, q.device()), {t, 1});
    Tensor cols = reshape(arange(s, DType::i64, q.device()), {1, s});
    keep = ge(rows, cols);
  }
  if (mask.defined()) {
    if (mask.dtype() == DType::boolean) {
      keep = keep.defined() ? where(keep, mask, keep) : mask;
    } else {
      scores = scores + cast(mask, scores.dtype());
    }
  }
  if (keep.defined()) scores = where(keep, scores, -FLT_MAX);
  Tensor e = exp(scores - max(scores, {-1}, true));
  if (keep.defined()) e = where(keep, e, 0.0);
  Tensor p = e / maximum(sum(e, {-1}, true), 1e-30);
  return matmul(p, v);
}

}  // namespace loom::autograd
