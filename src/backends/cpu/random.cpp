// Optimized random kernels on Philox4x32-10 (core/philox.h): one Philox
// block serves four consecutive elements (element i uses word i % 4 of block
// i / 4), and threads split the element range at multiples of 4, so every
// element gets exactly the reference's value whatever the thread count.
// dropout: keep when uniform(i) >= p, scaled by 1/(1-p) in double as the
// reference; normal: Box-Muller on uniforms 2i and 2i+1 in double.
#include <cmath>
#include <numbers>

#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "core/parallel.h"
#include "core/philox.h"

namespace loom::backends::cpu {
namespace {

struct Gen {
  uint64_t seed, offset;
};

Gen gen_of(const ConstView& v) {
  return {static_cast<uint64_t>(v.as<int64_t>()[0]), static_cast<uint64_t>(v.as<int64_t>()[1])};
}

// The 24-bit uniform of a Philox word, as philox::uniform.
inline float to_uniform(uint32_t w) { return static_cast<float>(w >> 8) * (1.0f / 16777216.0f); }

// Uniforms for stream elements [first, first + n) into u.
void uniforms(Gen g, uint64_t first, int64_t n, float* u) {
  uint64_t i = first, end = first + n;
  while (i < end) {
    uint64_t block = i / 4;
    auto w = philox::block({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                            static_cast<uint32_t>(g.offset), static_cast<uint32_t>(g.offset >> 32)},
                           {static_cast<uint32_t>(g.seed), static_cast<uint32_t>(g.seed >> 32)});
    for (uint64_t j = i % 4; j < 4 && i < end; ++j, ++i) u[i - first] = to_uniform(w[j]);
  }
}

// Runs f(begin, end) over [0, n) in chunks of at most kChunk elements whose
// starts are multiples of 4 (each Philox block is computed once).
template <typename F>
void for_each_chunk(int64_t n, F f) {
  int64_t quads = (n + 3) / 4;
  parallel_for(quads, kElementGrain / 4, [&](int64_t qb, int64_t qe) {
    for (int64_t b = qb * 4; b < std::min(n, qe * 4); b += kChunk)
      f(b, std::min({n, qe * 4, b + kChunk}));
  });
}

}  // namespace

void cpu_dropout(const OpCall& c) {
  Gen g = gen_of(c.inputs[1]);
  double p = c.attrs->scalar;
  const ConstView& x = c.inputs[0];
  const MutView& out = c.output;
  for_each_chunk(out.type.numel(), [&](int64_t b, int64_t e) {
    float u[kChunk], v[kChunk];
    uniforms(g, b, e - b, u);
    load_f32(x.data, x.type.dtype, b, e - b, v);
    for (int64_t i = 0; i < e - b; ++i)
      v[i] = u[i] >= p ? static_cast<float>(double(v[i]) / (1.0 - p)) : 0.0f;
    store_f32(v, e - b, out.data, out.type.dtype, b);
  });
}

void cpu_uniform(const OpCall& c) {
  Gen g = gen_of(c.inputs[0]);
  const MutView& out = c.output;
  for_each_chunk(out.type.numel(), [&](int64_t b, int64_t e) {
    float u[kChunk];
    uniforms(g, b, e - b, u);
    store_f32(u, e - b, out.data, out.type.dtype, b);
  });
}

void cpu_normal(const OpCall& c) {
  Gen g = gen_of(c.inputs[0]);
  const MutView& out = c.output;
  for_each_chunk(out.type.numel(), [&](int64_t b, int64_t e) {
    float u[2 * kChunk], r[kChunk];
    uniforms(g, 2 * b, 2 * (e - b), u);
    for (int64_t i = 0; i < e - b; ++i)
      r[i] = static_cast<float>(std::sqrt(-2.0 * std::log(1.0 - double(u[2 * i]))) *
                                std::cos(2.0 * std::numbers::pi * double(u[2 * i + 1])));
    store_f32(r, e - b, out.data, out.type.dtype, b);
  });
}

}  // namespace loom::backends::cpu
