// Internal pieces of the safetensors reader and writer shared by
// safetensors_*.cpp: dtype codes, UTF-8 validation, header parsing.
// Format and rules: include/loom/safetensors.h and docs/safetensors.md.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/dtype.h"
#include "loom/safetensors.h"

namespace loom::safetensors::detail {

/// The loom dtype for a safetensors code ("F32" ...), or nullopt.
std::optional<DType> dtype_from_code(std::string_view code);
/// True for codes the reference library defines that loom cannot hold
/// (F64, U8, F8_E4M3, ...).
bool is_unsupported_code(std::string_view code);
/// Position of `dtype` in the reference's Dtype enum order (BOOL < F16 <
/// BF16 < I32 < F32 < I64); the writer sorts by it descending.
int dtype_order(DType dtype);

/// Offset of the first byte that breaks UTF-8 (RFC 3629: no overlongs, no
/// surrogates, nothing above U+10FFFF), or nullopt when `text` is valid.
std::optional<size_t> find_invalid_utf8(std::string_view text);

/// The parsed, validated contents of a whole file image.
struct Header {
  size_t header_size = 0;           // N
  std::vector<TensorInfo> tensors;  // sorted by (offset, offset + nbytes)
  std::map<std::string, std::string> metadata;
};

/// Parses and validates `file` (the whole file: length, header, data).
/// Throws loom::Error "[safetensors] <path>: ..." on the first broken rule.
Header parse_file(std::span<const std::byte> file, const std::string& path);

}  // namespace loom::safetensors::detail
