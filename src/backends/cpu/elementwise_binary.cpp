// Optimized broadcasting binary ops (arithmetic and comparisons) and where.
// The output is walked in BroadcastPlan segments; in each segment an operand
// is either contiguous or one fixed element, which gives four tight loops
// (same shape, scalar right, scalar left, both fixed) that the compiler
// vectorizes. Floating results compute in f32, integer results in int64
// (wrapping add/sub/mul, as two's complement hardware), comparisons in the
// promoted operand type. Operands of another dtype are converted per
// segment into stack chunks. Bool-valued arithmetic goes to the reference.
// gelu_backward / gelu_tanh_backward have their own kernel (gelu_backward.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"
#include "core/parallel.h"

namespace loom::backends::cpu {
namespace {

using ops::OpKind;

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::i64;
  else
    return DType::boolean;
}

template <typename T>
void load_any(const ConstView& v, int64_t offset, int64_t n, T* dst) {
  if constexpr (std::is_same_v<T, float>)
    load_f32(v.data, v.type.dtype, offset, n, dst);
  else
    load_i64(v.data, v.type.dtype, offset, n, dst);
}

template <typename T>
void store_any(const T* src, int64_t n, const MutView& out, int64_t offset) {
  if constexpr (std::is_same_v<T, float>)
    store_f32(src, n, out.data, out.type.dtype, offset);
  else
    store_i64(src, n, out.data, out.type.dtype, offset);
}

// One operand within one segment: a pointer and a stride (0 or 1), pointing
// into the operand itself or into `buf` after conversion.
template <typename T>
const T* operand_at(const ConstView& v, int64_t offset, int64_t stride, int64_t len, T* buf) {
  if (v.type.dtype == dtype_of<T>()) return v.as<T>() + offset;
  load_any(v, offset, stride ? len : 1, buf);
  return buf;
}

template <typename T, typename R, typename F>
inline void binary_loop(const T* a, int64_t sa, const T* b, int64_t sb, R* out, int64_t n, F f) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (sa) {
    T bv = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (sb) {
    T av = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    R v = f(*a, *b);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

// out = f(a, b) computing in T, result type R (float, int64_t or uint8_t).
template <typename T, typename R, typename F>
void run_binary(const OpCall& call, F f) {
  const ConstView &a = call.inputs[0], &b = call.inputs[1];
  const MutView& out = call.output;
  int64_t n = out.type.numel();
  if (n == 0) return;
  BroadcastPlan plan(out.type.shape, {a.type.shape, b.type.shape});
  int64_t sa = plan.inner_stride(0), sb = plan.inner_stride(1);
  bool direct_out = out.type.dtype == dtype_of<R>();
  bool direct = direct_out && a.type.dtype == dtype_of<T>() && b.type.dtype == dtype_of<T>();
  int64_t max_len = direct ? n : kChunk;
  parallel_for(n, kElementGrain, [&](int64_t begin, int64_t end) {
    T buf_a[kChunk], buf_b[kChunk];
    R buf_o[kChunk];
    plan.for_each_segment(begin, end, max_len, [&](int64_t pos, const auto& off, int64_t len) {
      const T* pa = operand_at(a, off[0], sa, len, buf_a);
      const T* pb = operand_at(b, off[1], sb, len, buf_b);
      R* po = direct_out ? out.as<R>() + pos : buf_o;
      binary_loop(pa, sa, pb, sb, po, len, f);
      if constexpr (!std::is_same_v<R, uint8_t>)  // comparisons write bool directly
        if (!direct_out) store_any(buf_o, len, out, pos);
    });
  });
}

inline float max_nan(float a, float b) { return a != a ? a : (a > b ? a : b); }
inline float min_nan(float a, float b) { return a != a ? a : (a < b ? a : b); }
inline int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

void arithmetic_f32(const OpCall& c) {
  switch (c.op) {
    case OpKind::k_add:
      return run_binary<float, float>(c, [](float a, float b) { return a + b; });
    case OpKind::k_sub:
      return run_binary<float, float>(c, [](float a, float b) { return a - b; });
    case OpKind::k_mul:
      return run_binary<float, float>(c, [](float a, float b) { return a * b; });
    case OpKind::k_div:
      return run_binary<float, float>(c, [](float a, float b) { return a / b; });
    case OpKind::k_maximum:
      return run_binary<float, float>(c, max_nan);
    case OpKind::k_minimum:
      return run_binary<float, float>(c, min_nan);
    default:  // pow: double pow as the reference, rounded once
      return run_binary<float, float>(
          c, [](float a, float b) { return static_cast<float>(std::pow(double(a), double(b))); });
  }
}

void arithmetic_i64(const OpCall& c) {
  using U = uint64_t;
  switch (c.op) {
    case OpKind::k_add:
      return run_binary<int64_t, int64_t>(c,
                                          [](int64_t a, int64_t b) { return wrap(U(a) + U(b)); });
    case OpKind::k_sub:
      return run_binary<int64_t, int64_t>(c,
                                          [](int64_t a, int64_t b) { return wrap(U(a) - U(b)); });
    case OpKind::k_mul:
      return run_binary<int64_t, int64_t>(c,
                                          [](int64_t a, int64_t b) { return wrap(U(a) * U(b)); });
    case OpKind::k_maximum:
      return run_binary<int64_t, int64_t>(c, [](int64_t a, int64_t b) { return a > b ? a : b; });
    case OpKind::k_minimum:
      return run_binary<int64_t, int64_t>(c, [](int64_t a, int64_t b) { return a < b ? a : b; });
    default:
      return reference_backend().kernel(c.op)(c);
  }
}

template <typename T>
void compare(const OpCall& c) {
  using R = uint8_t;
  switch (c.op) {
    case OpKind::k_eq:
      return run_binary<T, R>(c, [](T a, T b) -> R { return a == b; });
    case OpKind::k_ne:
      return run_binary<T, R>(c, [](T a, T b) -> R { return a != b; });
    case OpKind::k_lt:
      return run_binary<T, R>(c, [](T a, T b) -> R { return a < b; });
    case OpKind::k_le:
      return run_binary<T, R>(c, [](T a, T b) -> R { return a <= b; });
    case OpKind::k_gt:
      return run_binary<T, R>(c, [](T a, T b) -> R { return a > b; });
    default:
      return run_binary<T, R>(c, [](T a, T b) -> R { return a >= b; });
  }
}

template <typename T>
void run_where(const OpCall& call) {
  const ConstView &cond = call.inputs[0], &a = call.inputs[1], &b = call.inputs[2];
  const MutView& out = call.output;
  int64_t n = out.type.numel();
  if (n == 0) return;
  BroadcastPlan plan(out.type.shape, {cond.type.shape, a.type.shape, b.type.shape});
  int64_t sc = plan.inner_stride(0), sa = plan.inner_stride(1), sb = plan.inner_stride(2);
  bool direct_out = out.type.dtype == dtype_of<T>();
  bool direct = direct_out && a.type.dtype == dtype_of<T>() && b.type.dtype == dtype_of<T>();
  int64_t max_len = direct ? n : kChunk;
  const uint8_t* pc0 = cond.as<uint8_t>();
  parallel_for(n, kElementGrain, [&](int64_t begin, int64_t end) {
    T buf_a[kChunk], buf_b[kChunk], buf_o[kChunk];
    plan.for_each_segment(begin, end, max_len, [&](int64_t pos, const auto& off, int64_t len) {
      const uint8_t* pc = pc0 + off[0];
      const T* pa = operand_at(a, off[1], sa, len, buf_a);
      const T* pb = operand_at(b, off[2], sb, len, buf_b);
      T* po = direct_out ? out.as<T>() + pos : buf_o;
      if (sc == 0) {
        // One condition for the whole segment (a row mask broadcast along the
        // last axis, as StaticCache's write): a copy of one side, or a fill.
        const T* src = pc[0] ? pa : pb;
        int64_t ss = pc[0] ? sa : sb;
        if (ss)
          std::copy_n(src, len, po);
        else
          std::fill_n(po, len, src[0]);
      } else if (sa && sb) {
        for (int64_t i = 0; i < len; ++i) po[i] = pc[i] ? pa[i] : pb[i];
      } else {
        for (int64_t i = 0; i < len; ++i) po[i] = pc[i * sc] ? pa[i * sa] : pb[i * sb];
      }
      if (!direct_out) store_any(buf_o, len, out, pos);
    });
  });
}

}  // namespace

void cpu_binary(const OpCall& call) {
  if (call.op == OpKind::k_gelu_backward || call.op == OpKind::k_gelu_tanh_backward)
    return run_gelu_backward(call);  // float operands only (infer_binary)
  if (ops::has_trait(call.op, ops::kCompare)) {
    DType t = promote_types(call.inputs[0].type.dtype, call.inputs[1].type.dtype);
    return is_floating(t) ? compare<float>(call) : compare<int64_t>(call);
  }
  DType out = call.output.type.dtype;
  if (is_floating(out)) return arithmetic_f32(call);
  if (out == DType::boolean) return reference_backend().kernel(call.op)(call);
  arithmetic_i64(call);
}

void cpu_where(const OpCall& call) {
  if (is_floating(call.output.type.dtype)) return run_where<float>(call);
  run_where<int64_t>(call);
}

}  // namespace loom::backends::cpu
