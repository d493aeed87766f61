// Vectorized float math (see vec_math.h for the algorithms and error bounds).
// AVX2 paths are compiled when the build targets AVX2+FMA; the libmvec
// entry points (_ZGVdN8v_<f>f, the x86_64 vector ABI names) are linked from
// glibc's libmvec, which libm's linker script pulls in as needed.
#include "backends/cpu/vec_math.h"

#include <cmath>
#include <cstring>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define LOOM_VM_AVX2 1
#if defined(__x86_64__) && defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
#define LOOM_VM_MVEC 1
extern "C" {
__m256 _ZGVdN8v_logf(__m256);
__m256 _ZGVdN8v_tanhf(__m256);
__m256 _ZGVdN8v_erff(__m256);
__m256 _ZGVdN8v_erfcf(__m256);
__m256 _ZGVdN8v_sinf(__m256);
__m256 _ZGVdN8v_cosf(__m256);
}
#endif
#endif

namespace loom::backends::cpu::vm {
namespace {

template <typename S>
void map_scalar(const float* x, float* y, int64_t n, S f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

#ifdef LOOM_VM_AVX2
// Applies an 8-wide function; the tail goes through a padded block so every
// element sees the same code path.
template <typename V>
void map8(const float* x, float* y, int64_t n, V f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(buf, x + i, sizeof(float) * (n - i));
    _mm256_store_ps(buf, f(_mm256_load_ps(buf)));
    std::memcpy(y + i, buf, sizeof(float) * (n - i));
  }
}

inline __m256 exp8(__m256 x) {
  const __m256 kHi = _mm256_set1_ps(88.7228394f), kLo = _mm256_set1_ps(-104.0f);
  const __m256 kLog2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 kLn2Hi = _mm256_set1_ps(0.693359375f), kLn2Lo = _mm256_set1_ps(-2.12194440e-4f);
  // max/min return their second operand when one is NaN: NaN passes through.
  x = _mm256_min_ps(kHi, _mm256_max_ps(kLo, x));
  __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, kLog2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, kLn2Hi, x);
  r = _mm256_fnmadd_ps(n, kLn2Lo, r);
  // Taylor coefficients 1/k!, k = 7..0.
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n = 2^n1 * 2^n2 with n1 = floor(n/2): both factors are normal floats.
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(ni, 1);
  __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i kBias = _mm256_set1_epi32(127);
  __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, kBias), 23));
  __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, kBias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

inline double hsum(__m256d v) {
  __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
  lo = _mm_add_pd(lo, hi);
  return _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
}

// Adds 8 floats to two double accumulators.
inline void add8(__m256 v, __m256d& a0, __m256d& a1) {
  a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}
#endif

}  // namespace

void exp(const float* x, float* y, int64_t n) {
#ifdef LOOM_VM_AVX2
  map8(x, y, n, exp8);
#else
  map_scalar(x, y, n, [](float v) { return std::exp(v); });
#endif
}

#ifdef LOOM_VM_MVEC
#define LOOM_VM_LIBMVEC(name) map8(x, y, n, _ZGVdN8v_##name##f)
#else
#define LOOM_VM_LIBMVEC(name) map_scalar(x, y, n, [](float v) { return std::name(v); })
#endif

void log(const float* x, float* y, int64_t n) { LOOM_VM_LIBMVEC(log); }
void tanh(const float* x, float* y, int64_t n) { LOOM_VM_LIBMVEC(tanh); }
void erf(const float* x, float* y, int64_t n) { LOOM_VM_LIBMVEC(erf); }
void erfc(const float* x, float* y, int64_t n) { LOOM_VM_LIBMVEC(erfc); }
void sin(const float* x, float* y, int64_t n) { LOOM_VM_LIBMVEC(sin); }
void cos(const float* x, float* y, int64_t n) { LOOM_VM_LIBMVEC(cos); }
#undef LOOM_VM_LIBMVEC

void sqrt(const float* x, float* y, int64_t n) {
#ifdef LOOM_VM_AVX2
  map8(x, y, n, [](__m256 v) { return _mm256_sqrt_ps(v); });
#else
  map_scalar(x, y, n, [](float v) { return std::sqrt(v); });
#endif
}

void rsqrt(const float* x, float* y, int64_t n) {
#ifdef LOOM_VM_AVX2
  map8(x, y, n, [](__m256 v) { return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(v)); });
#else
  map_scalar(x, y, n, [](float v) { return 1.0f / std::sqrt(v); });
#endif
}

double sum(const float* x, int64_t n) {
  int64_t i = 0;
  double s = 0;
#ifdef LOOM_VM_AVX2
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  __m256d b0 = _mm256_setzero_pd(), b1 = _mm256_setzero_pd();
  for (; i + 16 <= n; i += 16) {
    add8(_mm256_loadu_ps(x + i), a0, a1);
    add8(_mm256_loadu_ps(x + i + 8), b0, b1);
  }
  s = hsum(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(b0, b1)));
#endif
  for (; i < n; ++i) s += x[i];
  return s;
}

double sum_sq_dev(const float* x, int64_t n, double mean) {
  int64_t i = 0;
  double s = 0;
#ifdef LOOM_VM_AVX2
  __m256d m = _mm256_set1_pd(mean), a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), m);
    __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), m);
    a0 = _mm256_fmadd_pd(d0, d0, a0);
    a1 = _mm256_fmadd_pd(d1, d1, a1);
  }
  s = hsum(_mm256_add_pd(a0, a1));
#endif
  for (; i < n; ++i) s += (x[i] - mean) * (x[i] - mean);
  return s;
}

namespace {
template <bool kMax>
float extreme(const float* x, int64_t n) {
  int64_t i = 0;
  float m = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  bool nan = false;
#ifdef LOOM_VM_AVX2
  __m256 acc = _mm256_set1_ps(m), bad = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    acc = kMax ? _mm256_max_ps(acc, v) : _mm256_min_ps(acc, v);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float v : lanes) m = kMax ? (v > m ? v : m) : (v < m ? v : m);
  nan = _mm256_movemask_ps(bad) != 0;
#endif
  for (; i < n; ++i) {
    nan = nan || std::isnan(x[i]);
    m = kMax ? (x[i] > m ? x[i] : m) : (x[i] < m ? x[i] : m);
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}
}  // namespace

float max(const float* x, int64_t n) { return extreme<true>(x, n); }
float min(const float* x, int64_t n) { return extreme<false>(x, n); }

double exp_shift_sum(const float* x, float* y, int64_t n, float shift) {
  int64_t i = 0;
  double s = 0;
#ifdef LOOM_VM_AVX2
  __m256 sh = _mm256_set1_ps(shift);
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  for (; i + 8 <= n; i += 8) {
    __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh));
    _mm256_storeu_ps(y + i, e);
    add8(e, a0, a1);
  }
  s = hsum(_mm256_add_pd(a0, a1));
  if (i < n) {
    alignas(32) float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t rest = n - i;
    for (int64_t j = 0; j < rest; ++j) buf[j] = x[i + j] - shift;
    _mm256_store_ps(buf, exp8(_mm256_load_ps(buf)));
    for (int64_t j = 0; j < rest; ++j) s += (y[i + j] = buf[j]);
  }
#else
  for (; i < n; ++i) s += (y[i] = std::exp(x[i] - shift));
#endif
  return s;
}

}  // namespace loom::backends::cpu::vm
