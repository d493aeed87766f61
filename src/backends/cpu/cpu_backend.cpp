// The cpu backend's kernel table: an optimized kernel where one exists
// (cpu/kernels.h), else the reference kernel, so a fast kernel is an
// optimization, never a requirement.
#include "backends/cpu/fused.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"

namespace loom::backends {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    for (int i = 0; i < ops::kNumOps; ++i) {
      auto op = static_cast<ops::OpKind>(i);
      Kernel fast = cpu::optimized_kernel(op);
      table_[i] = fast ? fast : reference_backend().kernel(op);
    }
  }
  std::string_view name() const override { return "cpu"; }
  Kernel kernel(ops::OpKind op) const override { return table_[static_cast<int>(op)]; }
  void run_fused(const FusedCall& call) const override { cpu::run_fused_chunked(call); }

 private:
  Kernel table_[ops::kNumOps];
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace loom::backends
