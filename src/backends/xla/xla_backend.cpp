// XlaBackend (xla_backend.h): capabilities, memory, copies; xla_backend().
#include "backends/xla/xla_backend.h"

#include <cstring>

#include "backends/xla/lower/stablehlo.h"
#include "backends/xla/xla_executable.h"
#include "backends/xla/xla_runtime.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom::backends::xla {

std::string XlaBackend::unavailable_reason() const { return unavailable_xla_reason(); }

Capabilities XlaBackend::capabilities() const {
  Capabilities c;
  c.ops = lowered_ops();
  // Collectives are not lowered: the executable splits its graph at them and
  // runs them on the host between the stages (collective_split.h).
  for (int i = 0; i < ops::kNumOps; ++i)
    if (ops::op_traits(static_cast<ops::OpKind>(i)) & ops::kCollective)
      c.ops.set(static_cast<size_t>(i));
  c.fuse_elementwise = false;  // XLA fuses
  c.plans_itself = true;       // and assigns buffers
  // bf16 math runs natively on accelerators; XLA's CPU backend emulates it.
  c.native_bf16 = unavailable_xla_reason(true).empty() && xla_info().platform_name != "cpu";
  return c;
}

int XlaBackend::device_count() const {
  // Loads the plugin: a version mismatch or a failing client throws its line here.
  return unavailable_xla_reason().empty() ? xla_client().device_count() : 1;
}

// Nothing to create ahead: the client is never destroyed (buffers may
// outlive statics), and loading the plugin waits for the first lazy:xla use.
void XlaBackend::warm_up() const {}

XlaMemory& XlaBackend::memory() const {
  static auto* m = new XlaMemory;  // never destroyed: buffers outlive statics
  return *m;
}

BufferPtr XlaBackend::wrap(std::unique_ptr<PjrtBuffer> buffer, int device) const {
  auto b = std::make_shared<Buffer>(buffer->nbytes(), memory(), false);
  memory().bind(*b, std::move(buffer), device);
  return b;
}

BufferPtr XlaBackend::upload(const void* host, const ops::TensorType& type, int device) const {
  BufferPtr b = wrap(xla_client().from_host(host, type, device), device);
  metrics::add_counter("TransferToDeviceBytes", static_cast<int64_t>(type.nbytes()));
  return b;
}

void XlaBackend::copy_to_device(const void* host, Buffer& dst, size_t nbytes) const {
  const PjrtBuffer& old = memory().get(dst);  // throws for a fresh allocate()
  LOOM_CHECK(nbytes == old.nbytes(), "[xla] copy of ", nbytes, " bytes into a ",
             ops::to_string(old.type()), " buffer (", old.nbytes(), " bytes)");
  int device = memory().device_of(dst);
  memory().bind(dst, xla_client().from_host(host, old.type(), device), device);
  metrics::add_counter("TransferToDeviceBytes", static_cast<int64_t>(nbytes));
}

void XlaBackend::copy_to_host(const Buffer& src, void* host, size_t nbytes) const {
  const PjrtBuffer& b = memory().get(src);
  LOOM_CHECK(nbytes <= b.nbytes(), "[xla] copy of ", nbytes, " bytes from a ",
             ops::to_string(b.type()), " buffer (", b.nbytes(), " bytes)");
  if (nbytes == b.nbytes()) {
    if (nbytes) xla_client().to_host(b, host);
  } else {
    std::vector<std::byte> all(b.nbytes());
    xla_client().to_host(b, all.data());
    std::memcpy(host, all.data(), nbytes);
  }
  metrics::add_counter("TransferFromDeviceBytes", static_cast<int64_t>(nbytes));
}

std::shared_ptr<Executable> XlaBackend::compile(std::shared_ptr<const compiler::Program> p) const {
  return std::make_shared<XlaExecutable>(*this, std::move(p));
}

std::shared_ptr<Executable> XlaBackend::deserialize(std::shared_ptr<const compiler::Program> p,
                                                    const std::string& bytes) const {
  if (bytes.empty()) return compile(std::move(p));
  return std::make_shared<XlaExecutable>(*this, std::move(p), bytes);
}

}  // namespace loom::backends::xla

namespace loom::backends {

const Backend& xla_backend() {
  static const xla::XlaBackend* backend = new xla::XlaBackend();  // buffers outlive statics
  return *backend;
}

}  // namespace loom::backends
