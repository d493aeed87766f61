// Allocator: where Buffer memory comes from. A backend owns one (its device
// memory); host memory comes from host_allocator(). CachingAllocator keeps
// freed blocks by size and hands them out again, so memory that a training
// step frees and re-allocates every step costs no fresh pages (no page
// faults, no zeroing) — the idea of PyTorch's caching allocators.
// Every block is 64-byte aligned and its size rounded up to 64 bytes.
// Host blocks of kLargeBlockBytes and more are their own mappings (not
// glibc's heap, whose freed middle can never go back to the system: a
// start-up's transient copies of a model stayed in the process for good)
// and, once freed, wait in a cache of LOOM_LARGE_BLOCK_CACHE_MB (default
// 256) for a block of the same size before they are unmapped. (Not under
// AddressSanitizer, whose checks cover only glibc's blocks.)
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

/// Blocks from this size up are mapped on their own (see above).
inline constexpr size_t kLargeBlockBytes = size_t{4} << 20;

/// Host memory: aligned_alloc / free below kLargeBlockBytes; above, a
/// MappedAllocator behind a CachingAllocator of LOOM_LARGE_BLOCK_CACHE_MB.
Allocator& host_allocator();

/// Unmaps the freed large blocks host_allocator() keeps for reuse and gives
/// the small blocks' free heap pages back (trim_freed_memory).
void release_host_cache();

/// One anonymous private mapping per block (mmap / munmap; sizes rounded up
/// to whole pages, fresh pages read as zeros). Throws std::bad_alloc when
/// the mapping fails.
class MappedAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override;
  void deallocate(void* p, size_t nbytes) override;
};

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
