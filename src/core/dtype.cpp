// DType sizes, names, promotion and the bf16/f16 <-> float conversions.
// Conversions follow IEEE 754 round-to-nearest-even, as PyTorch's c10::BFloat16
// and c10::Half do (behaviour matched, code our own).
#include "loom/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "loom/error.h"

namespace loom {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float32";
    case DType::bf16: return "bfloat16";
    case DType::f16: return "float16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::boolean: return "bool";
  }
  return "?";
}

DType dtype_from_name(std::string_view name) {
  if (name == "float32" || name == "f32" || name == "float") return DType::f32;
  if (name == "bfloat16" || name == "bf16") return DType::bf16;
  if (name == "float16" || name == "f16" || name == "half") return DType::f16;
  if (name == "int32" || name == "i32") return DType::i32;
  if (name == "int64" || name == "i64") return DType::i64;
  if (name == "bool") return DType::boolean;
  fail("[dtype] unknown dtype name '", name, "'");
}

bool is_floating(DType d) { return d == DType::f32 || d == DType::bf16 || d == DType::f16; }
bool is_integral(DType d) { return d == DType::i32 || d == DType::i64; }

static int dtype_category(DType d) { return d == DType::boolean ? 0 : is_integral(d) ? 1 : 2; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  int ca = dtype_category(a), cb = dtype_category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) return DType::i64;  // i32 with i64
  return DType::f32;               // two different float types
}

uint16_t float_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding_bias = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_f16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t abs = x & 0x7FFFFFFF;
  if (abs > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00);  // NaN
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // overflow -> inf
  if (abs < 0x38800000) {  // subnormal or zero in half
    // Scale so the half subnormal unit is 1 in the integer part, then round.
    float f = std::bit_cast<float>(abs) * 16777216.0f;  // 2^24
    float r = std::nearbyint(f);                        // default mode: nearest even
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  uint32_t mant_odd = (abs >> 13) & 1;
  abs += 0xC8000FFF + mant_odd;  // rebias exponent (-112 << 23) and round
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float f16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    float f = static_cast<float>(mant) / 16777216.0f;  // mant * 2^-24
    return sign ? -f : f;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000 | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

double load_as_double(const void* data, DType dtype, size_t i) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(data)[i];
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::f16: return f16_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::i32: return static_cast<const int32_t*>(data)[i];
    case DType::i64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DType::boolean: return static_cast<const uint8_t*>(data)[i] ? 1.0 : 0.0;
  }
  return 0;
}

void store_from_double(void* data, DType dtype, size_t i, double v) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case DType::bf16: static_cast<uint16_t*>(data)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::f16: static_cast<uint16_t*>(data)[i] = float_to_f16(static_cast<float>(v)); break;
    case DType::i32:
      static_cast<int32_t*>(data)[i] = std::isfinite(v) ? static_cast<int32_t>(v) : 0;
      break;
    case DType::i64:
      static_cast<int64_t*>(data)[i] = std::isfinite(v) ? static_cast<int64_t>(v) : 0;
      break;
    case DType::boolean: static_cast<uint8_t*>(data)[i] = v != 0.0 ? 1 : 0; break;
  }
}

}  // namespace loom
