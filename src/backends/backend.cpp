// Backend's defaults: host memory through a caching allocator, uploads and
// copies as memcpy on the stream.
#include "backends/backend.h"

#include <cstdlib>
#include <cstring>

#include "core/settings.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom::backends {

// Host memory. With LOOM_HOST_CACHE_MB=n (default 0: off) freed blocks are
// kept by size for reuse, up to n MiB: for workloads whose steps allocate
// large undonated outputs anew (fresh pages cost page faults). Off by
// default: the memory plan already keeps intermediates in each executable's
// arena and donates updated state, and a cache would hold freed memory.
Allocator& Backend::allocator() const {
  static Allocator* a = []() -> Allocator* {
    auto mb = static_cast<size_t>(settings::integer(Setting::host_cache_mb));
    if (mb == 0) return &host_allocator();
    return new CachingAllocator(host_allocator(), mb << 20);  // never destroyed, like buffers
  }();
  return *a;
}

BufferPtr Backend::allocate(size_t nbytes) const {
  return std::make_shared<Buffer>(nbytes, allocator(), host_visible());
}

BufferPtr Backend::upload(const void* host, const ops::TensorType& type, int device) const {
  BufferPtr b = allocate(type.nbytes());
  copy_to_device(host, *b, type.nbytes());
  return b;
}

void Backend::copy_to_device(const void* host, Buffer& dst, size_t nbytes) const {
  LOOM_CHECK(nbytes <= dst.nbytes(), "[", name(), "] copy of ", nbytes, " bytes into a ",
             dst.nbytes(), "-byte buffer");
  void* d = dst.data();
  if (nbytes) stream().enqueue([=] { std::memcpy(d, host, nbytes); });
  stream().synchronize();
  metrics::add_counter("TransferToDeviceBytes", static_cast<int64_t>(nbytes));
}

void Backend::copy_to_host(const Buffer& src, void* host, size_t nbytes) const {
  LOOM_CHECK(nbytes <= src.nbytes(), "[", name(), "] copy of ", nbytes, " bytes from a ",
             src.nbytes(), "-byte buffer");
  const void* s = src.data();
  if (nbytes) stream().enqueue([=] { std::memcpy(host, s, nbytes); });
  stream().synchronize();
  metrics::add_counter("TransferFromDeviceBytes", static_cast<int64_t>(nbytes));
}

std::shared_ptr<Executable> Backend::deserialize(std::shared_ptr<const compiler::Program> p,
                                                 const std::string& bytes) const {
  if (bytes.empty()) return compile(std::move(p));
  fail("[", name(), "] cannot load a serialized executable (", bytes.size(),
       " bytes): this backend compiles from the program and serializes nothing");
}

}  // namespace loom::backends
