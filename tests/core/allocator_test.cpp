// CachingAllocator: a freed block of the same size comes back (no fresh
// pages), up to the cache limit; beyond it blocks go back upstream.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/buffer.h"
#include "core/malloc_policy.h"

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

// VmRSS of this process in bytes (Linux /proc/self/status).
size_t resident_bytes() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      size_t kb = 0;
      f >> kb;
      return kb << 10;
    }
    f.ignore(1 << 12, '\n');
  }
  return 0;
}

TEST(HostAllocator, FreedLargeBlocksBeyondTheCacheLeaveTheProcess) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer: every host block is glibc's (core/allocator.cpp)";
#endif
  // Three 192-MiB blocks: one fits the default 256-MiB cache, two are
  // unmapped when freed, also under the lazy device's malloc policy (with
  // glibc's heap, as before, all three stayed in the process).
  retain_freed_memory();
  constexpr size_t kBlock = size_t{192} << 20;
  const size_t before = resident_bytes();
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) {
    blocks.push_back(host_allocator().allocate(kBlock));
    std::memset(blocks.back(), 1, kBlock);  // resident
  }
  const size_t held = resident_bytes();
  EXPECT_GE(held, before + 3 * kBlock - (size_t{32} << 20));
  for (void* p : blocks) host_allocator().deallocate(p, kBlock);
  const size_t after = resident_bytes();
  EXPECT_LE(after, held - 2 * kBlock + (size_t{32} << 20))
      << "before " << before << ", held " << held << ", after " << after;
  void* again = host_allocator().allocate(kBlock);  // the cached block, still resident
  EXPECT_LE(resident_bytes(), after + (size_t{8} << 20));
  host_allocator().deallocate(again, kBlock);
}

TEST(HostAllocator, ReleasingTheCacheGivesTheSmallBlocksFreedHeapBack) {
#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__)
  GTEST_SKIP() << "glibc's heap only (core/malloc_policy.cpp)";
#endif
  if (const char* r = std::getenv("LOOM_MALLOC_RETAIN"); r && std::string(r) == "0")
    GTEST_SKIP() << "LOOM_MALLOC_RETAIN=0: glibc trims at free(), nothing is left to release";
  // Under the lazy device's policy glibc keeps freed heap pages resident
  // (the steps reuse them); release_host_cache trims them, so the start-up's
  // transients do not stay in the process for the whole run.
  retain_freed_memory();
  release_host_cache();  // no cached large block left to be unmapped below
  constexpr size_t kSmall = size_t{64} << 10, kCount = 1024;  // 64 MiB in all
  std::vector<void*> blocks;
  for (size_t i = 0; i < kCount; ++i) {
    blocks.push_back(std::malloc(kSmall));
    std::memset(blocks.back(), 1, kSmall);
  }
  void* guard = std::malloc(64);  // above them: no trim from the heap's top alone
  for (void* p : blocks) std::free(p);
  const size_t kept = resident_bytes();
  release_host_cache();
  const size_t trimmed = resident_bytes();
  std::free(guard);
  EXPECT_LE(trimmed + (size_t{48} << 20), kept) << "kept " << kept << ", trimmed " << trimmed;
}

TEST(MappedAllocator, BlocksArePageAlignedZeroedAndWritable) {
  MappedAllocator m;
  auto* p = static_cast<unsigned char*>(m.allocate(size_t{5} << 20));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[(size_t{5} << 20) - 1], 0);
  p[12345] = 7;
  EXPECT_EQ(p[12345], 7);
  m.deallocate(p, size_t{5} << 20);
}

}  // namespace
}  // namespace loom
