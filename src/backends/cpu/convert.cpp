// Vectorized dtype conversions (see convert.h). bf16 is the top half of an
// f32; f16 uses the F16C instructions when the build targets them (round to
// nearest even, as loom::float_to_f16), else loom's scalar conversion.
#include "backends/cpu/convert.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "core/parallel.h"
#include "loom/error.h"

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#define LOOM_CONVERT_F16C 1
#endif

namespace loom::backends::cpu {
namespace {

constexpr int64_t kGrain = 1 << 15;

template <typename T>
void int_from_float(const float* src, int64_t n, T* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = std::isfinite(src[i]) ? static_cast<T>(src[i]) : T(0);
}

void bf16_from_f32(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = std::bit_cast<uint32_t>(src[i]);
    uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    dst[i] = static_cast<uint16_t>(nan ? ((bits >> 16) | 0x40u) : rounded);
  }
}

void f16_from_f32(const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
#ifdef LOOM_CONVERT_F16C
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_f16(src[i]);
}

void f32_from_f16(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
#ifdef LOOM_CONVERT_F16C
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = f16_to_float(src[i]);
}

template <typename T, typename U>
void convert_loop(const T* src, int64_t n, U* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<U>(src[i]);
}

}  // namespace

void load_f32(const void* src, DType dtype, int64_t offset, int64_t n, float* dst) {
  switch (dtype) {
    case DType::f32:
      std::memcpy(dst, static_cast<const float*>(src) + offset, n * 4);
      return;
    case DType::bf16: {
      const uint16_t* s = static_cast<const uint16_t*>(src) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(uint32_t{s[i]} << 16);
      return;
    }
    case DType::f16:
      f32_from_f16(static_cast<const uint16_t*>(src) + offset, n, dst);
      return;
    case DType::i32:
      convert_loop(static_cast<const int32_t*>(src) + offset, n, dst);
      return;
    case DType::i64:
      convert_loop(static_cast<const int64_t*>(src) + offset, n, dst);
      return;
    case DType::boolean:
      convert_loop(static_cast<const uint8_t*>(src) + offset, n, dst);
      return;
  }
}

void store_f32(const float* src, int64_t n, void* dst, DType dtype, int64_t offset) {
  switch (dtype) {
    case DType::f32:
      std::memcpy(static_cast<float*>(dst) + offset, src, n * 4);
      return;
    case DType::bf16:
      bf16_from_f32(src, n, static_cast<uint16_t*>(dst) + offset);
      return;
    case DType::f16:
      f16_from_f32(src, n, static_cast<uint16_t*>(dst) + offset);
      return;
    case DType::i32:
      int_from_float(src, n, static_cast<int32_t*>(dst) + offset);
      return;
    case DType::i64:
      int_from_float(src, n, static_cast<int64_t*>(dst) + offset);
      return;
    case DType::boolean: {
      uint8_t* d = static_cast<uint8_t*>(dst) + offset;
      for (int64_t i = 0; i < n; ++i) d[i] = src[i] != 0.0f ? 1 : 0;
      return;
    }
  }
}

void load_i64(const void* src, DType dtype, int64_t offset, int64_t n, int64_t* dst) {
  switch (dtype) {
    case DType::i64:
      std::memcpy(dst, static_cast<const int64_t*>(src) + offset, n * 8);
      return;
    case DType::i32:
      convert_loop(static_cast<const int32_t*>(src) + offset, n, dst);
      return;
    case DType::boolean:
      convert_loop(static_cast<const uint8_t*>(src) + offset, n, dst);
      return;
    default: {  // floating: through f32, truncating toward zero
      float buf[256];
      for (int64_t done = 0; done < n; done += 256) {
        int64_t len = std::min<int64_t>(256, n - done);
        load_f32(src, dtype, offset + done, len, buf);
        int_from_float(buf, len, dst + done);
      }
      return;
    }
  }
}

void store_i64(const int64_t* src, int64_t n, void* dst, DType dtype, int64_t offset) {
  switch (dtype) {
    case DType::i64:
      std::memcpy(static_cast<int64_t*>(dst) + offset, src, n * 8);
      return;
    case DType::i32:
      convert_loop(src, n, static_cast<int32_t*>(dst) + offset);
      return;
    case DType::boolean: {
      uint8_t* d = static_cast<uint8_t*>(dst) + offset;
      for (int64_t i = 0; i < n; ++i) d[i] = src[i] != 0 ? 1 : 0;
      return;
    }
    default: {
      float buf[256];
      for (int64_t done = 0; done < n; done += 256) {
        int64_t len = std::min<int64_t>(256, n - done);
        convert_loop(src + done, len, buf);
        store_f32(buf, len, dst, dtype, offset + done);
      }
      return;
    }
  }
}

std::vector<float> to_f32(const ConstView& in) {
  std::vector<float> out(in.type.numel());
  parallel_for(static_cast<int64_t>(out.size()), kGrain, [&](int64_t b, int64_t e) {
    load_f32(in.data, in.type.dtype, b, e - b, out.data() + b);
  });
  return out;
}

std::vector<int64_t> to_i64(const ConstView& in) {
  std::vector<int64_t> out(in.type.numel());
  parallel_for(static_cast<int64_t>(out.size()), kGrain, [&](int64_t b, int64_t e) {
    load_i64(in.data, in.type.dtype, b, e - b, out.data() + b);
  });
  return out;
}

F32Input::F32Input(const ConstView& v) {
  if (v.type.dtype == DType::f32) {
    data_ = v.as<float>();
  } else {
    copy_ = to_f32(v);
    data_ = copy_.data();
  }
}

F32Output::F32Output(const MutView& v) : out_(v) {
  if (v.type.dtype == DType::f32) {
    data_ = v.as<float>();
  } else {
    copy_.resize(v.type.numel());
    data_ = copy_.data();
  }
}

void F32Output::finish() {
  if (out_.type.dtype == DType::f32) return;
  parallel_for(static_cast<int64_t>(copy_.size()), kGrain, [&](int64_t b, int64_t e) {
    store_f32(copy_.data() + b, e - b, out_.data, out_.type.dtype, b);
  });
}

}  // namespace loom::backends::cpu
