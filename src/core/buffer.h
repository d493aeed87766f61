// Buffer: one 64-byte-aligned block of memory holding a tensor's elements
// (row-major, contiguous), from an Allocator: host memory by default, a
// backend's device memory otherwise. Shared by handle; returned to its
// allocator with the last one. Code above the backends reads a buffer's
// bytes only when host_visible() (else through the backend's copies).
#pragma once

#include <cstddef>
#include <memory>

#include "core/allocator.h"

namespace loom {

class Buffer {
 public:
  /// Allocates `nbytes` (rounded up to 64) aligned to 64 bytes from
  /// `allocator`; contents uninitialized. `host_visible` = false marks
  /// device memory host code must not touch. Throws std::bad_alloc when
  /// memory runs out.
  explicit Buffer(size_t nbytes, Allocator& allocator = host_allocator(), bool host_visible = true);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool host_visible() const { return host_visible_; }

  /// Bytes currently allocated by all live buffers, and the peak since start
  /// (or since reset_peak_bytes()).
  static size_t live_bytes();
  static size_t peak_bytes();
  static void reset_peak_bytes();

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  size_t rounded_ = 0;
  Allocator* allocator_ = nullptr;
  bool host_visible_ = true;
};

using BufferPtr = std::shared_ptr<Buffer>;

inline BufferPtr make_buffer(size_t nbytes) { return std::make_shared<Buffer>(nbytes); }

}  // namespace loom
