// Allocator: where Buffer memory comes from. A backend owns one (its device
// memory); host memory comes from host_allocator(). CachingAllocator keeps
// freed blocks by size and hands them out again, so memory that a training
// step frees and re-allocates every step costs no fresh pages (no page
// faults, no zeroing) — the idea of PyTorch's caching allocators.
// Every block is 64-byte aligned and its size rounded up to 64 bytes.
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace loom {

class Allocator {
 public:
  virtual ~Allocator() = default;
  /// `nbytes` (> 0, a multiple of 64) bytes, 64-byte aligned, contents
  /// unspecified. Throws std::bad_alloc when memory runs out.
  virtual void* allocate(size_t nbytes) = 0;
  /// Returns a block from allocate(nbytes).
  virtual void deallocate(void* p, size_t nbytes) = 0;
};

/// aligned_alloc / free.
Allocator& host_allocator();

/// Keeps up to `max_cached` bytes of freed blocks, exact sizes, most
/// recently freed first; blocks beyond the limit go back to `upstream`.
class CachingAllocator final : public Allocator {
 public:
  CachingAllocator(Allocator& upstream, size_t max_cached);
  ~CachingAllocator() override;
  void* allocate(size_t nbytes) override;
  void deallocate(void* p, size_t nbytes) override;
  /// Returns every cached block to upstream.
  void release_cached();
  size_t cached_bytes() const;

 private:
  Allocator& upstream_;
  size_t max_cached_;
  mutable std::mutex mu_;
  size_t cached_ = 0;
  std::unordered_map<size_t, std::vector<void*>> free_;
};

}  // namespace loom
