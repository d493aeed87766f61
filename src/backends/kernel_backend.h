// KernelBackend: a Backend whose programs loom schedules itself, one kernel
// call per step over its memory plan (cpu, sim, reference; a CUDA backend
// later). It adds to Backend the kernel table, the fused-group runners, and
// compile() -> KernelExecutable (kernel_executable.h: the schedule, the
// memory plan, the shared arena). Its kernels see ops as OpCalls: op kind,
// attributes, typed input buffers and one output buffer (row-major,
// contiguous, 64-byte aligned). Capabilities come from the kernel table, so
// the table is the one list of what it runs.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "ops/attrs.h"

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

class KernelExecutable;

class KernelBackend : public Backend {
 public:
  /// The kernel table's ops (fuse_elementwise on, nothing planned by the device).
  Capabilities capabilities() const override;
  /// compile_kernels(p).
  std::shared_ptr<Executable> compile(std::shared_ptr<const compiler::Program> p) const override;
  /// Plans `p`'s memory and checks that the table has a kernel for every
  /// op it runs (fused bodies included); throws loom::Error "[op] not
  /// supported by backend X" otherwise.
  std::shared_ptr<KernelExecutable> compile_kernels(
      std::shared_ptr<const compiler::Program> p) const;

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
};

}  // namespace loom::backends
