// Backend: a device. It owns its memory (allocator(): Buffers that code above
// reaches only through copy_to_device / copy_to_host unless host-visible),
// its stream (stream.h: copies and launches in order, asynchronous where the
// device is), and compile(Program) -> Executable (executable.h: the program's
// kernels and memory plan, prepared once and run every step). Its kernels
// see ops as OpCalls: op kind, attributes, typed input buffers and one
// output buffer (row-major, contiguous, 64-byte aligned). The compiler sees
// a backend only through Capabilities. Backends are found by name in the
// registry (registry.cpp, one line each). Backends never include lazy/ or
// anything above it.
#pragma once

#include <bitset>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/stream.h"
#include "compiler/program.h"
#include "core/buffer.h"
#include "ops/attrs.h"
#include "ops/op_kind.h"

namespace loom::backends {

struct ConstView {
  const void* data = nullptr;
  ops::TensorType type;
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
};

struct MutView {
  void* data = nullptr;
  ops::TensorType type;
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

/// One op to run: output = op(inputs; attrs). The output buffer is allocated
/// by the caller with `output.type.nbytes()` bytes and may not alias an input.
struct OpCall {
  ops::OpKind op;
  const ops::Attrs* attrs = nullptr;
  std::vector<ConstView> inputs;
  MutView output;
};

using Kernel = void (*)(const OpCall&);

/// A fused elementwise group to run: inputs in group.input_types order,
/// outputs in group.outputs order, then the reduction's result when
/// group.has_reduce. An output may share its buffer with an input of the
/// same type (in-place: each element is read before written; the reduction's
/// result is written after every input element was read).
struct FusedCall {
  const compiler::FusedGroup* group = nullptr;
  std::vector<ConstView> inputs;
  std::vector<MutView> outputs;
};

/// What the compiler may assume about a backend (and nothing else).
struct Capabilities {
  std::bitset<ops::kNumOps> ops;  // op kinds with a kernel
  bool fuse_elementwise = true;   // runs FusedCalls (else fusion is off)
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
  /// backend's input/output aliasing. Its compile() returns an Executable
  /// subclass made with Executable's SelfPlanned constructor.
  bool plans_itself = false;
  bool supports(ops::OpKind op) const { return ops.test(static_cast<size_t>(op)); }
};

class Executable;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// The op kinds this backend has kernels for, and its fusion abilities.
  virtual Capabilities capabilities() const;
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
  /// Prepares `program` to run on this device: its memory plan, and the
  /// backend's kernels for it. The default runs the kernel table.
  virtual std::shared_ptr<Executable> compile(std::shared_ptr<const compiler::Program> p) const;

  /// The kernel that runs `op`, or nullptr when this backend lacks one.
  virtual Kernel kernel(ops::OpKind op) const = 0;
  bool supports(ops::OpKind op) const { return kernel(op) != nullptr; }
  /// Runs `call`. Throws loom::Error "[op] not supported by backend X" when
  /// there is no kernel; kernels throw loom::Error for bad index values
  /// (e.g. an embedding id out of range) and unsupported dtypes.
  void run(const OpCall& call) const;
  /// Runs a fused group. The default evaluates the body op by op through
  /// kernel() into whole temporaries; backends override it with a kernel that
  /// touches memory once.
  virtual void run_fused(const FusedCall& call) const;
  /// Runs independent fused groups (no reductions; none reads what another
  /// writes, none writes what another reads: compiler/memory/batch.h) in
  /// any order or at once. The default runs them one by one through
  /// run_fused; the cpu backend makes one parallel pass over all their
  /// elements (one OpenMP region instead of one per group).
  virtual void run_fused_batch(const std::vector<FusedCall>& calls) const;
  /// Creates the backend's process-wide state (libraries' globals, caches)
  /// on the calling thread. The lazy device calls it the first time it sends
  /// a graph to this backend, then registers an exit-time drain of its
  /// executor, so that state is destroyed after the last job ran. Backends a
  /// process never runs on are never built.
  virtual void warm_up() const {}
};

/// The plain-loop oracle: every op, computed in double precision.
const Backend& reference_backend();
/// Optimized kernels (vectorized, OpenMP, oneDNN GEMM); falls back to the
/// reference kernel for ops it does not optimize.
const Backend& cpu_backend();
/// The simulated device (backends/sim/): cpu kernels on memory host code
/// cannot touch, run on its own stream thread.
const Backend& sim_backend();
/// XLA through a PJRT plugin (backends/xla/): StableHLO compiled by the
/// plugin, memory in PJRT buffers; unavailable_reason() when no plugin.
const Backend& xla_backend();

/// The registered backend called `name` (registry.cpp); throws loom::Error
/// "[backend] unknown backend 'x' (expected cpu, reference, sim)".
const Backend& backend_by_name(std::string_view name);
/// Registered backend names, in registry order.
std::vector<std::string_view> backend_names();

}  // namespace loom::backends
