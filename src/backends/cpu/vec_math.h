// Vectorized float math over arrays for the cpu kernels. Every function
// takes n elements of x and writes n elements of y; y may equal x (in place).
//
// With AVX2+FMA: exp is loom's own (Cody-Waite range reduction x = n ln2 + r
// with ln2 split in two as in Cephes, degree-7 Taylor polynomial of e^r on
// |r| <= ln2/2, truncation error < 6e-9 relative, scale 2^n applied in two
// steps so denormal results stay right; < 1 ulp measured). log, tanh, erf,
// erfc, sin, cos call glibc's libmvec AVX2 variants (glibc >= 2.35, <= 4 ulp
// documented, <= 3.3 ulp measured). Without AVX2 (e.g. sanitizer builds
// without -march=native) every function is a scalar loop over <cmath>.
#pragma once

#include <cstdint>

namespace loom::backends::cpu::vm {

void exp(const float* x, float* y, int64_t n);
void log(const float* x, float* y, int64_t n);
void tanh(const float* x, float* y, int64_t n);
void erf(const float* x, float* y, int64_t n);
void erfc(const float* x, float* y, int64_t n);
void sin(const float* x, float* y, int64_t n);
void cos(const float* x, float* y, int64_t n);
void sqrt(const float* x, float* y, int64_t n);
/// 1 / sqrt(x) (a division, not the approximate rsqrt instruction).
void rsqrt(const float* x, float* y, int64_t n);

/// Sum of x[0..n) accumulated in double (so it matches a double-precision
/// oracle to rounding).
double sum(const float* x, int64_t n);
/// Sum of (x[i] - mean)^2 in double.
double sum_sq_dev(const float* x, int64_t n, double mean);
/// Largest / smallest of x[0..n) (n >= 1); NaN when any element is NaN.
float max(const float* x, int64_t n);
float min(const float* x, int64_t n);

/// y[i] = exp(x[i] - shift); returns the sum of the y[i] in double
/// (softmax's numerator and normalizer in one pass).
double exp_shift_sum(const float* x, float* y, int64_t n, float shift);

}  // namespace loom::backends::cpu::vm
