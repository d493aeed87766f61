// The fused elementwise kernel of the cpu backend: a chunked interpreter.
// The group's elements are cut into chunks of kFusedChunk; for each chunk every
// body op is evaluated into a small f32 temporary (L1-resident), so inputs
// are read once and outputs written once. Chunks run in parallel (OpenMP).
// An input of another shape broadcasts to the group's (a bias [C] against
// [B, T, C], a row statistic [R, 1] against [R, C]) and is expanded per chunk.
// Values are computed in f32 and rounded to bf16/f16 after each op of that
// type, as the unfused kernels round their outputs. A dropout member
// regenerates its chunk's Philox uniforms from the group element index
// (dropout_f32, shared with cpu_dropout). docs/lazy.md gives the
// measured cost of this interpreter against one kernel per op.
#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "backends/cpu/convert.h"
#include "backends/cpu/dropout.h"
#include "backends/cpu/fused.h"
#include "backends/cpu/kernels.h"
#include "loom/error.h"

namespace loom::backends::cpu {
namespace {

using ops::OpKind;

// dst[i] = element begin + i of v's own (contiguous) data, as f32.
void load_run(const ConstView& v, int64_t begin, int64_t n, float* dst) {
  switch (v.type.dtype) {
    case DType::f32: {
      const float* p = v.as<float>() + begin;
      for (int64_t i = 0; i < n; ++i) dst[i] = p[i];
      return;
    }
    case DType::bf16:
    case DType::f16:
      load_f32(v.data, v.type.dtype, begin, n, dst);  // vectorized, same bits as dtype.h
      return;
    default:
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<float>(load_as_double(v.data, v.type.dtype, begin + i));
  }
}

// Elements [begin, begin + n) of `shape` read from v, whose shape broadcasts
// to it (numpy rules: aligned right, dims of 1 repeat). Walks the group
// shape's last dim in runs: a run is copied when v varies along that dim and
// filled with one value when v is broadcast along it.
void load_broadcast(const ConstView& v, const Shape& shape, int64_t begin, int64_t n, float* dst) {
  int rank = static_cast<int>(shape.size());
  int lead = rank - static_cast<int>(v.type.shape.size());
  // Per-thread index scratch (no allocation per chunk once grown).
  static thread_local std::vector<int64_t> stride_buf, idx_buf;
  stride_buf.assign(rank, 0);
  idx_buf.assign(rank, 0);
  int64_t* stride = stride_buf.data();
  int64_t* idx = idx_buf.data();
  for (int64_t d = rank - 1, run = 1; d >= lead; --d) {
    int64_t size = v.type.shape[d - lead];
    stride[d] = size == 1 ? 0 : run;
    run *= size;
  }
  int64_t offset = 0;
  for (int64_t d = rank - 1, rest = begin; d >= 0; --d) {
    idx[d] = rest % shape[d];
    rest /= shape[d];
    offset += idx[d] * stride[d];
  }
  for (int64_t done = 0; done < n;) {
    int64_t len = std::min(shape[rank - 1] - idx[rank - 1], n - done);
    if (stride[rank - 1] != 0) {
      load_run(v, offset, len, dst + done);
    } else {
      load_run(v, offset, 1, dst + done);
      std::fill(dst + done + 1, dst + done + len, dst[done]);
    }
    done += len;
    offset += len * stride[rank - 1];
    idx[rank - 1] += len;
    for (int d = rank - 1; d > 0 && idx[d] == shape[d]; --d) {  // carry
      offset += stride[d - 1] - idx[d] * stride[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

void load_chunk(const ConstView& v, const Shape& shape, int64_t begin, int64_t n, float* dst) {
  if (v.type.numel() == 1) {
    float x = static_cast<float>(load_as_double(v.data, v.type.dtype, 0));
    for (int64_t i = 0; i < n; ++i) dst[i] = x;
  } else if (v.type.shape == shape) {
    load_run(v, begin, n, dst);
  } else {
    load_broadcast(v, shape, begin, n, dst);
  }
}

void store_chunk(const MutView& v, int64_t begin, int64_t n, const float* src) {
  switch (v.type.dtype) {
    case DType::f32: {
      float* p = v.as<float>() + begin;
      for (int64_t i = 0; i < n; ++i) p[i] = src[i];
      return;
    }
    case DType::bf16:
    case DType::f16:
      store_f32(src, n, v.data, v.type.dtype, begin);
      return;
    default:
      for (int64_t i = 0; i < n; ++i) store_from_double(v.data, v.type.dtype, begin + i, src[i]);
  }
}

void round_to(DType d, float* x, int64_t n) {
  if (d == DType::bf16) {
    // In place, the same bits as bf16_from_f32 then back (round to nearest
    // even; a NaN stays a quiet NaN): one vectorizable pass, no bits buffer.
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits = std::bit_cast<uint32_t>(x[i]);
      uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
      uint32_t nan = (bits & 0xFFFF0000u) | 0x00400000u;
      x[i] = std::bit_cast<float>((bits & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
    }
  } else if (d == DType::f16) {
    uint16_t bits[kFusedChunk];  // n <= kFusedChunk
    store_f32(x, n, bits, d, 0);
    load_f32(bits, d, 0, n, x);
  } else if (d == DType::boolean)
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] != 0.0f ? 1.0f : 0.0f;
}

template <typename F>
void map2(const float* a, const float* b, float* o, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}

float nan_max(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
float nan_min(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

// dropout of the chunk starting at group element `begin`: the generator state
// is the group input op.args[1] (int64[2], never a body value), and element
// i's stream index is its index in the group's (= the dropout's) shape.
void eval_dropout(const compiler::FusedOp& op, const FusedCall& call, int64_t begin, const float* x,
                  float* o, int64_t n) {
  const int64_t* gen = call.inputs[op.args[1]].as<int64_t>();
  dropout_f32(static_cast<uint64_t>(gen[0]), static_cast<uint64_t>(gen[1]),
              static_cast<uint64_t>(begin), op.attrs.dropout_p, x, o, n);
}

// args[k] is operand k's chunk (op.args.size() of them, at most 3); the
// chunk holds group elements [begin, begin + n).
void eval_op(const compiler::FusedOp& op, const float* const* args, float* o, int64_t n,
             const FusedCall& call, int64_t begin) {
  size_t arity = op.args.size();
  const float* a = arity > 0 ? args[0] : nullptr;
  const float* b = arity > 1 ? args[1] : nullptr;
  switch (op.op) {
    case OpKind::k_neg:
    case OpKind::k_abs:
    case OpKind::k_exp:
    case OpKind::k_log:
    case OpKind::k_sqrt:
    case OpKind::k_rsqrt:
    case OpKind::k_tanh:
    case OpKind::k_erf:
    case OpKind::k_sigmoid:
    case OpKind::k_relu:
    case OpKind::k_gelu:
    case OpKind::k_gelu_tanh:
    case OpKind::k_sin:
    case OpKind::k_cos:
    case OpKind::k_sign:
    case OpKind::k_cast:
    case OpKind::k_pow_scalar:
      unary_f32(op.op, op.attrs.exponent, a, o, n);  // the eager kernels' arithmetic
      break;
    case OpKind::k_add:
      map2(a, b, o, n, [](float x, float y) { return x + y; });
      break;
    case OpKind::k_sub:
      map2(a, b, o, n, [](float x, float y) { return x - y; });
      break;
    case OpKind::k_mul:
      map2(a, b, o, n, [](float x, float y) { return x * y; });
      break;
    case OpKind::k_div:
      map2(a, b, o, n, [](float x, float y) { return x / y; });
      break;
    case OpKind::k_maximum:
      map2(a, b, o, n, nan_max);
      break;
    case OpKind::k_minimum:
      map2(a, b, o, n, nan_min);
      break;
    case OpKind::k_pow:
      map2(a, b, o, n, [](float x, float y) { return std::pow(x, y); });
      break;
    case OpKind::k_eq:
      map2(a, b, o, n, [](float x, float y) { return float(x == y); });
      break;
    case OpKind::k_ne:
      map2(a, b, o, n, [](float x, float y) { return float(x != y); });
      break;
    case OpKind::k_lt:
      map2(a, b, o, n, [](float x, float y) { return float(x < y); });
      break;
    case OpKind::k_le:
      map2(a, b, o, n, [](float x, float y) { return float(x <= y); });
      break;
    case OpKind::k_gt:
      map2(a, b, o, n, [](float x, float y) { return float(x > y); });
      break;
    case OpKind::k_ge:
      map2(a, b, o, n, [](float x, float y) { return float(x >= y); });
      break;
    case OpKind::k_where:
      for (int64_t i = 0; i < n; ++i) o[i] = a[i] != 0.0f ? b[i] : args[2][i];
      break;
    case OpKind::k_gelu_backward:
    case OpKind::k_gelu_tanh_backward:
      gelu_backward_f32(op.op, a, b, o, n);  // the eager kernel's arithmetic
      break;
    case OpKind::k_dropout:
      eval_dropout(op, call, begin, a, o, n);
      break;
    default:
      fail("[fused] op ", ops::op_name(op.op), " cannot be fused");
  }
  round_to(op.type.dtype, o, n);
}

}  // namespace

float* eval_fused_chunk(const FusedCall& call, int64_t begin, int64_t n) {
  const compiler::FusedGroup& g = *call.group;
  int ni = g.num_inputs();
  // Scratch per thread, kept between calls and never zero-filled: every
  // slot is written (load_chunk / eval_op) before it is read.
  static thread_local std::vector<float> buf;
  static thread_local std::vector<const float*> src;  // where each value's chunk is read
  size_t values = ni + g.body.size();
  size_t need = values * kFusedChunk;
  if (buf.size() < need) buf.resize(need);
  src.resize(values);
  auto slot = [&](size_t k) { return buf.data() + k * kFusedChunk; };
  for (int k = 0; k < ni; ++k) {
    const ConstView& in = call.inputs[k];
    if (in.type.dtype == DType::i64) {  // a dropout's generator state, read by eval_dropout
      src[k] = nullptr;
    } else if (in.type.dtype == DType::f32 && in.type.shape == g.shape) {
      // Read in place: outputs are stored only after the whole chunk is evaluated.
      src[k] = in.as<float>() + begin;
    } else {
      load_chunk(in, g.shape, begin, n, slot(k));
      src[k] = slot(k);
    }
  }
  const float* args[3] = {nullptr, nullptr, nullptr};
  for (size_t k = 0; k < g.body.size(); ++k) {
    const compiler::FusedOp& op = g.body[k];
    for (size_t j = 0; j < op.args.size() && j < 3; ++j) args[j] = src[op.args[j]];
    float* o = slot(ni + k);
    eval_op(op, args, o, n, call, begin);
    src[ni + k] = o;
  }
  for (size_t o = 0; o < g.outputs.size(); ++o)
    store_chunk(call.outputs[o], begin, n, slot(ni + g.outputs[o]));
  return buf.data();
}

void run_fused_chunked(const FusedCall& call) {
  const compiler::FusedGroup& g = *call.group;
  if (g.has_reduce) {
    run_fused_reduce(call);
    return;
  }
  int64_t total = numel(g.shape);
  int64_t chunks = (total + kFusedChunk - 1) / kFusedChunk;
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * kFusedChunk;
    eval_fused_chunk(call, begin, std::min(kFusedChunk, total - begin));
  }
}

}  // namespace loom::backends::cpu
