// all_reduce's kernel body (all_reduce_kernel.h), shared by the reference and cpu
// backends: a memcpy, then the process group's in-place all_reduce_async.
#include "backends/all_reduce_kernel.h"

#include <cstring>
#include <string>

#include "loom/error.h"

namespace loom::backends {
namespace {

// Names the op and its type in the group's errors.
class AllReduceKernelWork final : public dist::Work {
 public:
  AllReduceKernelWork(std::unique_ptr<dist::Work> inner, std::string type)
      : inner_(std::move(inner)), type_(std::move(type)) {}
  void wait() override {
    try {
      inner_->wait();
    } catch (const Error& e) {
      fail("[all_reduce] ", type_, ": ", e.what());
    }
  }
  bool is_completed() override { return inner_->is_completed(); }
  int64_t completed_ns() const override { return inner_->completed_ns(); }

 private:
  std::unique_ptr<dist::Work> inner_;
  std::string type_;
};

}  // namespace

std::unique_ptr<dist::Work> start_all_reduce(const OpCall& call) {
  size_t nbytes = call.output.type.nbytes();
  if (nbytes > 0) std::memcpy(call.output.data, call.inputs[0].data, nbytes);
  dist::ProcessGroup& pg = dist::graph_process_group();  // one rank: identity, still counted
  dist::ReduceOp op = call.attrs->index == 1 ? dist::ReduceOp::mean : dist::ReduceOp::sum;
  std::string type = ops::to_string(call.output.type);
  try {
    return std::make_unique<AllReduceKernelWork>(
        pg.all_reduce_async(call.output.data, static_cast<size_t>(call.output.type.numel()),
                            dist::data_type_of(call.output.type.dtype), op),
        type);
  } catch (const Error& e) {
    fail("[all_reduce] ", type, ": ", e.what());
  }
}

void run_all_reduce(const OpCall& call) { start_all_reduce(call)->wait(); }

}  // namespace loom::backends
