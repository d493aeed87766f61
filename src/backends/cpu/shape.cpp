// Optimized data-movement kernels: reshape (parallel memcpy), permute
// (dims coalesced; contiguous rows copied whole, otherwise 32x32 tiles
// transposed between the input's and the output's innermost dims), expand
// (broadcast segments: row copies and fills), slice and concat (block
// copies). All work on raw elements of the dtype's size.
#include <algorithm>
#include <cstring>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"
#include "core/parallel.h"

namespace loom::backends::cpu {
namespace {

using reference::AxisSplit;
using reference::split_at;

constexpr int64_t kTile = 32;
constexpr int64_t kByteGrain = 1 << 18;  // bytes per parallel task of a copy

void parallel_memcpy(void* dst, const void* src, size_t bytes) {
  parallel_for(static_cast<int64_t>(bytes), kByteGrain, [&](int64_t b, int64_t e) {
    std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, e - b);
  });
}

// Output dims after dropping size-1 dims and merging dims that are adjacent
// in both layouts: size, input stride (elements), output stride.
struct PermDims {
  std::vector<int64_t> size, in_stride, out_stride;
};

PermDims coalesce(const Shape& shape, const std::vector<int64_t>& perm) {
  std::vector<int64_t> st = contiguous_strides(shape);
  PermDims p;
  for (int64_t ax : perm) {
    if (shape[ax] == 1) continue;
    if (!p.size.empty() && p.in_stride.back() == st[ax] * shape[ax]) {
      p.size.back() *= shape[ax];
      p.in_stride.back() = st[ax];
    } else {
      p.size.push_back(shape[ax]);
      p.in_stride.push_back(st[ax]);
    }
  }
  if (p.size.empty()) p.size = {1}, p.in_stride = {1};
  p.out_stride = contiguous_strides(p.size);
  return p;
}

// Input offset of output "row" `row` over dims [0, nd) excluding `skip_a`,
// `skip_b` (-1 = none), counted row-major over the remaining dims.
int64_t outer_offset(const PermDims& p, int64_t row, int64_t nd, int64_t skip_a, int64_t skip_b,
                     int64_t* out_offset) {
  int64_t in = 0, out = 0;
  for (int64_t d = nd - 1; d >= 0; --d) {
    if (d == skip_a || d == skip_b) continue;
    int64_t c = row % p.size[d];
    row /= p.size[d];
    in += c * p.in_stride[d];
    out += c * p.out_stride[d];
  }
  *out_offset = out;
  return in;
}

template <typename E>
void permute_typed(const E* src, const PermDims& p, E* dst, int64_t total) {
  int64_t nd = static_cast<int64_t>(p.size.size());
  int64_t last = nd - 1;
  if (p.in_stride[last] == 1) {  // rows stay contiguous: copy them whole
    int64_t len = p.size[last], rows = total / len;
    parallel_for(rows, std::max<int64_t>(1, kByteGrain / (len * int64_t(sizeof(E)))),
                 [&](int64_t b, int64_t e) {
                   for (int64_t r = b; r < e; ++r) {
                     int64_t out_off;
                     int64_t in_off = outer_offset(p, r, last, -1, -1, &out_off);
                     std::memcpy(dst + r * len, src + in_off, len * sizeof(E));
                   }
                 });
    return;
  }
  int64_t a = std::find(p.in_stride.begin(), p.in_stride.end(), 1) - p.in_stride.begin();
  int64_t rows_a = p.size[a], cols = p.size[last], sa = p.out_stride[a], sc = p.in_stride[last];
  int64_t tiles_a = (rows_a + kTile - 1) / kTile, tiles_c = (cols + kTile - 1) / kTile;
  int64_t outer = total / (rows_a * cols), units = outer * tiles_a * tiles_c;
  parallel_for(units, std::max<int64_t>(1, kByteGrain / (kTile * kTile * int64_t(sizeof(E)))),
               [&](int64_t b, int64_t e) {
                 for (int64_t u = b; u < e; ++u) {
                   int64_t o = u / (tiles_a * tiles_c), t = u % (tiles_a * tiles_c);
                   int64_t a0 = (t / tiles_c) * kTile, c0 = (t % tiles_c) * kTile;
                   int64_t a1 = std::min(rows_a, a0 + kTile), c1 = std::min(cols, c0 + kTile);
                   int64_t out_off;
                   int64_t in_off = outer_offset(p, o, nd, a, last, &out_off);
                   // src element (i along a, j along last) = src[in_off + i + j*sc]
                   for (int64_t j = c0; j < c1; ++j) {
                     const E* s = src + in_off + j * sc;
                     E* d = dst + out_off + j;
                     for (int64_t i = a0; i < a1; ++i) d[i * sa] = s[i];
                   }
                 }
               });
}

template <typename F>
void by_element_size(size_t esize, F&& f) {
  switch (esize) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

}  // namespace

void permute_copy(const void* src, const Shape& shape, const std::vector<int64_t>& perm,
                  size_t esize, void* dst) {
  int64_t total = numel(shape);
  if (total == 0) return;
  PermDims p = coalesce(shape, perm);
  if (p.size.size() == 1) return parallel_memcpy(dst, src, total * esize);
  by_element_size(esize, [&](auto e) {
    using E = decltype(e);
    permute_typed(static_cast<const E*>(src), p, static_cast<E*>(dst), total);
  });
}

void cpu_reshape(const OpCall& c) {
  parallel_memcpy(c.output.data, c.inputs[0].data, c.output.type.nbytes());
}

void cpu_permute(const OpCall& c) {
  permute_copy(c.inputs[0].data, c.inputs[0].type.shape, c.attrs->perm,
               dtype_size(c.inputs[0].type.dtype), c.output.data);
}

void cpu_expand(const OpCall& c) {
  int64_t n = c.output.type.numel();
  if (n == 0) return;
  BroadcastPlan plan(c.output.type.shape, {c.inputs[0].type.shape});
  bool contiguous = plan.inner_stride(0) == 1;
  by_element_size(dtype_size(c.output.type.dtype), [&](auto e) {
    using E = decltype(e);
    const E* x = static_cast<const E*>(c.inputs[0].data);
    E* y = static_cast<E*>(c.output.data);
    parallel_for(n, kElementGrain, [&](int64_t b, int64_t end) {
      plan.for_each_segment(b, end, n, [&](int64_t pos, const auto& off, int64_t len) {
        if (contiguous)
          std::memcpy(y + pos, x + off[0], len * sizeof(E));
        else
          std::fill(y + pos, y + pos + len, x[off[0]]);
      });
    });
  });
}

void cpu_slice(const OpCall& c) {
  const auto& a = *c.attrs;
  AxisSplit in = split_at(c.inputs[0].type.shape, a.axis);
  AxisSplit out = split_at(c.output.type.shape, a.axis);
  size_t row = out.inner * dtype_size(c.output.type.dtype);
  const char* x = static_cast<const char*>(c.inputs[0].data);
  char* y = static_cast<char*>(c.output.data);
  if (a.step == 1) {
    // Step 1: each outer block's slice is one contiguous run of out.size
    // rows (a last-axis slice, GPT-2's q/k/v split, copies runs of C, not
    // one memcpy per element).
    size_t run = out.size * row;
    parallel_for(out.outer, std::max<int64_t>(1, kByteGrain / std::max<int64_t>(1, run)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o)
                     std::memcpy(y + o * run, x + (o * in.size + a.start) * row, run);
                 });
    return;
  }
  parallel_for(out.outer * out.size, std::max<int64_t>(1, kByteGrain / std::max<int64_t>(1, row)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   int64_t o = r / out.size, s = r % out.size;
                   std::memcpy(y + r * row, x + (o * in.size + a.start + s * a.step) * row, row);
                 }
               });
}

void cpu_concat(const OpCall& c) {
  AxisSplit out = split_at(c.output.type.shape, c.attrs->axis);
  size_t es = dtype_size(c.output.type.dtype);
  char* y = static_cast<char*>(c.output.data);
  int64_t base = 0;
  for (const ConstView& input : c.inputs) {
    AxisSplit in = split_at(input.type.shape, c.attrs->axis);
    size_t block = in.size * in.inner * es;
    const char* x = static_cast<const char*>(input.data);
    parallel_for(in.outer, std::max<int64_t>(1, kByteGrain / std::max<int64_t>(1, block)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o)
                     std::memcpy(y + ((o * out.size + base) * out.inner) * es, x + o * block,
                                 block);
                 });
    base += in.size;
  }
}

}  // namespace loom::backends::cpu
