// CachingAllocator: a freed block of the same size comes back (no fresh
// pages), up to the cache limit; beyond it blocks go back upstream.
#include <gtest/gtest.h>

#include <set>

#include "core/allocator.h"
#include "core/buffer.h"

namespace loom {
namespace {

// Counts what reaches the host allocator.
class CountingAllocator final : public Allocator {
 public:
  void* allocate(size_t n) override {
    ++allocs;
    return host_allocator().allocate(n);
  }
  void deallocate(void* p, size_t n) override {
    ++frees;
    host_allocator().deallocate(p, n);
  }
  int allocs = 0, frees = 0;
};

TEST(CachingAllocator, ReusesFreedBlocksOfTheSameSizeUpToItsLimit) {
  CountingAllocator up;
  {
    CachingAllocator cache(up, 4096);
    void* a = cache.allocate(1024);
    cache.deallocate(a, 1024);
    EXPECT_EQ(cache.cached_bytes(), 1024u);
    EXPECT_EQ(cache.allocate(1024), a) << "the freed block comes back";
    EXPECT_EQ(up.allocs, 1);
    void* b = cache.allocate(2048);  // another size: a new block
    EXPECT_EQ(up.allocs, 2);
    void* c = cache.allocate(4096);
    cache.deallocate(a, 1024);
    cache.deallocate(b, 2048);
    cache.deallocate(c, 4096);  // would exceed 4096 cached: back upstream
    EXPECT_EQ(cache.cached_bytes(), 3072u);
    EXPECT_EQ(up.frees, 1);
    Buffer buf(1000, cache);  // rounded to 1024: the cached block
    EXPECT_EQ(buf.data(), a);
  }
  EXPECT_EQ(up.frees, up.allocs) << "the cache returns everything when destroyed";
}

}  // namespace
}  // namespace loom
