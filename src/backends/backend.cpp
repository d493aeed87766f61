// Backend's defaults: run through the kernel table, capabilities from it,
// host memory through a caching allocator, copies as memcpy on the stream,
// compile into the generic Executable.
#include "backends/backend.h"

#include <cstdlib>
#include <cstring>

#include "backends/executable.h"
#include "core/settings.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom::backends {

void Backend::run(const OpCall& call) const {
  Kernel k = kernel(call.op);
  LOOM_CHECK(k != nullptr, "[", ops::op_name(call.op), "] not supported by backend ", name());
  k(call);
}

Capabilities Backend::capabilities() const {
  Capabilities c;
  for (int i = 0; i < ops::kNumOps; ++i)
    if (kernel(static_cast<ops::OpKind>(i))) c.ops.set(static_cast<size_t>(i));
  return c;
}

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

std::shared_ptr<Executable> Backend::compile(std::shared_ptr<const compiler::Program> p) const {
  return std::make_shared<Executable>(*this, std::move(p));
}

}  // namespace loom::backends

namespace loom::backends {

void Backend::run_fused(const FusedCall& call) const {
  const compiler::FusedGroup& g = *call.group;
  std::vector<std::vector<std::byte>> temps(g.body.size());
  std::vector<ConstView> values(call.inputs);
  for (size_t k = 0; k < g.body.size(); ++k) {
    const compiler::FusedOp& op = g.body[k];
    temps[k].resize(op.type.nbytes());
    OpCall c{op.op, &op.attrs, {}, {temps[k].data(), op.type}};
    for (int a : op.args) c.inputs.push_back(values[a]);
    run(c);
    values.push_back({temps[k].data(), op.type});
  }
  if (g.has_reduce) {  // reads the temporaries only, so it may run first
    const compiler::FusedReduce& r = g.reduce;
    run(OpCall{r.op, &r.attrs, {values[g.num_inputs() + r.arg]}, call.outputs.back()});
  }
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    const auto& t = temps[g.outputs[o]];
    std::copy(t.begin(), t.end(), static_cast<std::byte*>(call.outputs[o].data));
  }
}

}  // namespace loom::backends

namespace loom::backends {

void Backend::run_fused_batch(const std::vector<FusedCall>& calls) const {
  for (const FusedCall& call : calls) run_fused(call);
}

}  // namespace loom::backends
