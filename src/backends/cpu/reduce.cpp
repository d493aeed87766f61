// Optimized reductions sum, mean, max, min, argmax, var over any set of axes.
// The input is viewed as [outer, size, inner] with the reduced axes in the
// middle (size-1 dims ignored); reduced axes that are not adjacent are first
// moved last by a permuted copy. inner == 1 (last axes) reduces contiguous
// rows; inner > 1 (leading or middle axes) accumulates whole rows into
// per-column accumulators, vectorized over the columns (one pass over the
// rows per block of 64 columns). Float sums and
// variances accumulate in double (two-pass variance, as the reference), so
// results match the double-precision oracle to rounding; integer sums wrap.
// Semantics as the reference: max/min propagate NaN, argmax takes the first
// maximal index with NaN counting as maximal, var divides by
// max(0, n - correction) as torch.var.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec_math.h"
#include "core/parallel.h"

#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace loom::backends::cpu {
namespace {

using ops::OpKind;

struct Layout {
  int64_t outer = 1, size = 1, inner = 1;
  std::vector<int64_t> perm;  // non-empty: permute the input first
};

// The [outer, size, inner] view of compiler::reduce_layout (the same view the
// fused reductions stream over); when the reduced axes are not contiguous,
// the non-reduced dims are moved first and the reduced ones last.
Layout plan_layout(const Shape& shape, const std::vector<int64_t>& axes) {
  Layout l;
  if (compiler::reduce_layout(shape, axes, &l.outer, &l.size, &l.inner)) return l;
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t ax : axes)
    if (ax < rank) reduced[ax] = true;
  l = Layout{};
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) l.perm.push_back(d), l.outer *= shape[d];
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) l.perm.push_back(d), l.size *= shape[d];
  return l;
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

// torch.var's divisor max(0, n - correction) (0 gives inf or NaN).
double var_divisor(int64_t n, int64_t correction) {
  return double(std::max<int64_t>(0, n - correction));
}

// argmax of a row: first maximal index, the first NaN wins.
template <typename T>
int64_t row_argmax(const T* x, int64_t n) {
  int64_t best = 0;
  for (int64_t j = 1; j < n; ++j) {
    if (is_nan(x[best])) break;
    if (is_nan(x[j]) || x[j] > x[best]) best = j;
  }
  return best;
}

template <typename T>
T row_extreme(OpKind op, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return op == OpKind::k_max ? vm::max(x, n) : vm::min(x, n);
  } else {
    T m = x[0];
    for (int64_t j = 1; j < n; ++j) m = op == OpKind::k_max ? std::max(m, x[j]) : std::min(m, x[j]);
    return m;
  }
}

// Result of one reduced row (inner == 1). R = double for float sums, T else.
template <typename T, typename R>
R reduce_row(OpKind op, const T* x, int64_t n, int64_t correction) {
  if (op == OpKind::k_argmax) return static_cast<R>(row_argmax(x, n));
  if (op == OpKind::k_max || op == OpKind::k_min) return static_cast<R>(row_extreme(op, x, n));
  if constexpr (std::is_same_v<T, float>) {
    double s = vm::sum(x, n);
    if (op == OpKind::k_sum) return s;
    double mean = s / double(n);
    if (op == OpKind::k_mean) return mean;
    return vm::sum_sq_dev(x, n, mean) / var_divisor(n, correction);
  } else {
    uint64_t s = 0;
    for (int64_t j = 0; j < n; ++j) s += static_cast<uint64_t>(x[j]);
    return static_cast<R>(static_cast<int64_t>(s));
  }
}

// Columns per task of a column reduction: 64 splits a [rows, 384] bias
// gradient into 6 tasks (256 gave 2 unequal ones).
constexpr int64_t kBlock = 64;

// s[j] = sum over r < size of x[r * inner + j] for j < w (w <= kBlock), in
// double, rows added in order (the fused reduction's order, so results match
// bitwise). A whole block of 64 columns is one pass over the rows with its
// 64 accumulators in registers (AVX-512: 8 x 8 doubles), so each row's 256
// contiguous bytes are read once; the strided walk of 16-column strips read
// every row four times and stalled on cache misses (2.4 % of a BERT step).
void column_sums_f32(const float* x, int64_t size, int64_t inner, int64_t w, double* s) {
#ifdef __AVX512F__
  if (w == kBlock) {
    __m512d acc[8];
    for (__m512d& a : acc) a = _mm512_setzero_pd();
    for (int64_t r = 0; r < size; ++r) {
      const float* row = x + r * inner;
      for (int k = 0; k < 8; ++k)
        acc[k] = _mm512_add_pd(acc[k], _mm512_cvtps_pd(_mm256_loadu_ps(row + 8 * k)));
    }
    for (int k = 0; k < 8; ++k) _mm512_storeu_pd(s + 8 * k, acc[k]);
    return;
  }
#endif
  std::fill(s, s + w, 0.0);
  for (int64_t r = 0; r < size; ++r) {
    const float* row = x + r * inner;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) s[j] += row[j];
  }
}

// Columns [j0, j0+w) of one outer slice: x points at element (o, 0, j0).
template <typename T, typename R>
void reduce_columns(OpKind op, const T* x, int64_t size, int64_t inner, int64_t w,
                    int64_t correction, R* out) {
  if (op == OpKind::k_argmax) {
    T best[kBlock];
    for (int64_t j = 0; j < w; ++j) best[j] = x[j], out[j] = 0;
    for (int64_t r = 1; r < size; ++r) {
      const T* row = x + r * inner;
      for (int64_t j = 0; j < w; ++j) {
        bool take = !is_nan(best[j]) && (row[j] > best[j] || is_nan(row[j]));
        best[j] = take ? row[j] : best[j];
        out[j] = take ? static_cast<R>(r) : out[j];
      }
    }
  } else if (op == OpKind::k_max || op == OpKind::k_min) {
    T m[kBlock];
    bool nan[kBlock] = {};
    bool is_max = op == OpKind::k_max;
    for (int64_t j = 0; j < w; ++j) m[j] = x[j];
    for (int64_t r = 0; r < size; ++r) {
      const T* row = x + r * inner;
      for (int64_t j = 0; j < w; ++j) {
        nan[j] = nan[j] | is_nan(row[j]);
        m[j] = is_max ? (row[j] > m[j] ? row[j] : m[j]) : (row[j] < m[j] ? row[j] : m[j]);
      }
    }
    for (int64_t j = 0; j < w; ++j)
      out[j] =
          nan[j] ? static_cast<R>(std::numeric_limits<double>::quiet_NaN()) : static_cast<R>(m[j]);
  } else if constexpr (std::is_same_v<T, float>) {
    double s[kBlock];
    column_sums_f32(x, size, inner, w, s);
    for (int64_t j = 0; j < w; ++j) out[j] = op == OpKind::k_sum ? s[j] : s[j] / double(size);
    if (op != OpKind::k_var) return;
    double ss[kBlock] = {};
    for (int64_t r = 0; r < size; ++r)
      for (int64_t j = 0; j < w; ++j) {
        double d = x[r * inner + j] - out[j];
        ss[j] += d * d;
      }
    for (int64_t j = 0; j < w; ++j) out[j] = ss[j] / var_divisor(size, correction);
  } else {
    uint64_t s[kBlock] = {};
    for (int64_t r = 0; r < size; ++r)
      for (int64_t j = 0; j < w; ++j) s[j] += static_cast<uint64_t>(x[r * inner + j]);
    for (int64_t j = 0; j < w; ++j) out[j] = static_cast<R>(static_cast<int64_t>(s[j]));
  }
}

constexpr int64_t kSplit = 1 << 16;  // elements per partial of a split row

// One long f32 row reduced by all threads: partials over fixed kSplit-element
// pieces combined in order, so the result does not depend on thread count.
double split_row(OpKind op, const float* x, int64_t n, int64_t correction) {
  int64_t pieces = (n + kSplit - 1) / kSplit;
  std::vector<double> part(pieces);
  auto each_piece = [&](auto f) {
    parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) part[p] = f(x + p * kSplit, std::min(kSplit, n - p * kSplit));
    });
  };
  if (op == OpKind::k_max || op == OpKind::k_min) {
    each_piece([&](const float* xp, int64_t len) { return double(row_extreme(op, xp, len)); });
    float m = static_cast<float>(part[0]);
    for (double v : part) {
      float f = static_cast<float>(v);
      if (f != f || m != m)
        m = std::numeric_limits<float>::quiet_NaN();
      else
        m = op == OpKind::k_max ? std::max(m, f) : std::min(m, f);
    }
    return m;
  }
  each_piece([](const float* xp, int64_t len) { return vm::sum(xp, len); });
  double s = 0;
  for (double v : part) s += v;
  if (op == OpKind::k_sum) return s;
  double mean = s / double(n);
  if (op == OpKind::k_mean) return mean;
  each_piece([mean](const float* xp, int64_t len) { return vm::sum_sq_dev(xp, len, mean); });
  double ss = 0;
  for (double v : part) ss += v;
  return ss / var_divisor(n, correction);
}

// Reduces x viewed as [outer, size, inner] into out[outer * inner].
template <typename T, typename R>
void reduce_layout(OpKind op, const T* x, const Layout& l, int64_t correction, R* out) {
  if constexpr (std::is_same_v<T, float>) {
    if (l.inner == 1 && op != OpKind::k_argmax && l.size >= 2 * kSplit &&
        l.outer < get_num_threads()) {
      for (int64_t o = 0; o < l.outer; ++o)
        out[o] = static_cast<R>(split_row(op, x + o * l.size, l.size, correction));
      return;
    }
  }
  if (l.inner == 1) {
    parallel_for(l.outer, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, l.size)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o)
                     out[o] = reduce_row<T, R>(op, x + o * l.size, l.size, correction);
                 });
    return;
  }
  int64_t blocks = (l.inner + kBlock - 1) / kBlock;
  int64_t work = std::max<int64_t>(1, l.size * std::min(kBlock, l.inner));
  parallel_for(l.outer * blocks, std::max<int64_t>(1, kElementGrain / work),
               [&](int64_t b, int64_t e) {
                 for (int64_t u = b; u < e; ++u) {
                   int64_t o = u / blocks, j0 = (u % blocks) * kBlock;
                   int64_t w = std::min(kBlock, l.inner - j0);
                   reduce_columns<T, R>(op, x + o * l.size * l.inner + j0, l.size, l.inner, w,
                                        correction, out + o * l.inner + j0);
                 }
               });
}

// Runs the reduction on values of type T (float or int64) and stores into
// the output dtype.
template <typename T>
void reduce_typed(const OpCall& call, const T* x) {
  const ConstView& in = call.inputs[0];
  const MutView& out = call.output;
  OpKind op = call.op;
  Layout l = plan_layout(in.type.shape, call.attrs->axes);
  std::vector<T> permuted;
  if (!l.perm.empty()) {
    permuted.resize(in.type.numel());
    permute_copy(x, in.type.shape, l.perm, sizeof(T), permuted.data());
    x = permuted.data();
  }
  int64_t n = out.type.numel(), correction = call.attrs->correction;
  bool float_sum = std::is_same_v<T, float> && op != OpKind::k_argmax && op != OpKind::k_max &&
                   op != OpKind::k_min;
  if (float_sum) {
    std::vector<double> r(n);
    reduce_layout<T, double>(op, x, l, correction, r.data());
    std::vector<float> f(r.begin(), r.end());
    store_f32(f.data(), n, out.data, out.type.dtype, 0);
  } else if (op == OpKind::k_argmax || !std::is_same_v<T, float>) {
    std::vector<int64_t> r(n);
    reduce_layout<T, int64_t>(op, x, l, correction, r.data());
    store_i64(r.data(), n, out.data, out.type.dtype, 0);
  } else {
    std::vector<float> r(n);
    reduce_layout<T, float>(op, x, l, correction, r.data());
    store_f32(r.data(), n, out.data, out.type.dtype, 0);
  }
}

}  // namespace

void cpu_reduce(const OpCall& call) {
  const ConstView& in = call.inputs[0];
  if (call.output.type.numel() == 0) return;
  if (in.type.dtype == DType::f32) return reduce_typed<float>(call, in.as<float>());
  if (is_floating(in.type.dtype)) {
    std::vector<float> x = to_f32(in);
    return reduce_typed<float>(call, x.data());
  }
  if (in.type.dtype == DType::i64) return reduce_typed<int64_t>(call, in.as<int64_t>());
  std::vector<int64_t> x = to_i64(in);
  reduce_typed<int64_t>(call, x.data());
}

}  // namespace loom::backends::cpu
