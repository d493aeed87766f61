// The cpu backend's kernel table: an optimized kernel where one exists
// (cpu/kernels.h), else the reference kernel, so a fast kernel is an
// optimization, never a requirement.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fused.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"

namespace loom::backends {
namespace {

class CpuBackend final : public KernelBackend {
 public:
  CpuBackend() {
    for (int i = 0; i < ops::kNumOps; ++i) {
      auto op = static_cast<ops::OpKind>(i);
      Kernel fast = cpu::optimized_kernel(op);
      table_[i] = fast ? fast : reference_backend().kernel(op);
    }
  }
  std::string_view name() const override { return "cpu"; }
  Capabilities capabilities() const override {
    Capabilities c = KernelBackend::capabilities();
    c.native_bf16 = cpu::gemm_hardware_native(DType::bf16);
    return c;
  }
  Kernel kernel(ops::OpKind op) const override { return table_[static_cast<int>(op)]; }
  void run_fused(const FusedCall& call) const override { cpu::run_fused_chunked(call); }
  void run_fused_batch(const std::vector<FusedCall>& calls) const override {
    cpu::run_fused_batch_chunked(calls);
  }
  Stream& stream() const override { return stream_; }
  // One tiny GEMM initializes oneDNN (engine, primitive cache, its
  // instrumentation globals) and our primitive cache.
  void warm_up() const override {
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {};
    cpu::GemmShape shape;
    shape.m = shape.n = shape.k = 2;
    cpu::gemm(shape, DType::f32, a, b, c);
  }

 private:
  Kernel table_[ops::kNumOps];
  mutable InlineStream stream_;
};

}  // namespace

const KernelBackend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace loom::backends
