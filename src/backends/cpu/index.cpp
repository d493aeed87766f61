// Optimized index kernels: embedding, index_select, gather (row / element
// copies), index_copy (slice copies; only the slices when the memory plan
// gives the output self's buffer), index_add, scatter_add (accumulate),
// one_hot. Every index is validated first, in flat order, with the
// reference's message, so a bad index throws loom::Error before any
// parallel loop starts. Accumulating kernels parallelize only over
// positions that cannot collide (outer x inner blocks) and add along the
// indexed axis in index order, as the reference; they add in f32 (floating
// dtypes) or int64. Bool accumulation goes to the reference kernel.
#include <algorithm>
#include <cstring>

#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"
#include "core/parallel.h"
#include "loom/error.h"

namespace loom::backends::cpu {
namespace {

using reference::AxisSplit;
using reference::split_at;

// All of `index` as int64, each checked against [0, bound).
std::vector<int64_t> checked_indices(const ConstView& index, int64_t bound, const char* op) {
  std::vector<int64_t> v = to_i64(index);
  for (int64_t x : v)
    LOOM_CHECK(x >= 0 && x < bound, "[", op, "] index ", x, " is out of range for size ", bound);
  return v;
}

int64_t byte_grain(int64_t bytes) {
  return std::max<int64_t>(1, (int64_t{1} << 17) / std::max<int64_t>(1, bytes));
}

// Element offsets into `x` (strides xs) of every position of the sub-shape
// dims [from, to) of `shape` (row-major order).
std::vector<int64_t> sub_offsets(const Shape& shape, const std::vector<int64_t>& xs, size_t from,
                                 size_t to) {
  std::vector<int64_t> off{0};
  for (size_t d = from; d < to; ++d) {
    std::vector<int64_t> next;
    next.reserve(off.size() * shape[d]);
    for (int64_t o : off)
      for (int64_t i = 0; i < shape[d]; ++i) next.push_back(o + i * xs[d]);
    off = std::move(next);
  }
  return off;
}

// out (or base copy) and source as f32 / int64 arrays for accumulation.
template <typename T>
struct Accumulate {
  std::vector<T> out, src;
};

template <typename T>
Accumulate<T> load_accumulate(const OpCall& c) {
  Accumulate<T> a;
  if constexpr (std::is_same_v<T, float>)
    a.out = to_f32(c.inputs[0]), a.src = to_f32(c.inputs[2]);
  else
    a.out = to_i64(c.inputs[0]), a.src = to_i64(c.inputs[2]);
  return a;
}

template <typename T>
void store_accumulate(const std::vector<T>& v, const MutView& out) {
  parallel_for(static_cast<int64_t>(v.size()), kElementGrain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>)
      store_f32(v.data() + b, e - b, out.data, out.type.dtype, b);
    else
      store_i64(v.data() + b, e - b, out.data, out.type.dtype, b);
  });
}

// out[.., idx[k], ..] += src[.., k, ..] over out already holding the base,
// blocks of the inner axis in parallel (each block's rows in index order).
template <typename T>
void index_add_into(T* out, const T* src, const AxisSplit& base, const AxisSplit& s,
                    const std::vector<int64_t>& idx) {
  constexpr int64_t kBlock = 512;
  int64_t blocks = (s.inner + kBlock - 1) / kBlock;
  parallel_for(s.outer * blocks, byte_grain(s.size * kBlock), [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      int64_t o = u / blocks, i0 = (u % blocks) * kBlock, w = std::min(kBlock, s.inner - i0);
      for (int64_t k = 0; k < s.size; ++k) {
        T* dst = out + (o * base.size + idx[k]) * base.inner + i0;
        const T* x = src + (o * s.size + k) * s.inner + i0;
        for (int64_t i = 0; i < w; ++i) dst[i] += x[i];
      }
    }
  });
}

template <typename T>
void index_add_typed(const OpCall& c, const std::vector<int64_t>& idx) {
  AxisSplit base = split_at(c.inputs[0].type.shape, c.attrs->axis);
  AxisSplit src = split_at(c.inputs[2].type.shape, c.attrs->axis);
  if constexpr (std::is_same_v<T, float>) {
    // All f32 (an embedding's gradient, [V, C]): accumulate in the output
    // itself, the same additions in the same order, with no whole f32
    // copies of the base and the output beside it.
    if (c.inputs[0].type.dtype == DType::f32 && c.inputs[2].type.dtype == DType::f32 &&
        c.output.type.dtype == DType::f32) {
      auto* out = static_cast<float*>(c.output.data);
      const auto* b = static_cast<const float*>(c.inputs[0].data);
      const int64_t n = c.output.type.numel();
      if (out != b)
        parallel_for(n, kElementGrain, [&](int64_t lo, int64_t hi) {
          std::memcpy(out + lo, b + lo, static_cast<size_t>(hi - lo) * sizeof(float));
        });
      index_add_into(out, static_cast<const float*>(c.inputs[2].data), base, src, idx);
      return;
    }
  }
  Accumulate<T> a = load_accumulate<T>(c);
  index_add_into(a.out.data(), a.src.data(), base, src, idx);
  store_accumulate(a.out, c.output);
}

// Gather/scatter geometry: index shape `is` walks x (shape xs) with the
// axis coordinate replaced by the index value.
struct AxisWalk {
  int64_t outer, size, inner, axis_stride;
  std::vector<int64_t> outer_off, inner_off;  // x offsets of outer / inner positions
};

AxisWalk axis_walk(const Shape& xs, const Shape& is, int64_t axis) {
  AxisWalk w;
  AxisSplit s = split_at(is, axis);
  w.outer = s.outer, w.size = s.size, w.inner = s.inner;
  std::vector<int64_t> st = contiguous_strides(xs);
  w.axis_stride = st[axis];
  w.outer_off = sub_offsets(is, st, 0, axis);
  w.inner_off = sub_offsets(is, st, axis + 1, is.size());
  return w;
}

template <typename E>
void gather_typed(const OpCall& c, const std::vector<int64_t>& idx) {
  AxisWalk w = axis_walk(c.inputs[0].type.shape, c.inputs[1].type.shape, c.attrs->axis);
  const E* x = static_cast<const E*>(c.inputs[0].data);
  E* out = static_cast<E*>(c.output.data);
  bool dense_inner = w.inner == 1 || w.inner_off.back() == w.inner - 1;
  parallel_for(w.outer * w.size, byte_grain(w.inner * sizeof(E)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t* ir = idx.data() + row * w.inner;
      E* orow = out + row * w.inner;
      int64_t base = w.outer_off[row / w.size];
      if (dense_inner) {
        for (int64_t i = 0; i < w.inner; ++i) orow[i] = x[base + ir[i] * w.axis_stride + i];
      } else {
        for (int64_t i = 0; i < w.inner; ++i)
          orow[i] = x[base + ir[i] * w.axis_stride + w.inner_off[i]];
      }
    }
  });
}

template <typename T>
void scatter_add_typed(const OpCall& c, const std::vector<int64_t>& idx) {
  AxisWalk w = axis_walk(c.inputs[0].type.shape, c.inputs[1].type.shape, c.attrs->axis);
  Accumulate<T> a = load_accumulate<T>(c);
  constexpr int64_t kBlock = 512;
  int64_t blocks = (w.inner + kBlock - 1) / kBlock;
  parallel_for(w.outer * blocks, byte_grain(w.size * kBlock), [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      int64_t o = u / blocks, i0 = (u % blocks) * kBlock, iw = std::min(kBlock, w.inner - i0);
      int64_t base = w.outer_off[o];
      for (int64_t s = 0; s < w.size; ++s) {
        int64_t row = (o * w.size + s) * w.inner;
        for (int64_t i = i0; i < i0 + iw; ++i)
          a.out[base + idx[row + i] * w.axis_stride + w.inner_off[i]] += a.src[row + i];
      }
    }
  });
  store_accumulate(a.out, c.output);
}

// A rank-0 operand is treated as shape [1] (its one element along axis 0).
OpCall rank1(const OpCall& c) {
  OpCall p = c;
  for (ConstView& in : p.inputs)
    if (in.type.shape.empty()) in.type.shape = {1};
  if (p.output.type.shape.empty()) p.output.type.shape = {1};
  return p;
}

}  // namespace

void cpu_embedding(const OpCall& c) {
  int64_t vocab = c.inputs[0].type.shape[0], dim = c.inputs[0].type.shape[1];
  std::vector<int64_t> ids = checked_indices(c.inputs[1], vocab, "embedding");
  size_t row_bytes = dim * dtype_size(c.output.type.dtype);
  const char* w = static_cast<const char*>(c.inputs[0].data);
  char* out = static_cast<char*>(c.output.data);
  parallel_for(static_cast<int64_t>(ids.size()), byte_grain(row_bytes), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      std::memcpy(out + t * row_bytes, w + ids[t] * row_bytes, row_bytes);
  });
}

void cpu_index_select(const OpCall& call) {
  OpCall c = rank1(call);
  AxisSplit in = split_at(c.inputs[0].type.shape, c.attrs->axis);
  AxisSplit out = split_at(c.output.type.shape, c.attrs->axis);
  std::vector<int64_t> idx = checked_indices(c.inputs[1], in.size, "index_select");
  size_t block = out.inner * dtype_size(c.output.type.dtype);
  const char* x = static_cast<const char*>(c.inputs[0].data);
  char* y = static_cast<char*>(c.output.data);
  parallel_for(out.outer * out.size, byte_grain(block), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t o = row / out.size, s = row % out.size;
      std::memcpy(y + row * block, x + (o * in.size + idx[s]) * block, block);
    }
  });
}

void cpu_index_add(const OpCall& call) {
  OpCall c = rank1(call);
  int64_t bound = c.inputs[0].type.shape[c.attrs->axis];
  std::vector<int64_t> idx = checked_indices(c.inputs[1], bound, "index_add");
  DType dt = c.output.type.dtype;
  if (is_floating(dt)) return index_add_typed<float>(c, idx);
  if (dt == DType::boolean) return reference::ref_index_add(c);
  index_add_typed<int64_t>(c, idx);
}

// out = self with slices idx[k] along the axis replaced by source's slice k.
// When the output is self's buffer (planned in place: a donated KV cache)
// self is not copied, so the kernel moves n slices, not the whole tensor.
// A repeated index keeps the last slice (rows in index order per outer
// block); distinct indices copy every (outer, k) slice in parallel.
void cpu_index_copy(const OpCall& call) {
  OpCall c = rank1(call);
  AxisSplit self = split_at(c.inputs[0].type.shape, c.attrs->axis);
  AxisSplit src = split_at(c.inputs[2].type.shape, c.attrs->axis);
  std::vector<int64_t> idx = checked_indices(c.inputs[1], self.size, "index_copy");
  const size_t esize = dtype_size(c.output.type.dtype);
  char* out = static_cast<char*>(c.output.data);
  const char* x = static_cast<const char*>(c.inputs[0].data);
  const char* s = static_cast<const char*>(c.inputs[2].data);
  if (out != x) {
    const int64_t bytes = static_cast<int64_t>(c.output.type.nbytes());
    parallel_for(bytes, byte_grain(1), [&](int64_t lo, int64_t hi) {
      std::memcpy(out + lo, x + lo, static_cast<size_t>(hi - lo));
    });
  }
  const size_t slice = static_cast<size_t>(src.inner) * esize;
  if (slice == 0 || src.size == 0) return;
  auto copy_slice = [&](int64_t o, int64_t k) {
    std::memcpy(out + (o * self.size + idx[k]) * slice, s + (o * src.size + k) * slice, slice);
  };
  std::vector<int64_t> sorted = idx;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) {
    parallel_for(src.outer * src.size, byte_grain(static_cast<int64_t>(slice)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t r = b; r < e; ++r) copy_slice(r / src.size, r % src.size);
                 });
    return;
  }
  parallel_for(src.outer, byte_grain(src.size * static_cast<int64_t>(slice)),
               [&](int64_t b, int64_t e) {
                 for (int64_t o = b; o < e; ++o)
                   for (int64_t k = 0; k < src.size; ++k) copy_slice(o, k);
               });
}

void cpu_gather(const OpCall& call) {
  OpCall c = rank1(call);
  if (c.output.type.numel() == 0) return;
  std::vector<int64_t> idx =
      checked_indices(c.inputs[1], c.inputs[0].type.shape[c.attrs->axis], "gather");
  switch (dtype_size(c.output.type.dtype)) {
    case 1:
      return gather_typed<uint8_t>(c, idx);
    case 2:
      return gather_typed<uint16_t>(c, idx);
    case 4:
      return gather_typed<uint32_t>(c, idx);
    default:
      return gather_typed<uint64_t>(c, idx);
  }
}

void cpu_scatter_add(const OpCall& call) {
  OpCall c = rank1(call);
  std::vector<int64_t> idx =
      checked_indices(c.inputs[1], c.inputs[0].type.shape[c.attrs->axis], "scatter_add");
  DType dt = c.output.type.dtype;
  if (c.inputs[1].type.numel() == 0) {  // nothing scattered: a copy of base
    std::memcpy(c.output.data, c.inputs[0].data, c.output.type.nbytes());
    return;
  }
  if (is_floating(dt)) return scatter_add_typed<float>(c, idx);
  if (dt == DType::boolean) return reference::ref_scatter_add(c);
  scatter_add_typed<int64_t>(c, idx);
}

void cpu_one_hot(const OpCall& c) {
  int64_t classes = c.attrs->num_classes;
  std::vector<int64_t> idx = checked_indices(c.inputs[0], classes, "one_hot");
  int64_t* out = c.output.as<int64_t>();
  parallel_for(static_cast<int64_t>(idx.size()), byte_grain(classes * 8),
               [&](int64_t b, int64_t e) {
                 std::fill(out + b * classes, out + e * classes, int64_t{0});
                 for (int64_t t = b; t < e; ++t) out[t * classes + idx[t]] = 1;
               });
}

}  // namespace loom::backends::cpu
