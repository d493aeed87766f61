// safetensors reader (memory-mapped, fully validated) and atomic writer.
// Works on raw bytes + DType + Shape; knows nothing about loom::Tensor.
//
// Format (https://github.com/huggingface/safetensors, README "Format"):
//   bytes [0, 8)        N, the header length, unsigned 64-bit little endian
//   bytes [8, 8+N)      UTF-8 JSON object: name -> {"dtype": "F32", "shape": [2,3],
//                       "data_offsets": [begin, end]}, plus optional
//                       "__metadata__": {string: string}
//   bytes [8+N, EOF)    the data buffer; offsets are relative to its start.
// Tensor data is row-major and little endian.
//
// Example:
//   auto file = loom::safetensors::File::open("model.safetensors");
//   const auto& info = file.at("wte.weight");      // dtype f32, shape [50257,768]
//   std::span<const std::byte> bytes = file.data(info);  // info.nbytes bytes
//
//   float w[6] = {...};
//   loom::safetensors::save("out.safetensors",
//                           {{"w", loom::DType::f32, {2, 3}, w}}, {{"format", "pt"}});
//
// The rules File::open enforces are those of the reference reader (the Rust
// `safetensors` crate, SafeTensors::read_metadata and Metadata::validate);
// loom is stricter in one place: duplicate tensor names or metadata keys are
// rejected (the reference silently keeps one). See docs/safetensors.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/dtype.h"
#include "loom/shape.h"

namespace loom::safetensors {

/// Largest header N accepted and written, in bytes (the reference's limit).
inline constexpr uint64_t kMaxHeaderSize = 100'000'000;

/// One tensor of a file. `offset` is in bytes from the start of the data
/// buffer (not of the file); `nbytes` == numel(shape) * dtype_size(dtype).
struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  size_t offset = 0;
  size_t nbytes = 0;
};

/// The safetensors dtype code of `dtype`: "F32", "BF16", "F16", "I32",
/// "I64", "BOOL".
const char* dtype_code(DType dtype);

/// A memory-mapped, validated safetensors file. Movable, not copyable; the
/// spans returned by data() stay valid while the File lives.
class File {
 public:
  /// Maps and validates `path`. Throws loom::Error
  /// "[safetensors] <path>: <what is wrong>" (naming the tensor where one is
  /// involved) when the file cannot be opened or breaks any rule listed in
  /// docs/safetensors.md: header length < 8 bytes, N > kMaxHeaderSize, header
  /// past end of file, header not UTF-8, not JSON, not an object, a tensor
  /// entry missing a field or with a wrongly typed one, an unknown dtype or
  /// one loom does not support (F64, U8, ...), a shape entry that is not a
  /// non-negative integer, data_offsets not two non-negative integers with
  /// begin <= end, offsets (sorted by begin) that leave a gap, overlap or
  /// run past the data buffer, a byte count != numel * dtype size (with
  /// overflow checks), bytes after the last tensor, a duplicate name,
  /// "__metadata__" that is not an object of strings (null is accepted).
  static File open(const std::string& path);

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  /// The path given to open().
  const std::string& path() const;
  /// All tensors in file order (ascending data offset; ties keep smaller
  /// end first, as the reference sorts).
  const std::vector<TensorInfo>& tensors() const;
  /// The tensor named `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const;
  /// The tensor named `name`; throws loom::Error
  /// "[safetensors] <path>: no tensor named 'x'" when absent.
  const TensorInfo& at(std::string_view name) const;
  /// The `info.nbytes` bytes of a tensor of this file. The pointer has no
  /// alignment guarantee beyond what the writer chose (files written by
  /// loom or the Python library align each tensor to its element size);
  /// copy with memcpy rather than casting. Throws loom::Error if `info` lies
  /// outside this file's data buffer (an info taken from another file).
  std::span<const std::byte> data(const TensorInfo& info) const;
  /// The "__metadata__" map (empty when absent or null).
  const std::map<std::string, std::string>& metadata() const;
  /// N, the JSON header length in bytes (padding included).
  size_t header_size() const;
  /// Total file size in bytes: 8 + N + data buffer.
  size_t file_size() const;

 private:
  struct Impl;
  explicit File(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A tensor to write: `data` points to numel(shape) * dtype_size(dtype)
/// bytes, row-major, little endian (may be null when that count is 0).
struct TensorRef {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  const void* data = nullptr;
};

/// Writes `tensors` and `metadata` to `path` in the layout the reference
/// writer (Rust `safetensors::serialize`, used by the Python library)
/// produces: tensors sorted by dtype alignment descending (I64, F32, I32,
/// BF16, F16, BOOL) then by name (bytewise), packed without gaps; compact
/// JSON header with "__metadata__" first (keys sorted), then the tensors in
/// data order, each {"dtype","shape","data_offsets"}; header padded with
/// spaces to a multiple of 8 bytes. With at most one metadata entry the
/// bytes equal the Python library's for the same input.
/// Atomic: writes `<path>.tmp.<pid>`, fsyncs it, renames it over `path` and
/// fsyncs the directory; on failure the temporary is removed and `path` is
/// untouched. Throws loom::Error "[safetensors] <path>: ..." for a duplicate
/// or non-UTF-8 name, the reserved name "__metadata__", a negative
/// dimension, a byte count that overflows, null data with a non-zero byte
/// count, non-UTF-8 metadata, a header over kMaxHeaderSize, or any I/O
/// failure (with the system's reason).
void save(const std::string& path, const std::vector<TensorRef>& tensors,
          const std::map<std::string, std::string>& metadata = {});

}  // namespace loom::safetensors
