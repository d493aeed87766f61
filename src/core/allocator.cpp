// host_allocator, MappedAllocator and CachingAllocator (see allocator.h).
#include "core/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <string>

#include "core/malloc_policy.h"
#include "core/settings.h"

namespace loom {
namespace {

size_t page_rounded(size_t nbytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (nbytes + page - 1) / page * page;
}

// Small blocks from glibc; blocks of kLargeBlockBytes and more from
// their own mappings through a bounded cache of freed ones.
class HostAllocator final : public Allocator {
 public:
  HostAllocator() : large_(mapped_, large_block_cache_bytes()) {}
  void* allocate(size_t nbytes) override {
    if (large(nbytes)) return large_.allocate(page_rounded(nbytes));
    void* p = std::aligned_alloc(64, nbytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release_cached() { large_.release_cached(); }
  void deallocate(void* p, size_t nbytes) override {
    if (large(nbytes))
      large_.deallocate(p, page_rounded(nbytes));
    else
      std::free(p);
  }

 private:
  // AddressSanitizer keeps every block: its checks cover glibc's blocks.
  static bool large(size_t nbytes) {
#if defined(__SANITIZE_ADDRESS__)
    (void)nbytes;
    return false;
#else
    return nbytes >= kLargeBlockBytes;
#endif
  }
  // LOOM_LARGE_BLOCK_CACHE_MB (default 256).
  static size_t large_block_cache_bytes() {
    return static_cast<size_t>(settings::integer(Setting::large_block_cache_mb)) << 20;
  }
  MappedAllocator mapped_;
  CachingAllocator large_;
};

HostAllocator& host() {
  static HostAllocator* a = new HostAllocator();  // never destroyed: buffers outlive statics
  return *a;
}

}  // namespace

Allocator& host_allocator() { return host(); }

void release_host_cache() {
  host().release_cached();
  trim_freed_memory();  // the small blocks' heap: malloc_policy.h
}

void* MappedAllocator::allocate(size_t nbytes) {
  void* p = ::mmap(nullptr, page_rounded(nbytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void MappedAllocator::deallocate(void* p, size_t nbytes) { ::munmap(p, page_rounded(nbytes)); }

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
