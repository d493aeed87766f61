// Backend: a device, the thin interface everything above the backends uses.
// It owns its memory (allocator(): Buffers that code above reaches only
// through copy_to_device / copy_to_host unless host-visible), its stream
// (stream.h: copies and launches in order, asynchronous where the device
// is; events to wait on), and compile(Program) -> Executable (executable.h:
// the program prepared once and run every step). The compiler sees a backend
// only through Capabilities: the one place that says which ops it runs.
// How a backend runs a program is its own: KernelBackend (kernel_backend.h)
// schedules it over a kernel table with loom's memory plan (cpu, sim,
// reference); xla hands it to XLA. Backends are found by name in the
// registry (registry.cpp: one line each; register_backend for a program's
// own). Backends never include lazy/ or anything above it.
#pragma once

#include <bitset>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/stream.h"
#include "compiler/program.h"
#include "core/buffer.h"
#include "ops/op_kind.h"

namespace loom::backends {

/// What the compiler may assume about a backend (and nothing else).
struct Capabilities {
  /// The op kinds this backend runs; the compiler decomposes the composite
  /// ops missing here (compiler/pass.h), and a program with any other op
  /// missing is refused by compile().
  std::bitset<ops::kNumOps> ops;
  /// Runs fused elementwise groups (KernelBackend::run_fused; else fusion is off).
  bool fuse_elementwise = true;
  /// Cost hint: a fused group is worth it from this many elements on (the
  /// cpu backend fuses everything; a GPU would say where launches pay).
  int64_t min_fused_elements = 0;
  /// bf16 matmuls run on bf16 hardware (AVX512-BF16 / AMX on cpu), so
  /// autocast to bf16 is faster than f32 (else they are emulated or go
  /// through f32, and autocast only adds casts).
  bool native_bf16 = false;
  /// The backend's own compiler fuses and assigns buffers (xla: XLA does):
  /// loom's fusion and memory plan are not run for it (the program it gets
  /// is unfused: fuse_elementwise must be false), the generic passes and
  /// the decompositions `ops` asks for still are, and donation becomes the
  /// backend's input/output aliasing.
  bool plans_itself = false;
  bool supports(ops::OpKind op) const { return ops.test(static_cast<size_t>(op)); }
};

class Executable;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// The op kinds this backend runs, and its fusion and planning abilities.
  virtual Capabilities capabilities() const = 0;
  /// How many devices of this backend exist (`lazy:<name>:<index>` with
  /// index < device_count()).
  virtual int device_count() const { return 1; }

  // ---- memory ----
  /// Where this backend's buffers come from. The default: host memory
  /// through a caching allocator shared by host-memory backends.
  virtual Allocator& allocator() const;
  /// False when host code may not read or write the buffers' bytes.
  virtual bool host_visible() const { return true; }
  /// Empty when this backend can run in this process; else one line saying why not
  /// (e.g. its plugin is not installed). Device parsing refuses the backend with it,
  /// and the cross-device test suites skip the backend with it.
  virtual std::string unavailable_reason() const { return {}; }
  /// A buffer of `nbytes` in this backend's memory (contents unspecified).
  BufferPtr allocate(size_t nbytes) const;
  /// A new buffer on device `device` (lazy:<name>:<device>) holding the
  /// `type.nbytes()` host bytes at `host` (row-major). The one way tensors
  /// enter device memory (lazy/dispatch.cpp): a backend whose buffers carry
  /// their shape and dtype (xla: PJRT buffers) creates them here. The
  /// default allocates and calls copy_to_device.
  virtual BufferPtr upload(const void* host, const ops::TensorType& type, int device) const;
  /// Copies `nbytes` from host memory into `dst` (this backend's), and back.
  /// Both are enqueued on stream() and waited for; counted in the metrics
  /// (TransferToDeviceBytes, TransferFromDeviceBytes).
  virtual void copy_to_device(const void* host, Buffer& dst, size_t nbytes) const;
  virtual void copy_to_host(const Buffer& src, void* host, size_t nbytes) const;

  // ---- work ----
  /// The stream launches and copies run on.
  virtual Stream& stream() const = 0;
  /// Prepares `p` (lowered by compiler/lower.h for capabilities()) to run
  /// on this device, once; the Executable runs it every step. Throws
  /// loom::Error naming the op when `p` holds an op capabilities() lacks.
  virtual std::shared_ptr<Executable> compile(std::shared_ptr<const compiler::Program> p) const = 0;
  /// Restores the executable of `p` from Executable::serialize()'s bytes,
  /// written by this backend in a process of the same build, without
  /// compiling. Empty `bytes` (what a backend that does not serialize
  /// writes) compiles `p`. Throws loom::Error "[<backend>] cannot load a
  /// serialized executable ..." for bytes this backend cannot restore (the
  /// default: any non-empty bytes), or that were made for another program.
  virtual std::shared_ptr<Executable> deserialize(std::shared_ptr<const compiler::Program> p,
                                                  const std::string& bytes) const;
  /// Creates the backend's process-wide state (libraries' globals, caches)
  /// on the calling thread. The lazy device calls it the first time it sends
  /// a graph to this backend, then registers an exit-time drain of its
  /// executor, so that state is destroyed after the last job ran. Backends a
  /// process never runs on are never built.
  virtual void warm_up() const {}
};

/// The registered backend called `name`; throws loom::Error
/// "[backend] unknown backend 'x' (expected cpu, reference, sim, ...)".
const Backend& backend_by_name(std::string_view name);
/// Registered backend names: registry.cpp's, then register_backend's in
/// registration order.
std::vector<std::string_view> backend_names();
/// Adds a backend defined outside src/backends/ (a test's, a program's own)
/// under `name`; `get` returns it, built on first use. Throws loom::Error
/// "[backend] register_backend: 'x' is already registered". Safe from a
/// static initializer (BackendRegistrar).
void register_backend(std::string_view name, const Backend& (*get)());
/// register_backend from a static object in the backend's own folder:
///   static const BackendRegistrar kRegistrar("null", null_backend);
struct BackendRegistrar {
  BackendRegistrar(std::string_view name, const Backend& (*get)()) { register_backend(name, get); }
};

}  // namespace loom::backends
