// Optimized unary elementwise kernels, cast, full and arange. Floating
// results are computed in f32 (bf16/f16/int operands are converted a chunk at
// a time, computed, and converted back); integer results of neg/abs/relu/sign
// in int64. Formulas match the reference kernels; GELU is evaluated in forms
// without cancellation: exact GELU as 0.5 x erfc(-x/sqrt 2) (= 0.5x(1+erf(x/
// sqrt 2))), the tanh form as x / (1 + exp(-2u)) with u = sqrt(2/pi)(x +
// 0.044715 x^3) (= 0.5x(1+tanh u)), sigmoid as 1 / (1 + exp(-x)).
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec_math.h"
#include "backends/reference/reference.h"
#include "core/parallel.h"

namespace loom::backends::cpu {
namespace {

using ops::OpKind;

// pow(x, e) for a scalar exponent; exact shortcuts where the result is the
// correctly rounded one, else double pow as the reference.
void pow_scalar_f32(const float* x, float* y, int64_t n, double e) {
  if (e == 1.0) {
    std::memmove(y, x, n * sizeof(float));
  } else if (e == 2.0) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
  } else if (e == -1.0) {
    for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / x[i];
  } else if (e == 0.5) {
    const float inf = std::numeric_limits<float>::infinity();
    vm::sqrt(x, y, n);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] == -inf ? inf : y[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(std::pow(double(x[i]), e));
  }
}

}  // namespace

// y = op(x) for one chunk (n <= kChunk); y may equal x. The scratch t is
// written before it is read (GCC cannot see that through the vm:: calls).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
void unary_f32(OpKind op, double scalar, const float* x, float* y, int64_t n) {
  float t[kChunk];
  switch (op) {
    case OpKind::k_neg:
      for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
      return;
    case OpKind::k_abs:
      for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]);
      return;
    case OpKind::k_exp:
      vm::exp(x, y, n);
      return;
    case OpKind::k_log:
      vm::log(x, y, n);
      return;
    case OpKind::k_sqrt:
      vm::sqrt(x, y, n);
      return;
    case OpKind::k_rsqrt:
      vm::rsqrt(x, y, n);
      return;
    case OpKind::k_tanh:
      vm::tanh(x, y, n);
      return;
    case OpKind::k_erf:
      vm::erf(x, y, n);
      return;
    case OpKind::k_sin:
      vm::sin(x, y, n);
      return;
    case OpKind::k_cos:
      vm::cos(x, y, n);
      return;
    case OpKind::k_relu:  // NaN propagates, as torch.relu
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 || x[i] != x[i] ? x[i] : 0.0f;
      return;
    case OpKind::k_sign:
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] > 0) - (x[i] < 0));
      return;
    case OpKind::k_sigmoid:
      for (int64_t i = 0; i < n; ++i) t[i] = -x[i];
      vm::exp(t, t, n);
      for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + t[i]);
      return;
    case OpKind::k_gelu: {
      const float k = -1.0f / std::numbers::sqrt2_v<float>;
      for (int64_t i = 0; i < n; ++i) t[i] = x[i] * k;
      vm::erfc(t, t, n);
      for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * t[i];
      return;
    }
    case OpKind::k_gelu_tanh: {
      const float k = -2.0f * static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
      for (int64_t i = 0; i < n; ++i) t[i] = k * (x[i] + 0.044715f * x[i] * x[i] * x[i]);
      vm::exp(t, t, n);
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + t[i]);
      return;
    }
    case OpKind::k_pow_scalar:
      pow_scalar_f32(x, y, n, scalar);
      return;
    default:
      std::memmove(y, x, n * sizeof(float));
      return;  // cast
  }
}
#pragma GCC diagnostic pop

namespace {

uint64_t neg_wrap(int64_t v) { return 0ull - static_cast<uint64_t>(v); }

void unary_i64(OpKind op, const int64_t* x, int64_t* y, int64_t n) {
  switch (op) {
    case OpKind::k_neg:
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int64_t>(neg_wrap(x[i]));
      return;
    case OpKind::k_abs:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0 ? static_cast<int64_t>(neg_wrap(x[i])) : x[i];
      return;
    case OpKind::k_relu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0;
      return;
    case OpKind::k_sign:
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0) - (x[i] < 0);
      return;
    default:
      std::memmove(y, x, n * sizeof(int64_t));
      return;  // cast
  }
}

template <typename T>
void run_chunked(const OpCall& call, void (*load)(const void*, DType, int64_t, int64_t, T*),
                 void (*store)(const T*, int64_t, void*, DType, int64_t),
                 void (*compute)(const OpCall&, const T*, T*, int64_t)) {
  const ConstView& in = call.inputs[0];
  const MutView& out = call.output;
  parallel_for(out.type.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
    T buf[kChunk];
    for (int64_t pos = begin; pos < end; pos += kChunk) {
      int64_t len = std::min(kChunk, end - pos);
      load(in.data, in.type.dtype, pos, len, buf);
      compute(call, buf, buf, len);
      store(buf, len, out.data, out.type.dtype, pos);
    }
  });
}

void compute_f32(const OpCall& c, const float* x, float* y, int64_t n) {
  unary_f32(c.op, c.attrs ? c.attrs->exponent : 0.0, x, y, n);
}
void compute_i64(const OpCall& c, const int64_t* x, int64_t* y, int64_t n) {
  unary_i64(c.op, x, y, n);
}

// f32 -> f32: no conversion, each thread works straight on the buffers.
void run_f32_direct(const OpCall& call) {
  const float* x = call.inputs[0].as<float>();
  float* y = call.output.as<float>();
  double scalar = call.attrs ? call.attrs->exponent : 0.0;
  parallel_for(call.output.type.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t pos = begin; pos < end; pos += kChunk)
      unary_f32(call.op, scalar, x + pos, y + pos, std::min(kChunk, end - pos));
  });
}

void cast(const OpCall& call) {
  const ConstView& in = call.inputs[0];
  const MutView& out = call.output;
  if (in.type.dtype == out.type.dtype) {
    size_t esize = dtype_size(in.type.dtype);
    parallel_for(in.type.numel(), kElementGrain, [&](int64_t b, int64_t e) {
      std::memcpy(static_cast<char*>(out.data) + b * esize,
                  static_cast<const char*>(in.data) + b * esize, (e - b) * esize);
    });
  } else if (is_floating(in.type.dtype) || is_floating(out.type.dtype)) {
    run_chunked<float>(call, load_f32, store_f32, compute_f32);
  } else {
    run_chunked<int64_t>(call, load_i64, store_i64, compute_i64);
  }
}

}  // namespace

void cpu_unary(const OpCall& call) {
  if (call.op == OpKind::k_cast) return cast(call);
  DType in = call.inputs[0].type.dtype, out = call.output.type.dtype;
  if (is_floating(out)) {
    if (in == DType::f32 && out == DType::f32) return run_f32_direct(call);
    return run_chunked<float>(call, load_f32, store_f32, compute_f32);
  }
  if (call.op == OpKind::k_pow_scalar) return reference::ref_pow_scalar(call);  // int power
  run_chunked<int64_t>(call, load_i64, store_i64, compute_i64);
}

namespace {
template <typename E>
void fill_as(const MutView& out, const unsigned char* value) {
  E v;
  std::memcpy(&v, value, sizeof(E));
  E* p = static_cast<E*>(out.data);
  parallel_for(out.type.numel(), kElementGrain,
               [&](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
}
}  // namespace

void cpu_full(const OpCall& call) {
  const MutView& out = call.output;
  unsigned char value[8];
  store_from_double(value, out.type.dtype, 0, call.attrs->fill_value);
  switch (dtype_size(out.type.dtype)) {
    case 1:
      return fill_as<uint8_t>(out, value);
    case 2:
      return fill_as<uint16_t>(out, value);
    case 4:
      return fill_as<uint32_t>(out, value);
    default:
      return fill_as<uint64_t>(out, value);
  }
}

void cpu_arange(const OpCall& call) {
  const MutView& out = call.output;
  double start = call.attrs->range_start, step = call.attrs->range_step;
  bool integral = is_integral(out.type.dtype);  // bool goes through f32: value != 0
  parallel_for(out.type.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t pos = begin; pos < end; pos += kChunk) {
      int64_t len = std::min(kChunk, end - pos);
      if (integral) {
        int64_t buf[kChunk];
        for (int64_t i = 0; i < len; ++i) {
          double v = start + step * double(pos + i);
          buf[i] = std::isfinite(v) ? static_cast<int64_t>(v) : 0;
        }
        store_i64(buf, len, out.data, out.type.dtype, pos);
      } else {
        float buf[kChunk];
        for (int64_t i = 0; i < len; ++i)
          buf[i] = static_cast<float>(start + step * double(pos + i));
        store_f32(buf, len, out.data, out.type.dtype, pos);
      }
    }
  });
}

}  // namespace loom::backends::cpu
