// The null test backend, `lazy:null`: proof that a backend is its folder.
// It lives in tests/, is built into loom_tests by CMakeLists.txt's
// LOOM_TEST_BACKENDS entry, and registers itself (BackendRegistrar, in
// null_backend.cpp): no line of src/ names it. It runs only the elementwise,
// reduction, shape, nullary and `where` ops (ops.def traits kUnary, kBinary,
// kReduce, kShape, kNullary, kTernary), with the reference kernels; the
// compiler decomposes the composite ops (softmax, layer_norm, ...) into
// those, and it refuses every other op (matmul, embedding, dropout,
// collectives, ...) at compile with "[op] not supported by backend null".
// Its memory is host memory that it counts (live and peak bytes) and that
// code above treats as device memory (host_visible() false: every tensor
// enters through upload, leaves through copy_to_host).
#pragma once

#include <atomic>
#include <cstddef>

#include "backends/kernel_backend.h"

namespace loom::testing {

/// Host memory that counts the bytes this backend's buffers hold.
class CountingAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override;
  void deallocate(void* p, size_t nbytes) override;
  /// Bytes held by live buffers (multiples of 64), and the most held at once.
  size_t live_bytes() const { return live_; }
  size_t peak_bytes() const { return peak_; }

 private:
  std::atomic<size_t> live_{0}, peak_{0};
};

class NullBackend final : public backends::KernelBackend {
 public:
  std::string_view name() const override { return "null"; }
  /// The reference kernel for the op families above; nullptr for the rest.
  backends::Kernel kernel(ops::OpKind op) const override;
  Allocator& allocator() const override { return memory_; }
  bool host_visible() const override { return false; }
  backends::Stream& stream() const override { return stream_; }
  const CountingAllocator& memory() const { return memory_; }

 private:
  mutable CountingAllocator memory_;
  mutable backends::InlineStream stream_;
};

/// The registered instance (backend_by_name("null") returns it too).
const NullBackend& null_backend();

}  // namespace loom::testing
