// The simulated device `lazy:sim`: proves the contract a GPU backend needs,
// on the host. Its buffers live in SimMemory (host code cannot touch them:
// PROT_NONE outside stream work), its copies and launches run in order on
// its own stream thread, and its kernels are the cpu backend's — so on
// lazy:sim every result equals lazy:cpu's bit for bit.
#include "backends/sim/sim_backend.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/sim/sim_memory.h"

namespace loom::backends {
namespace {

class SimBackend final : public KernelBackend {
 public:
  SimBackend() : stream_([this](bool busy) { memory_.open(busy); }) {}
  std::string_view name() const override { return "sim"; }
  Kernel kernel(ops::OpKind op) const override { return cpu_backend().kernel(op); }
  void run_fused(const FusedCall& call) const override { cpu_backend().run_fused(call); }
  void run_fused_batch(const std::vector<FusedCall>& calls) const override {
    cpu_backend().run_fused_batch(calls);
  }
  void warm_up() const override { cpu_backend().warm_up(); }
  Allocator& allocator() const override { return memory_; }
  bool host_visible() const override { return false; }
  Stream& stream() const override { return stream_; }

 private:
  mutable sim::SimMemory memory_;
  mutable ThreadStream stream_;
};

}  // namespace

const KernelBackend& sim_backend() {
  static const SimBackend* backend = new SimBackend();  // never destroyed: buffers outlive statics
  return *backend;
}

}  // namespace loom::backends
