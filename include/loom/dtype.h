// Element types: f32, bf16, f16, i32, i64, bool, their sizes and names, and
// PyTorch's type promotion (torch.result_type) between them.
// bf16 and f16 are stored as 16-bit patterns; conversion from float rounds to
// nearest even (IEEE 754), NaN stays NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom {

enum class DType : uint8_t { f32, bf16, f16, i32, i64, boolean };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::bf16, DType::f16,
                                       DType::i32, DType::i64, DType::boolean};

/// Bytes per element: 4, 2, 2, 4, 8, 1.
size_t dtype_size(DType dtype);
/// PyTorch's name without the prefix: "float32", "bfloat16", "float16",
/// "int32", "int64", "bool".
const char* dtype_name(DType dtype);
/// Parses dtype_name() output (also "f32", "bf16", ...); throws loom::Error.
DType dtype_from_name(std::string_view name);
/// True for f32, bf16, f16.
bool is_floating(DType dtype);
/// True for i32, i64.
bool is_integral(DType dtype);

/// torch.promote_types: bool < i32 < i64 < floating; f16 with bf16 gives f32;
/// any integer with a float gives that float.
DType promote_types(DType a, DType b);

/// Converts float to bfloat16 bits, round-to-nearest-even.
uint16_t float_to_bf16(float value);
float bf16_to_float(uint16_t bits);
/// Converts float to IEEE half bits, round-to-nearest-even, overflow to inf.
uint16_t float_to_f16(float value);
float f16_to_float(uint16_t bits);

/// Reads element `index` of `data` (of `dtype`) as double.
double load_as_double(const void* data, DType dtype, size_t index);
/// Writes `value` converted to `dtype` (floats rounded as above, ints
/// truncated toward zero as static_cast does, bool = value != 0).
void store_from_double(void* data, DType dtype, size_t index, double value);

}  // namespace loom
