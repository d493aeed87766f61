// The xla backend, `lazy:xla:<index>`: loom's graphs compiled by XLA
// through a PJRT plugin (pjrt_client.h; which plugin: plugin_discovery.h).
// Its memory is PJRT buffers (host_visible() false: XlaMemory hands out
// handles host code cannot touch); uploads and downloads are PJRT's
// BufferFromHostBuffer / ToHostBuffer, each awaited on its PJRT event, so
// the stream (inline: the calling thread) is ordered on those events. Its
// Capabilities say it plans for itself: loom's generic passes and the
// decompositions of ops it does not lower run, loom's fusion and memory
// plan do not (XLA fuses and assigns buffers), and compile() returns an
// XlaExecutable (xla_executable.h). Devices are the client's addressable
// devices, in its order.
#pragma once

#include "backends/backend.h"
#include "backends/xla/xla_memory.h"
#include "backends/xla/xla_runtime.h"

namespace loom::backends::xla {

class XlaBackend final : public Backend {
 public:
  std::string_view name() const override { return "xla"; }
  std::string unavailable_reason() const override;
  Capabilities capabilities() const override;
  int device_count() const override;
  Allocator& allocator() const override { return memory(); }
  bool host_visible() const override { return false; }
  BufferPtr upload(const void* host, const ops::TensorType& type, int device) const override;
  /// Into a buffer that already holds an array (its shape and dtype); a
  /// fresh allocate() has none: use upload().
  void copy_to_device(const void* host, Buffer& dst, size_t nbytes) const override;
  void copy_to_host(const Buffer& src, void* host, size_t nbytes) const override;
  Stream& stream() const override { return stream_; }
  std::shared_ptr<Executable> compile(std::shared_ptr<const compiler::Program> p) const override;
  /// XlaExecutable's loading constructor (serialize()'s bytes; "" compiles).
  std::shared_ptr<Executable> deserialize(std::shared_ptr<const compiler::Program> p,
                                          const std::string& bytes) const override;
  void warm_up() const override;

  XlaMemory& memory() const;
  /// A loom Buffer holding `buffer` (on device `device`).
  BufferPtr wrap(std::unique_ptr<PjrtBuffer> buffer, int device) const;

 private:
  mutable InlineStream stream_;
};

}  // namespace loom::backends::xla
