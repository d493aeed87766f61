// Backend: the interface every kernel provider implements (reference, cpu,
// later cuda). A backend sees ops only as OpCalls: op kind, attributes, typed
// input buffers and one output buffer (row-major, contiguous, 64-byte
// aligned). Backends never include lazy/ or anything above it.
#pragma once

#include <string_view>
#include <vector>

#include "compiler/program.h"
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

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
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
  /// Creates the backend's process-wide state (libraries' globals, caches)
  /// on the calling thread. The lazy device calls it before it registers its
  /// exit-time drain, so that state is destroyed after the last job ran.
  virtual void warm_up() const {}
};

/// The plain-loop oracle: every op, computed in double precision.
const Backend& reference_backend();
/// Optimized kernels (vectorized, OpenMP, oneDNN GEMM); falls back to the
/// reference kernel for ops it does not optimize.
const Backend& cpu_backend();
/// "reference" or "cpu"; throws loom::Error for other names.
const Backend& backend_by_name(std::string_view name);

}  // namespace loom::backends
