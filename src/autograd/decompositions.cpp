// Decompositions of composite ops into primitive loom ops.
#include "autograd/decompositions.h"

#include <cfloat>
#include <cmath>

#include "autograd/engine.h"
#include "loom/error.h"
#include "loom/ops.h"

namespace loom::autograd {

namespace {

// Grouped-query attention: k/v [..., Hkv, S, D] repeated to q's heads
// (transformers' repeat_kv; its gradient sums each group back).
Tensor repeat_kv_heads(const Tensor& x, int64_t heads) {
  if (x.dim() < 3 || x.size(-3) == heads) return x;
  Shape s = x.shape();
  size_t r = s.size();
  Shape grouped(s.begin(), s.end() - 2);
  grouped.push_back(1);
  grouped.insert(grouped.end(), s.end() - 2, s.end());  // [..., Hkv, 1, S, D]
  Shape wide = grouped;
  wide[r - 2] = heads / s[r - 3];
  Shape out = s;
  out[r - 3] = heads;
  return reshape(expand(reshape(x, grouped), wide), out);
}

}  // namespace

Tensor attention_decomposed(const Tensor& q, const Tensor& k_in, const Tensor& v_in,
                            const Tensor& mask, bool causal, double scale, double dropout_p,
                            const Tensor& generator) {
  int64_t heads = q.dim() >= 3 ? q.size(-3) : 1;
  Tensor k = repeat_kv_heads(k_in, heads), v = repeat_kv_heads(v_in, heads);
  int64_t t = q.size(-2), s = k.size(-2);
  double sc = scale != 0 ? scale : 1.0 / std::sqrt(double(q.size(-1)));
  Tensor scores = matmul(q, k, false, true) * sc;  // [..., T, S]
  Tensor keep;                                     // bool, broadcasts to scores
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
  if (dropout_p > 0) {
    LOOM_CHECK(generator.defined(), "[attention] dropout_p ", dropout_p, " needs a generator");
    ops::Attrs a;
    a.dropout_p = dropout_p;
    p = apply(ops::OpKind::k_dropout, {p, generator}, a);
  }
  return matmul(p, v);
}

}  // namespace loom::autograd
