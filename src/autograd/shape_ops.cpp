// Public shape, index and nn op functions (loom/ops.h), with argument
// normalization: -1 dims, negative axes, Python-style slice bounds.
#include <algorithm>

#include "autograd/engine.h"
#include "lazy/tensor_impl.h"
#include "loom/autocast.h"
#include "loom/error.h"
#include "loom/ops.h"

namespace loom {
namespace {
using ops::Attrs;
using ops::OpKind;

using autograd::rank_of;

Shape infer_minus_one(const Shape& shape, int64_t total, const Shape& from) {
  Shape out = shape;
  int64_t known = 1, at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      LOOM_CHECK(at < 0, "[reshape] more than one -1 in ", to_string(shape));
      at = static_cast<int64_t>(i);
    } else {
      LOOM_CHECK(out[i] >= 0, "[reshape] negative size in ", to_string(shape));
      known *= out[i];
    }
  }
  if (at >= 0) {
    LOOM_CHECK(known != 0 && total % known == 0, "[reshape] cannot reshape ", to_string(from),
               " to ", to_string(shape));
    out[at] = total / known;
  }
  return out;
}
}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  rank_of(x, "reshape");
  Attrs a;
  a.shape = infer_minus_one(shape, x.numel(), x.shape());
  if (a.shape == x.shape()) return x;
  return autograd::apply(OpKind::k_reshape, {x}, a);
}

Tensor flatten(const Tensor& x, int64_t start_axis, int64_t end_axis) {
  if (rank_of(x, "flatten") == 0) return reshape(x, {1});
  int64_t s = normalize_axis(start_axis, x.dim(), "flatten");
  int64_t e = normalize_axis(end_axis, x.dim(), "flatten");
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= x.shape()[d];
  shape.push_back(n);
  shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
  return reshape(x, shape);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  Attrs a;
  int64_t rank = rank_of(x, "permute");
  for (int64_t p : perm) a.perm.push_back(normalize_axis(p, rank, "permute"));
  bool identity = true;
  for (size_t i = 0; i < a.perm.size(); ++i) identity = identity && a.perm[i] == int64_t(i);
  if (identity && a.perm.size() == static_cast<size_t>(x.dim())) return x;
  return autograd::apply(OpKind::k_permute, {x}, a);
}

Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1) {
  std::vector<int64_t> perm(rank_of(x, "transpose"));
  for (int64_t i = 0; i < x.dim(); ++i) perm[i] = i;
  std::swap(perm[normalize_axis(axis0, x.dim(), "transpose")],
            perm[normalize_axis(axis1, x.dim(), "transpose")]);
  return permute(x, perm);
}

Tensor unsqueeze(const Tensor& x, int64_t axis) {
  int64_t ax = normalize_axis(axis, rank_of(x, "unsqueeze") + 1, "unsqueeze");
  Shape s = x.shape();
  s.insert(s.begin() + ax, 1);
  return reshape(x, s);
}

Tensor squeeze(const Tensor& x, int64_t axis) {
  int64_t ax = normalize_axis(axis, rank_of(x, "squeeze"), "squeeze");
  if (x.dim() == 0 || x.shape()[ax] != 1) return x;
  Shape s = x.shape();
  s.erase(s.begin() + ax);
  return reshape(x, s);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  LOOM_CHECK(rank_of(x, "slice") > 0, "[slice] cannot slice a scalar");
  LOOM_CHECK(step > 0, "[slice] step must be positive, got ", step);
  Attrs a;
  a.axis = normalize_axis(axis, x.dim(), "slice");
  int64_t n = x.shape()[a.axis];
  auto clamp = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  a.start = clamp(start);
  a.stop = std::max(clamp(end), a.start);
  a.step = step;
  if (a.start == 0 && a.stop == n && step == 1) return x;
  return autograd::apply(OpKind::k_slice, {x}, a);
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  LOOM_CHECK(!xs.empty(), "[concat] needs at least one tensor");
  Attrs a;
  a.axis = normalize_axis(axis, rank_of(xs[0], "concat"), "concat");
  if (xs.size() == 1) return xs[0];
  return autograd::apply(OpKind::k_concat, xs, a);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  int64_t ax = normalize_axis(axis, rank_of(x, "split"), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    LOOM_CHECK(s >= 0, "[split] negative size ", s);
    total += s;
  }
  LOOM_CHECK(x.dim() > 0 && total == x.shape()[ax], "[split] sizes ", to_string(sizes),
             " do not sum to ", x.dim() > 0 ? x.shape()[ax] : 0, " along axis ", ax);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, ax, start, start + s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t axis) {
  LOOM_CHECK(split_size > 0, "[split] split_size must be positive, got ", split_size);
  int64_t ax = normalize_axis(axis, rank_of(x, "split"), "split");
  LOOM_CHECK(x.dim() > 0, "[split] cannot split a scalar");
  std::vector<int64_t> sizes;
  for (int64_t s = 0; s < x.shape()[ax]; s += split_size)
    sizes.push_back(std::min(split_size, x.shape()[ax] - s));
  return split(x, sizes, ax);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  Attrs a;
  a.shape = shape;
  int64_t off = static_cast<int64_t>(shape.size()) - rank_of(x, "expand");
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (shape[i] == -1) {
      LOOM_CHECK(i >= off, "[expand] -1 is not allowed for a new leading dim in ",
                 to_string(shape));
      a.shape[i] = x.shape()[i - off];
    }
  if (a.shape == x.shape()) return x;
  return autograd::apply(OpKind::k_expand, {x}, a);
}

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  Attrs a;
  a.axis = normalize_axis(axis, rank_of(x, "gather"), "gather");
  return autograd::apply(OpKind::k_gather, {x, index}, a);
}

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  Attrs a;
  a.axis = normalize_axis(axis, rank_of(x, "index_select"), "index_select");
  return autograd::apply(OpKind::k_index_select, {x, index}, a);
}

Tensor index_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src) {
  Attrs a;
  a.axis = normalize_axis(axis, rank_of(base, "index_add"), "index_add");
  return autograd::apply(OpKind::k_index_add, {base, index, src}, a);
}

Tensor index_copy(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& source) {
  Attrs a;
  a.axis = normalize_axis(axis, rank_of(self, "index_copy"), "index_copy");
  return autograd::apply(OpKind::k_index_copy, {self, index, source}, a);
}

Tensor scatter_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src) {
  Attrs a;
  a.axis = normalize_axis(axis, rank_of(base, "scatter_add"), "scatter_add");
  return autograd::apply(OpKind::k_scatter_add, {base, index, src}, a);
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  return autograd::apply(OpKind::k_embedding, {weight, ids}, {});
}

Tensor one_hot(const Tensor& ids, int64_t num_classes) {
  Attrs a;
  a.num_classes = num_classes;
  return autograd::apply(OpKind::k_one_hot, {ids}, a);
}

Tensor softmax(const Tensor& x, int64_t axis) {
  Attrs a;
  a.axis = normalize_axis(axis, rank_of(x, "softmax"), "softmax");
  return autograd::apply(OpKind::k_softmax, {x}, a);
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
  Attrs a;
  a.axis = normalize_axis(axis, rank_of(x, "log_softmax"), "log_softmax");
  return autograd::apply(OpKind::k_log_softmax, {x}, a);
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  // Autocast: a low-precision input with f32 weights is normalized in f32 and
  // the result returned in the input's dtype (what torch's CPU layer_norm does
  // for a bf16 input and f32 weight under torch.autocast("cpu"); layer_norm is
  // in neither of CPU autocast's op lists).
  if (is_autocast_enabled() && x.defined() && weight.defined() &&
      is_low_precision_float(x.dtype()) && weight.dtype() == DType::f32)
    return cast(layer_norm(cast(x, DType::f32), weight, bias, eps), x.dtype());
  Attrs a;
  a.eps = eps;
  return autograd::apply(OpKind::k_layer_norm, {x, weight, bias}, a);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     double label_smoothing) {
  LOOM_CHECK(rank_of(logits, "cross_entropy") >= 1, "[cross_entropy] logits must have rank >= 1");
  LOOM_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
             "[cross_entropy] label_smoothing must be in [0, 1], got ", label_smoothing);
  // Autocast: cross_entropy is in torch.autocast's fp32 list (CPU and CUDA):
  // low-precision logits are cast to f32 first, so the loss is f32.
  if (is_autocast_enabled() && is_low_precision_float(logits.dtype()))
    return cross_entropy(cast(logits, DType::f32), target, ignore_index, label_smoothing);
  int64_t classes = logits.shape().back();
  Attrs a;
  a.ignore_index = ignore_index;
  a.label_smoothing = label_smoothing;
  return autograd::apply(OpKind::k_cross_entropy,
                         {reshape(logits, {-1, classes}), reshape(target, {-1})}, a);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask, bool causal, double scale,
                                    double dropout_p) {
  LOOM_CHECK(dropout_p >= 0 && dropout_p < 1, "[attention] dropout_p must be in [0, 1), got ",
             dropout_p);
  // Autocast (loom/autocast.h): f32 q/k/v run in the autocast dtype (a float
  // mask stays f32; the kernel reads it in f32) and the result stays in it.
  if (is_autocast_enabled() && q.defined() && k.defined() && v.defined() &&
      is_floating(q.dtype()) && is_floating(k.dtype()) && is_floating(v.dtype()) &&
      (q.dtype() == DType::f32 || k.dtype() == DType::f32 || v.dtype() == DType::f32)) {
    DType low = autocast_dtype();
    return scaled_dot_product_attention(cast(q, low), cast(k, low), cast(v, low), mask, causal,
                                        scale, dropout_p);
  }
  Attrs a;
  a.causal = causal;
  a.scale = scale;
  a.dropout_p = dropout_p;
  std::vector<Tensor> operands = {q, k, v};
  if (mask.defined()) operands.push_back(mask);
  // One draw of the generator, as dropout() on the [..., T, S] probabilities.
  if (dropout_p > 0) operands.push_back(autograd::next_generator(q.device()));
  return autograd::apply(OpKind::k_attention, operands, a);
}

}  // namespace loom
