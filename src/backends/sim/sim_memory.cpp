// SimMemory (see sim_memory.h).
#include "backends/sim/sim_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/settings.h"
#include "loom/error.h"

namespace loom::backends::sim {
namespace {
size_t page_size() {
  static const size_t n = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return n;
}
size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
}  // namespace

SimMemory::SimMemory() {
  auto mb = static_cast<size_t>(settings::integer(Setting::sim_memory_mb));
  reserved_ = round_up(mb << 20, page_size());
  void* p = mmap(nullptr, reserved_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  LOOM_CHECK(p != MAP_FAILED, "[sim] cannot reserve ", mb,
             " MiB of address space: ", std::strerror(errno), " (set LOOM_SIM_MEMORY_MB lower)");
  base_ = static_cast<std::byte*>(p);
}

SimMemory::~SimMemory() { munmap(base_, reserved_); }

void SimMemory::protect(size_t from, size_t to, bool accessible) {
  if (to <= from) return;
  int rc = mprotect(base_ + from, to - from, accessible ? PROT_READ | PROT_WRITE : PROT_NONE);
  LOOM_CHECK(rc == 0, "[sim] mprotect failed: ", std::strerror(errno));
}

void* SimMemory::allocate(size_t nbytes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < nbytes) continue;
    size_t off = it->first, size = it->second;
    free_.erase(it);
    if (size > nbytes) free_[off + nbytes] = size - nbytes;
    used_ += nbytes;
    return base_ + off;
  }
  if (top_ + nbytes > reserved_) throw std::bad_alloc();
  size_t off = top_;
  top_ += nbytes;
  size_t high = round_up(top_, page_size());
  if (high > high_) {
    if (open_) protect(high_, high, true);  // the stream is running: new pages open too
    high_ = high;
  }
  used_ += nbytes;
  return base_ + off;
}

void SimMemory::deallocate(void* p, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t off = static_cast<size_t>(static_cast<std::byte*>(p) - base_);
  used_ -= nbytes;
  auto next = free_.lower_bound(off);
  if (next != free_.end() && off + nbytes == next->first) {
    nbytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += nbytes;
      return;
    }
  }
  free_[off] = nbytes;
}

void SimMemory::open(bool accessible) {
  std::lock_guard<std::mutex> lock(mu_);
  protect(0, high_, accessible);
  open_ = accessible;
}

bool SimMemory::contains(const void* p) const {
  auto* b = static_cast<const std::byte*>(p);
  return b >= base_ && b < base_ + reserved_;
}

size_t SimMemory::used_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

}  // namespace loom::backends::sim
