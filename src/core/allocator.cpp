// host_allocator and CachingAllocator (see allocator.h).
#include "core/allocator.h"

#include <cstdlib>
#include <new>

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

Allocator& host_allocator() {
  static HostAllocator* a = new HostAllocator();  // never destroyed: buffers outlive statics
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
