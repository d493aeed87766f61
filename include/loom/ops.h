// loom's ops as free functions (loom::matmul(a, b)). Each builds one IR node
// (ops.def): on the `cpu` device it runs at once, on `lazy` it is traced.
// Shapes follow NumPy broadcasting; dtypes follow PyTorch's promotion
// (torch.result_type). Every function throws loom::Error "[op] ..." naming the
// op and the offending shapes/axes/dtypes when its operands do not fit, and
// when operands live on different devices.
#pragma once

#include <vector>

#include "loom/tensor.h"

namespace loom {

// ---- Elementwise unary (same shape; float math on integers gives f32). ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
/// GELU; approximate "none" (exact, erf) or "tanh" (GPT-2's gelu_new), as
/// torch.nn.functional.gelu. Throws loom::Error for another string.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
/// x ** exponent for a constant exponent.
Tensor pow(const Tensor& x, double exponent);
/// Converts to `dtype` (floats to ints truncate toward zero).
Tensor cast(const Tensor& x, DType dtype);

// ---- Elementwise binary with broadcasting. A C++ number becomes a rank-0
// tensor of the other operand's dtype (f32 when that is an integer dtype and
// the number is not integral), as PyTorch treats Python scalars. ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
/// True division: integer operands give f32.
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(const Tensor& a, double b);

// ---- Comparisons (bool result) and selection. ----
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
/// cond ? a : b elementwise; `cond` is bool; all three broadcast.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);

// ---- Reductions over `axes` (negative allowed; empty = all axes). ----
/// Sum; integer and bool inputs sum to i64 (as torch.sum).
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
/// Mean; floating dtypes only.
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdim = false);
/// Variance with `correction` (1 = unbiased, torch.var's default).
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1,
           bool keepdim = false);
/// Index of the first maximum along `axis` (i64).
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false);

// ---- Matrix products. ----
/// a: [..., M, K] (or [..., K, M] with trans_a), b: [..., K, N] (or
/// [..., N, K] with trans_b) -> [..., M, N]; batch dims broadcast; ranks >= 2;
/// both operands of one floating dtype.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// ---- Shape ops (copies; no aliasing views). ----
/// One dim may be -1 (inferred).
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor flatten(const Tensor& x, int64_t start_axis = 0, int64_t end_axis = -1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1);
Tensor unsqueeze(const Tensor& x, int64_t axis);
Tensor squeeze(const Tensor& x, int64_t axis);
/// Elements start, start+step, ... below end along `axis`; negative start/end
/// count from the end and out-of-range bounds clamp, as Python slicing.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0);
/// Pieces of `split_size` along `axis` (the last may be shorter), as torch.split.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t axis = 0);
/// Pieces of the given sizes (must sum to the axis size).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis);
/// Broadcasts to `shape`; -1 keeps a dim.
Tensor expand(const Tensor& x, const Shape& shape);

// ---- Indexing (index operands are i32 or i64; values are bounds-checked). ----
/// torch.gather: out[i][j] = x[index[i][j]][j] for axis 0, etc.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
/// Rows of `x` along `axis` picked by the 1-D `index`.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
/// base + src added at positions `index` (1-D) along `axis` (Tensor.index_add).
Tensor index_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src);
/// `self` with the slices at positions `index` along `axis` replaced by
/// those of `source` (torch.Tensor.index_copy): out.select(axis, index[i]) =
/// source.select(axis, i), every other slice self's.
///   self [..., L, ...] (axis of size L), index [n] i32/i64, source [..., n, ...]
///   (self's shape with n along axis, self's dtype) -> self's shape and dtype.
///   index_copy(zeros({2, 4}), 1, tensor_i64({3, 0}, {2}), src)  // src [2,2]:
///   column 3 = src[:, 0], column 0 = src[:, 1]
/// Throws loom::Error "[index_copy] ..." for a rank-0 self, an axis out of
/// range, an index that is not 1-D i32/i64, a source of another shape or
/// dtype, and (when it runs) an index value outside [0, L). With a repeated
/// index the last source slice wins on the cpu backends; torch and XLA leave
/// it unspecified. On a lazy device, when `self` dies here and its buffer is
/// donated (a KV cache rewritten every step), only the n slices are written.
/// Gradient: for self the incoming gradient with the indexed slices zeroed,
/// for source its slices at `index` (index_select).
Tensor index_copy(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& source);
/// base + src scattered by `index` along `axis` (Tensor.scatter_add).
Tensor scatter_add(const Tensor& base, int64_t axis, const Tensor& index, const Tensor& src);
/// weight: [V, C], ids: [...] -> [..., C].
Tensor embedding(const Tensor& weight, const Tensor& ids);
/// ids: [...] -> [..., num_classes] i64.
Tensor one_hot(const Tensor& ids, int64_t num_classes);

// ---- Neural-network ops. ----
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
/// Normalizes the last dim: (x - mean) / sqrt(var + eps) * weight + bias;
/// x: [..., C], weight, bias: [C].
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
/// Inverted dropout with probability p from the global Philox generator;
/// identity when !training or p == 0. Throws loom::Error unless 0 <= p < 1.
Tensor dropout(const Tensor& x, double p, bool training = true);
/// Mean cross-entropy of logits [..., C] against integer targets [...];
/// targets equal to ignore_index are skipped; label smoothing as
/// torch.nn.functional.cross_entropy. Returns a rank-0 tensor (NaN when every
/// target is ignored, as PyTorch).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     double label_smoothing = 0.0);
/// softmax(q k^T * scale + mask) v. q: [..., T, D], k: [..., S, D],
/// v: [..., S, Dv] -> [..., T, Dv]. `mask` (optional) broadcasts to
/// [..., T, S]: bool (true = attend) or float (added). causal masks j > i.
/// scale 0 means 1/sqrt(D). dropout_p > 0 applies inverted dropout to the
/// probabilities with one draw of the global generator, exactly as
/// dropout(softmax(...), dropout_p) would (same keep decisions), inside the
/// op: no [..., T, S] tensor is stored for the backward. A query row with
/// nothing to attend gives zeros. As
/// torch.nn.functional.scaled_dot_product_attention; k, v may have fewer
/// heads (dim -3) than q, dividing them (grouped-query attention). Throws
/// loom::Error "[attention] ..." for shapes that do not match or
/// dropout_p outside [0, 1).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask = Tensor(), bool causal = false,
                                    double scale = 0.0, double dropout_p = 0.0);

// ---- Operators. ----
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }

}  // namespace loom
