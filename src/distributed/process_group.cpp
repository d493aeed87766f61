// ProcessGroup's public collectives (the metrics around each backend call),
// and the names of the element types and reduce ops. Assumes a backend's
// start_all_reduce returns a Work whose wait() rethrows the engine's failure.
#include <algorithm>
#include <chrono>
#include <string>

#include "loom/dist.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom::dist {
namespace {

int64_t pg_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Wraps a backend's Work: AllReduceTime is start -> completion (as the
// backend saw it, else when wait() returned), AllReduceWaitTime the time
// wait() blocked its caller (all of it for a blocking all_reduce; with
// overlap only what the compute in between did not hide).
class TimedWork final : public Work {
 public:
  // `metric`: "AllReduce", "AllGather" or "ReduceScatter" (+ "Time", "WaitTime").
  TimedWork(std::unique_ptr<Work> inner, int64_t start_ns, const char* metric = "AllReduce")
      : inner_(std::move(inner)), start_ns_(start_ns), metric_(metric) {}
  ~TimedWork() override {
    try {
      wait();
    } catch (...) {  // a destructor must not throw; wait() reported it if called
    }
  }
  void wait() override {
    if (done_) return;
    done_ = true;
    const int64_t t0 = pg_now_ns();
    inner_->wait();
    const int64_t t1 = pg_now_ns();
    metrics::add_time(metric_ + "WaitTime", t1 - t0);
    const int64_t completed = inner_->completed_ns();
    metrics::add_time(metric_ + "Time",
                      (completed >= start_ns_ ? std::min(completed, t1) : t1) - start_ns_);
  }
  bool is_completed() override { return done_ || inner_->is_completed(); }
  int64_t completed_ns() const override { return inner_->completed_ns(); }

 private:
  std::unique_ptr<Work> inner_;
  int64_t start_ns_;
  std::string metric_;
  bool done_ = false;
};

}  // namespace

size_t data_type_size(DataType t) {
  switch (t) {
    case DataType::f32:
    case DataType::i32:
      return 4;
    case DataType::f64:
    case DataType::i64:
      return 8;
    case DataType::bf16:
    case DataType::f16:
      return 2;
  }
  return 0;
}

const char* data_type_name(DataType t) {
  static const char* const kNames[] = {"f32", "f64", "bf16", "f16", "i32", "i64"};
  return kNames[static_cast<int>(t)];
}

DataType data_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return DataType::f32;
    case DType::bf16:
      return DataType::bf16;
    case DType::f16:
      return DataType::f16;
    case DType::i32:
      return DataType::i32;
    case DType::i64:
      return DataType::i64;
    case DType::boolean:
      break;
  }
  fail("[dist] dtype ", dtype_name(dtype), " cannot be reduced");
}

const char* reduce_op_name(ReduceOp op) {
  static const char* const kNames[] = {"sum", "mean", "max"};
  return kNames[static_cast<int>(op)];
}

ReduceOp reduce_op_from_name(std::string_view name) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max})
    if (name == reduce_op_name(op)) return op;
  fail("[dist] unknown reduce op '", name, "' (expected sum, mean, max)");
}

std::unique_ptr<Work> ProcessGroup::all_reduce_async(void* data, size_t count, DataType type,
                                                     ReduceOp op) {
  metrics::add_counter("AllReduceCount");
  metrics::add_counter("AllReduceBytes", static_cast<int64_t>(count * data_type_size(type)));
  int64_t start = pg_now_ns();
  return std::make_unique<TimedWork>(start_all_reduce(data, count, type, op), start);
}

void ProcessGroup::all_reduce(void* data, size_t count, DataType type, ReduceOp op) {
  all_reduce_async(data, count, type, op)->wait();
}

std::unique_ptr<Work> ProcessGroup::all_gather_async(const void* send, void* recv, size_t nbytes) {
  metrics::add_counter("AllGatherCount");
  metrics::add_counter("AllGatherBytes", static_cast<int64_t>(nbytes) * world_size());
  int64_t start = pg_now_ns();
  return std::make_unique<TimedWork>(start_all_gather(send, recv, nbytes), start, "AllGather");
}

std::unique_ptr<Work> ProcessGroup::reduce_scatter_async(const void* send, void* recv, size_t count,
                                                         DataType type, ReduceOp op) {
  LOOM_CHECK(op == ReduceOp::sum || op == ReduceOp::mean, "[dist] reduce_scatter: reduce op ",
             reduce_op_name(op), " is not supported (sum, mean)");
  metrics::add_counter("ReduceScatterCount");
  metrics::add_counter("ReduceScatterBytes",
                       static_cast<int64_t>(count * data_type_size(type)) * world_size());
  int64_t start = pg_now_ns();
  return std::make_unique<TimedWork>(start_reduce_scatter(send, recv, count, type, op), start,
                                     "ReduceScatter");
}

std::unique_ptr<Work> ProcessGroup::start_all_gather(const void*, void*, size_t) {
  fail("[dist] ", backend_name(), " has no all_gather");
}

std::unique_ptr<Work> ProcessGroup::start_reduce_scatter(const void*, void*, size_t, DataType,
                                                         ReduceOp) {
  fail("[dist] ", backend_name(), " has no reduce_scatter");
}

void ProcessGroup::broadcast(void* data, size_t nbytes, int root) {
  LOOM_CHECK(root >= 0 && root < world_size(), "[dist] broadcast root ", root,
             " is not a rank (world size ", world_size(), ")");
  do_broadcast(data, nbytes, root);
}

std::vector<uint8_t> ProcessGroup::all_gather(const std::vector<uint8_t>& bytes) {
  return do_all_gather(bytes);
}

void ProcessGroup::barrier() { do_barrier(); }

}  // namespace loom::dist
