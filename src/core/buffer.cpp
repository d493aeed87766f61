// Aligned buffers from an Allocator, with live/peak byte accounting (for
// memory tests).
#include "core/buffer.h"

#include <atomic>

namespace loom {
namespace {
std::atomic<size_t> g_live{0};
std::atomic<size_t> g_peak{0};
constexpr size_t kAlign = 64;
}  // namespace

Buffer::Buffer(size_t nbytes, Allocator& allocator, bool host_visible)
    : nbytes_(nbytes), allocator_(&allocator), host_visible_(host_visible) {
  rounded_ = (nbytes + kAlign - 1) / kAlign * kAlign;
  if (rounded_ == 0) rounded_ = kAlign;
  data_ = allocator_->allocate(rounded_);
  size_t live = g_live.fetch_add(nbytes) + nbytes;
  size_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}

Buffer::~Buffer() {
  allocator_->deallocate(data_, rounded_);
  g_live.fetch_sub(nbytes_);
}

size_t Buffer::live_bytes() { return g_live.load(); }
size_t Buffer::peak_bytes() { return g_peak.load(); }
void Buffer::reset_peak_bytes() { g_peak.store(g_live.load()); }

}  // namespace loom
