// The null test backend (null_backend.h): its kernel table, its counted
// memory, and its registration: the only place that names it.
#include "backends/null/null_backend.h"

#include "backends/reference/reference.h"
#include "common/backends.h"

namespace loom::testing {

void* CountingAllocator::allocate(size_t nbytes) {
  void* p = host_allocator().allocate(nbytes);
  size_t now = live_ += nbytes;
  size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void CountingAllocator::deallocate(void* p, size_t nbytes) {
  host_allocator().deallocate(p, nbytes);
  live_ -= nbytes;
}

backends::Kernel NullBackend::kernel(ops::OpKind op) const {
  constexpr uint32_t kRuns =
      ops::kUnary | ops::kBinary | ops::kReduce | ops::kShape | ops::kNullary | ops::kTernary;
  if ((ops::op_traits(op) & kRuns) == 0) return nullptr;
  return backends::reference_backend().kernel(op);
}

const NullBackend& null_backend() {
  static const NullBackend* backend =
      new NullBackend();  // never destroyed: buffers outlive statics
  return *backend;
}

namespace {

const backends::BackendRegistrar kNullRegistrar("null", []() -> const backends::Backend& {
  return null_backend();
});
const RegisterBackendTraits kNullTraits(
    {.name = "null",
     .not_cross_device = "the null test backend refuses most ops "
                         "(tests/backends/null/)"});

}  // namespace

}  // namespace loom::testing
