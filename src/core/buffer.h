// Buffer: one 64-byte-aligned block of host memory holding a tensor's
// elements (row-major, contiguous). Shared by handle; freed with the last one.
#pragma once

#include <cstddef>
#include <memory>

namespace loom {

class Buffer {
 public:
  /// Allocates `nbytes` (rounded up to 64) aligned to 64 bytes; contents
  /// uninitialized. Throws std::bad_alloc when memory runs out.
  explicit Buffer(size_t nbytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

  /// Bytes currently allocated by all live buffers, and the peak since start
  /// (or since reset_peak_bytes()).
  static size_t live_bytes();
  static size_t peak_bytes();
  static void reset_peak_bytes();

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
};

using BufferPtr = std::shared_ptr<Buffer>;

inline BufferPtr make_buffer(size_t nbytes) { return std::make_shared<Buffer>(nbytes); }

}  // namespace loom
