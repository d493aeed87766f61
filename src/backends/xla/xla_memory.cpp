// XlaMemory (xla_memory.h): handles in a PROT_NONE region, one slot each.
#include "backends/xla/xla_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "loom/error.h"

namespace loom::backends::xla {
namespace {
constexpr size_t kHandleBytes = 64;           // Buffer's alignment: one handle per 64 bytes
constexpr size_t kHandleCapacity = 1u << 26;  // 64 Mi handles = 4 GiB of address space
}  // namespace

XlaMemory::XlaMemory() : capacity_(kHandleCapacity) {
  void* p = mmap(nullptr, capacity_ * kHandleBytes, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  LOOM_CHECK(p != MAP_FAILED,
             "[xla] cannot reserve the buffer handle region: ", std::strerror(errno));
  base_ = static_cast<std::byte*>(p);
}

XlaMemory::~XlaMemory() { munmap(base_, capacity_ * kHandleBytes); }

bool XlaMemory::owns(const void* p) const {
  auto* b = static_cast<const std::byte*>(p);
  return b >= base_ && b < base_ + capacity_ * kHandleBytes;
}

size_t XlaMemory::index_of(const void* p) const {
  LOOM_CHECK(owns(p), "[xla] a buffer that is not in xla device memory was given to lazy:xla");
  return static_cast<size_t>(static_cast<const std::byte*>(p) - base_) / kHandleBytes;
}

void* XlaMemory::allocate(size_t) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i;
  if (!free_.empty()) {
    i = free_.back();
    free_.pop_back();
  } else {
    if (slots_.size() >= capacity_) throw std::bad_alloc();
    i = slots_.size();
    slots_.emplace_back();
  }
  return base_ + i * kHandleBytes;
}

void XlaMemory::deallocate(void* p, size_t) {
  std::unique_ptr<PjrtBuffer> dead;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t i = index_of(p);
    dead = std::move(slots_[i].buffer);
    free_.push_back(i);
  }
  // `dead` is destroyed (PJRT_Buffer_Destroy) outside the lock.
}

void XlaMemory::bind(const Buffer& b, std::unique_ptr<PjrtBuffer> buffer, int device) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[index_of(b.data())];
  s.buffer = std::move(buffer);
  s.device = device;
}

PjrtBuffer& XlaMemory::get(const Buffer& b) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Slot& s = slots_[index_of(b.data())];
  LOOM_CHECK(s.buffer != nullptr, "[xla] buffer has no device array (allocated, never written)");
  return *s.buffer;
}

int XlaMemory::device_of(const Buffer& b) const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_[index_of(b.data())].device;
}

}  // namespace loom::backends::xla
