// Optimized random kernels on Philox4x32-10 (core/philox.h): one Philox
// block serves four consecutive elements (element i uses word i % 4 of block
// i / 4), and threads split the element range at multiples of 4, so every
// element gets exactly the reference's value whatever the thread count.
// With AVX2, eight blocks run at once in 32-bit lanes (the 32 x 32 -> 64
// multiplies split into even and odd lanes), with AVX-512 sixteen;
// bit-identical to the scalar path (the AVX-512 path also converts and
// transposes the words to stream order in registers).
// dropout: keep when uniform(i) >= p, scaled by 1/(1-p) in double as the
// reference; normal: Box-Muller on uniforms 2i and 2i+1 in double.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "backends/cpu/convert.h"
#include "backends/cpu/dropout.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/philox_uniforms.h"
#include "core/parallel.h"
#include "core/philox.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

// GCC 12 reports the _mm512_undefined_* pass-through operands inside
// avx512fintrin.h's shift intrinsics as maybe-uninitialized once philox16 is
// inlined; they are don't-care inputs by definition.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

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

// Uniforms for stream elements [first, first + n) into u, scalar.
void uniforms_scalar(Gen g, uint64_t first, int64_t n, float* u) {
  uint64_t i = first, end = first + n;
  while (i < end) {
    uint64_t block = i / 4;
    auto w = philox::block({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                            static_cast<uint32_t>(g.offset), static_cast<uint32_t>(g.offset >> 32)},
                           {static_cast<uint32_t>(g.seed), static_cast<uint32_t>(g.seed >> 32)});
    for (uint64_t j = i % 4; j < 4 && i < end; ++j, ++i) u[i - first] = to_uniform(w[j]);
  }
}

#ifdef __AVX2__
// High and low 32 bits of the 8 products a[i] * m (32 x 32 -> 64 bits).
inline void mul_hi_lo(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
  __m256i even = _mm256_mul_epu32(a, m);                        // lanes 0,2,4,6
  __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1,3,5,7
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

// Philox4x32-10 blocks block0 .. block0+7 at once (same rounds as
// philox::block, one block per 32-bit lane); words[w] holds word w of each.
void philox8(uint64_t block0, Gen g, __m256i words[4]) {
  alignas(32) uint32_t lo[8], hi[8];
  for (int l = 0; l < 8; ++l) {
    uint64_t b = block0 + l;
    lo[l] = static_cast<uint32_t>(b), hi[l] = static_cast<uint32_t>(b >> 32);
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(g.offset)));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(g.offset >> 32)));
  uint32_t k0 = static_cast<uint32_t>(g.seed), k1 = static_cast<uint32_t>(g.seed >> 32);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int round = 0; round < 10; ++round) {
    __m256i hi0, lo0, hi1, lo1;
    mul_hi_lo(c0, m0, hi0, lo0);
    mul_hi_lo(c2, m1, hi1, lo1);
    __m256i n0 =
        _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    __m256i n2 =
        _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  words[0] = c0, words[1] = c1, words[2] = c2, words[3] = c3;
}
#endif

#ifdef __AVX512F__
// philox8 on 16 blocks (block0 .. block0+15) in the 16 lanes of AVX-512.
// The counters are built in registers (lane l = block0 + l); only a carry
// out of the low 32 bits inside the 16 takes the lane-by-lane path (scalar
// stores read back as one vector stall store forwarding on every call).
void philox16(uint64_t block0, Gen g, __m512i words[4]) {
  __m512i c0, c1;
  uint32_t lo0 = static_cast<uint32_t>(block0), hi0 = static_cast<uint32_t>(block0 >> 32);
  if (lo0 <= 0xFFFFFFFFu - 15) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    c0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(lo0)), iota);
    c1 = _mm512_set1_epi32(static_cast<int>(hi0));
  } else {
    alignas(64) uint32_t lo[16], hi[16];
    for (int l = 0; l < 16; ++l) {
      uint64_t b = block0 + l;
      lo[l] = static_cast<uint32_t>(b), hi[l] = static_cast<uint32_t>(b >> 32);
    }
    c0 = _mm512_load_si512(lo), c1 = _mm512_load_si512(hi);
  }
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(g.offset)));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(g.offset >> 32)));
  uint32_t k0 = static_cast<uint32_t>(g.seed), k1 = static_cast<uint32_t>(g.seed >> 32);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  auto mul_hi_lo16 = [](__m512i a, __m512i m, __m512i& h, __m512i& l) {
    __m512i even = _mm512_mul_epu32(a, m);                        // lanes 0,2,...
    __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);  // lanes 1,3,...
    h = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    l = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  };
  for (int round = 0; round < 10; ++round) {
    __m512i hi0, lo0, hi1, lo1;
    mul_hi_lo16(c0, m0, hi0, lo0);
    mul_hi_lo16(c2, m1, hi1, lo1);
    __m512i n0 =
        _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
    __m512i n2 =
        _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
    c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  words[0] = c0, words[1] = c1, words[2] = c2, words[3] = c3;
}

// Stores the 64 uniforms of 16 Philox blocks (words[k] lane l = word k of
// block l) in stream order out[4 l + k]: each word becomes to_uniform's
// float (w >> 8 is exact in f32, the scale a power of two), then a 4 x 16
// transpose (unpack within 128-bit lanes, then a 4 x 4 shuffle of lanes).
void uniforms16_store(const __m512i words[4], float* out) {
  const __m512 scale = _mm512_set1_ps(1.0f / 16777216.0f);
  __m512 f[4];
  for (int k = 0; k < 4; ++k)
    f[k] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(words[k], 8)), scale);
  // a: (f0, f1) of blocks 4j, 4j+1 per 128-bit lane j; b: of 4j+2, 4j+3.
  __m512 a = _mm512_unpacklo_ps(f[0], f[1]), b = _mm512_unpackhi_ps(f[0], f[1]);
  __m512 c = _mm512_unpacklo_ps(f[2], f[3]), d = _mm512_unpackhi_ps(f[2], f[3]);
  // r[q] lane j = the 4 words of block 4j + q.
  __m512 r0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(c)));
  __m512 r1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(c)));
  __m512 r2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(b), _mm512_castps_pd(d)));
  __m512 r3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(b), _mm512_castps_pd(d)));
  __m512 t0 = _mm512_shuffle_f32x4(r0, r1, 0x44), t1 = _mm512_shuffle_f32x4(r2, r3, 0x44);
  __m512 t2 = _mm512_shuffle_f32x4(r0, r1, 0xEE), t3 = _mm512_shuffle_f32x4(r2, r3, 0xEE);
  _mm512_storeu_ps(out, _mm512_shuffle_f32x4(t0, t1, 0x88));       // blocks 0..3
  _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(t0, t1, 0xDD));  // blocks 4..7
  _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(t2, t3, 0x88));  // blocks 8..11
  _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(t2, t3, 0xDD));  // blocks 12..15
}
#endif

// Uniforms for stream elements [first, first + n) into u. A start inside a
// block takes the scalar path up to the next block boundary, so the vector
// paths serve any chunk start.
void uniforms(Gen g, uint64_t first, int64_t n, float* u) {
  uint64_t i = first, end = first + n;
  if (i % 4 != 0) {
    uint64_t head = std::min<uint64_t>(end, (i + 3) / 4 * 4);
    uniforms_scalar(g, i, static_cast<int64_t>(head - i), u);
    i = head;
  }
#ifdef __AVX512F__
  for (; i % 4 == 0 && i + 64 <= end; i += 64) {  // 16 whole blocks
    __m512i words[4];
    philox16(i / 4, g, words);
    uniforms16_store(words, u + (i - first));
  }
#endif
#ifdef __AVX2__
  for (; i % 4 == 0 && i + 32 <= end; i += 32) {  // 8 whole blocks
    __m256i words[4];
    philox8(i / 4, g, words);
    alignas(32) uint32_t w[4][8];
    for (int k = 0; k < 4; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(w[k]), words[k]);
    float* out = u + (i - first);
    for (int l = 0; l < 8; ++l)
      for (int k = 0; k < 4; ++k) out[l * 4 + k] = to_uniform(w[k][l]);
  }
  // Clean upper register state before leaving the vector code: GCC emits no
  // vzeroupper before the tail call below, and the dirty state then slowed
  // every SSE instruction of libm's log/cos in cpu_normal about 6x (randn of
  // 11.7M values: 0.56 s -> 3-5 s).
  _mm256_zeroupper();
#endif
  uniforms_scalar(g, i, static_cast<int64_t>(end - i), u + (i - first));
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

void philox_uniforms(uint64_t seed, uint64_t offset, uint64_t first, int64_t n, float* u) {
  uniforms({seed, offset}, first, n, u);
}

void dropout_apply(const float* u, double p, const float* x, float* y, int64_t n) {
  double keep_div = 1.0 - p;
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512VL__)
  // 8 at a time in double: divided unconditionally, then the dropped lanes
  // zeroed (a dropped quotient is discarded, so the bits are the scalar's).
  const __m512d div = _mm512_set1_pd(keep_div), pv = _mm512_set1_pd(p);
  for (; i + 8 <= n; i += 8) {
    __m512d q = _mm512_div_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), div);
    __mmask8 keep = _mm512_cmp_pd_mask(_mm512_cvtps_pd(_mm256_loadu_ps(u + i)), pv, _CMP_GE_OQ);
    _mm256_storeu_ps(y + i, _mm256_maskz_mov_ps(keep, _mm512_cvtpd_ps(q)));
  }
#endif
  for (; i < n; ++i) y[i] = u[i] >= p ? static_cast<float>(double(x[i]) / keep_div) : 0.0f;
}

void dropout_f32(uint64_t seed, uint64_t offset, uint64_t first, double p, const float* x, float* y,
                 int64_t n) {
  float u[kChunk];
  uniforms({seed, offset}, first, n, u);
  dropout_apply(u, p, x, y, n);
}

void cpu_dropout(const OpCall& c) {
  Gen g = gen_of(c.inputs[1]);
  double p = c.attrs->dropout_p;
  const ConstView& x = c.inputs[0];
  const MutView& out = c.output;
  for_each_chunk(out.type.numel(), [&](int64_t b, int64_t e) {
    float v[kChunk];
    load_f32(x.data, x.type.dtype, b, e - b, v);
    dropout_f32(g.seed, g.offset, b, p, v, v, e - b);
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
