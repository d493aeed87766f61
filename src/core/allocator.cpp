// host_allocator and CachingAllocator (see allocator.h).
#include "core/allocator.h"

#include <cstdlib>
#include <limits>
#include <new>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace loom {
namespace {

class HostAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    void* p = std::aligned_alloc(64, nbytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, size_t) override { std::free(p); }
};

}  // namespace

// Large blocks from glibc malloc are fresh mmap'ed pages: every allocation
// of a big kernel temporary (a reduction's double accumulators, a dtype
// copy) is then page-faulted and zeroed by the kernel, on every step. Unless
// LOOM_MALLOC_RETAIN=0, loom asks glibc to serve every block from its heap
// and to keep freed memory (M_MMAP_MAX = 0, M_TRIM_THRESHOLD = 2 GiB, one
// arena: M_ARENA_MAX = 1), so a step's temporaries reuse the previous step's
// pages (mallopt(3)).
void retain_freed_memory() {
#if defined(__GLIBC__)
  const char* s = std::getenv("LOOM_MALLOC_RETAIN");
  if (s && std::string(s) == "0") return;
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_ARENA_MAX, 1);  // a thread arena would still mmap blocks over 64 MiB
#endif
}

Allocator& host_allocator() {
  static HostAllocator* a = [] {
    retain_freed_memory();
    return new HostAllocator();  // never destroyed: buffers outlive statics
  }();
  return *a;
}

CachingAllocator::CachingAllocator(Allocator& upstream, size_t max_cached)
    : upstream_(upstream), max_cached_(max_cached) {}

CachingAllocator::~CachingAllocator() { release_cached(); }

void* CachingAllocator::allocate(size_t nbytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(nbytes);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_ -= nbytes;
      return p;
    }
  }
  return upstream_.allocate(nbytes);
}

void CachingAllocator::deallocate(void* p, size_t nbytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + nbytes <= max_cached_) {
      free_[nbytes].push_back(p);
      cached_ += nbytes;
      return;
    }
  }
  upstream_.deallocate(p, nbytes);
}

void CachingAllocator::release_cached() {
  std::unordered_map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
    cached_ = 0;
  }
  for (auto& [n, list] : blocks)
    for (void* p : list) upstream_.deallocate(p, n);
}

size_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

}  // namespace loom
