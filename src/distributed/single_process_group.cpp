// The one-rank ProcessGroup: identities, completed at once.
#include "distributed/single_process_group.h"

#include <cstdlib>
#include <cstring>

namespace loom::dist {
namespace {

class DoneWork final : public Work {
 public:
  void wait() override {}
  bool is_completed() override { return true; }
};

class SingleProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string_view backend_name() const override { return "single"; }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
  std::unique_ptr<ProcessGroup> duplicate() override {
    return std::make_unique<SingleProcessGroup>();
  }

 protected:
  std::unique_ptr<Work> start_all_reduce(void*, size_t, DataType, ReduceOp) override {
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> start_all_gather(const void* send, void* recv, size_t nbytes) override {
    if (nbytes > 0) std::memmove(recv, send, nbytes);
    return std::make_unique<DoneWork>();
  }
  // One rank: the sum and the mean are the operand itself.
  std::unique_ptr<Work> start_reduce_scatter(const void* send, void* recv, size_t count,
                                             DataType type, ReduceOp) override {
    if (count > 0) std::memmove(recv, send, count * data_type_size(type));
    return std::make_unique<DoneWork>();
  }
  void do_broadcast(void*, size_t, int) override {}
  std::vector<uint8_t> do_all_gather(const std::vector<uint8_t>& bytes) override { return bytes; }
  void do_barrier() override {}
};

}  // namespace

std::unique_ptr<ProcessGroup> make_single_process_group() {
  return std::make_unique<SingleProcessGroup>();
}

}  // namespace loom::dist
