// safetensors dtype codes and UTF-8 validation.
// Codes and their order: the Rust crate's `Dtype` enum (safetensors 0.8,
// safetensors/src/tensor.rs), whose derived order the writer sorts by.
#include "io/safetensors_format.h"

#include <array>
#include <cstdint>

namespace loom::safetensors::detail {

namespace {

struct CodeEntry {
  DType dtype;
  const char* code;
};

// In the reference's enum order, smallest alignment first.
constexpr std::array<CodeEntry, 6> kCodes = {{{DType::boolean, "BOOL"},
                                              {DType::f16, "F16"},
                                              {DType::bf16, "BF16"},
                                              {DType::i32, "I32"},
                                              {DType::f32, "F32"},
                                              {DType::i64, "I64"}}};

// Valid in the reference (0.8) but with no loom dtype.
constexpr std::array<std::string_view, 16> kUnsupportedCodes = {
    "F4",          "F6_E2M3",     "F6_E3M2", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "F8_E8M0",
    "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16",     "U16", "U32", "C64",     "F64",     "U64"};

}  // namespace

std::optional<DType> dtype_from_code(std::string_view code) {
  for (const auto& entry : kCodes) {
    if (code == entry.code) return entry.dtype;
  }
  return std::nullopt;
}

bool is_unsupported_code(std::string_view code) {
  for (std::string_view c : kUnsupportedCodes) {
    if (code == c) return true;
  }
  return false;
}

int dtype_order(DType dtype) {
  for (size_t i = 0; i < kCodes.size(); ++i) {
    if (kCodes[i].dtype == dtype) return static_cast<int>(i);
  }
  return -1;
}

std::optional<size_t> find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates U+D800..U+DFFF
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;  // continuation byte, overlong C0/C1, or F5..FF
    }
    if (i + len > n) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::nullopt;
}

}  // namespace loom::safetensors::detail

namespace loom::safetensors {

const char* dtype_code(DType dtype) {
  int order = detail::dtype_order(dtype);
  return order < 0 ? "?" : detail::kCodes[static_cast<size_t>(order)].code;
}

}  // namespace loom::safetensors
