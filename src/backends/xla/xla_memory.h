// XlaMemory: the xla backend's buffers are PJRT buffers, which live in the
// plugin's device memory and are reached only through PJRT calls. A loom
// Buffer on lazy:xla holds a *handle*: an address in a reserved region that
// is PROT_NONE for its whole life (64 bytes of address space per handle,
// MAP_NORESERVE: no memory behind it), so host code that reads or writes an
// xla Buffer's data() faults at once, as on lazy:sim. The PjrtBuffer bound
// to a handle (bind) is destroyed with the Buffer (deallocate).
// Assumes Linux mmap; thread-safe (buffers die on any thread).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/xla/pjrt_client.h"
#include "core/allocator.h"
#include "core/buffer.h"

namespace loom::backends::xla {

class XlaMemory final : public Allocator {
 public:
  XlaMemory();
  ~XlaMemory() override;
  /// A fresh handle (its PJRT buffer is bound later); `nbytes` is the
  /// array's size, counted by Buffer::live_bytes() like any device memory.
  void* allocate(size_t nbytes) override;
  /// Destroys the PJRT buffer bound to `p`, frees the handle.
  void deallocate(void* p, size_t nbytes) override;

  /// Binds `buffer` (a PJRT buffer on device `device`) to the handle of
  /// `b`, which must come from this allocator.
  void bind(const Buffer& b, std::unique_ptr<PjrtBuffer> buffer, int device);
  /// The PJRT buffer of `b`; throws loom::Error "[xla] ..." when `b` is not
  /// an xla buffer or has none bound (never computed).
  PjrtBuffer& get(const Buffer& b) const;
  /// The device index of `b`'s PJRT buffer.
  int device_of(const Buffer& b) const;
  /// True when `p` lies in the handle region.
  bool owns(const void* p) const;

 private:
  struct Slot {
    std::unique_ptr<PjrtBuffer> buffer;
    int device = 0;
  };
  size_t index_of(const void* p) const;
  std::byte* base_ = nullptr;
  size_t capacity_ = 0;  // handles
  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  std::vector<size_t> free_;
};

}  // namespace loom::backends::xla
