// SimMemory: the simulated device's address space. One virtual region is
// reserved at start (LOOM_SIM_MEMORY_MB, default 65536, MAP_NORESERVE, so
// only touched pages cost memory); blocks are carved from it first-fit with
// coalescing on free. The region is PROT_NONE except while the device's
// stream runs work (open(true) .. open(false)), so any host access to
// device memory outside the backend's copies and kernels faults at once.
// Assumes Linux mmap/mprotect and 64-byte-multiple sizes (Allocator).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

#include "core/allocator.h"

namespace loom::backends::sim {

class SimMemory final : public Allocator {
 public:
  SimMemory();
  ~SimMemory() override;
  /// Throws std::bad_alloc when the region is full.
  void* allocate(size_t nbytes) override;
  void deallocate(void* p, size_t nbytes) override;
  /// Makes the used part of the region readable and writable (true) or
  /// inaccessible (false). Called on the stream thread.
  void open(bool accessible);
  /// True when `p` lies inside the region.
  bool contains(const void* p) const;
  size_t used_bytes() const;

 private:
  void protect(size_t from, size_t to, bool accessible);
  std::byte* base_ = nullptr;
  size_t reserved_ = 0;
  size_t high_ = 0;  // bytes of the region ever handed out (page-rounded)
  size_t top_ = 0;   // bump pointer
  size_t used_ = 0;
  bool open_ = false;
  std::map<size_t, size_t> free_;  // offset -> size, coalesced
  mutable std::mutex mu_;
};

}  // namespace loom::backends::sim
