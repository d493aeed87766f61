// The collectives' kernel bodies (all_reduce_kernel.h), shared by the reference
// and cpu backends: all_reduce is a memcpy, then the process group's in-place
// all_reduce_async; all_gather and reduce_scatter call the group's
// out-of-place all_gather_async / reduce_scatter_async.
#include "backends/all_reduce_kernel.h"

#include <cstring>
#include <string>
#include <vector>

#include "loom/error.h"

namespace loom::backends {
namespace {

// Names the op and its type in the group's errors.
class AllReduceKernelWork final : public dist::Work {
 public:
  AllReduceKernelWork(std::unique_ptr<dist::Work> inner, std::string type,
                      const char* op = "all_reduce")
      : inner_(std::move(inner)), type_(std::move(type)), op_(op) {}
  void wait() override {
    try {
      inner_->wait();
    } catch (const Error& e) {
      fail("[", op_, "] ", type_, ": ", e.what());
    }
  }
  bool is_completed() override { return inner_->is_completed(); }
  int64_t completed_ns() const override { return inner_->completed_ns(); }

 private:
  std::unique_ptr<dist::Work> inner_;
  std::string type_;
  const char* op_;
};

// attrs' world size (ops.def) must be the group's: a graph traced for another
// world size (a cached executable, a test) would read or write out of bounds.
void check_kernel_world(const char* op, int64_t world, const dist::ProcessGroup& pg) {
  LOOM_CHECK(world == pg.world_size(), "[", op, "] traced for world size ", world,
             ", but the process group has ", pg.world_size(), " ranks");
}

}  // namespace

std::unique_ptr<dist::Work> start_all_reduce(const OpCall& call) {
  size_t nbytes = call.output.type.nbytes();
  if (nbytes > 0) std::memcpy(call.output.data, call.inputs[0].data, nbytes);
  dist::ProcessGroup& pg = dist::graph_process_group();  // one rank: identity, still counted
  dist::ReduceOp op = call.attrs->reduce_op == 1 ? dist::ReduceOp::mean : dist::ReduceOp::sum;
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

std::unique_ptr<dist::Work> start_all_gather(const OpCall& call) {
  dist::ProcessGroup& pg = dist::graph_process_group();
  std::string type = ops::to_string(call.inputs[0].type);
  try {
    check_kernel_world("all_gather", call.attrs->world_size, pg);
    // The operand stays live until the wait (compiler::collective_wait_step).
    auto work =
        pg.all_gather_async(call.inputs[0].data, call.output.data, call.inputs[0].type.nbytes());
    return std::make_unique<AllReduceKernelWork>(std::move(work), type, "all_gather");
  } catch (const Error& e) {
    fail("[all_gather] ", type, ": ", e.what());
  }
}

std::unique_ptr<dist::Work> start_reduce_scatter(const OpCall& call) {
  dist::ProcessGroup& pg = dist::graph_process_group();
  std::string type = ops::to_string(call.inputs[0].type);
  dist::ReduceOp op = call.attrs->reduce_op == 1 ? dist::ReduceOp::mean : dist::ReduceOp::sum;
  try {
    check_kernel_world("reduce_scatter", call.attrs->world_size, pg);
    auto work = pg.reduce_scatter_async(call.inputs[0].data, call.output.data,
                                        static_cast<size_t>(call.output.type.numel()),
                                        dist::data_type_of(call.output.type.dtype), op);
    return std::make_unique<AllReduceKernelWork>(std::move(work), type, "reduce_scatter");
  } catch (const Error& e) {
    fail("[reduce_scatter] ", type, ": ", e.what());
  }
}

std::unique_ptr<dist::Work> start_collective_kernel(const OpCall& call) {
  switch (call.op) {
    case ops::OpKind::k_all_gather:
      return start_all_gather(call);
    case ops::OpKind::k_reduce_scatter:
      return start_reduce_scatter(call);
    default:
      return start_all_reduce(call);
  }
}

void run_all_gather(const OpCall& call) { start_all_gather(call)->wait(); }
void run_reduce_scatter(const OpCall& call) { start_reduce_scatter(call)->wait(); }

}  // namespace loom::backends
