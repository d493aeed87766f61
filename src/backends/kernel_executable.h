// KernelExecutable: the Executable of a KernelBackend (kernel_backend.h):
// one Program as a schedule of kernel calls over its memory plan
// (compiler/memory/plan.h),
// with runs of independent fused groups launched together
// (compiler/memory/batch.h; off with LOOM_FUSED_BATCH=0).
// The compile cache keeps executables; the planned intermediates live in one
// arena per backend, shared by its executables (grown to the largest plan,
// held under a lock for a run), so a steady-state run allocates only the
// graph outputs that no input was donated to, and memory does not grow with
// the number of cached graphs. Runs are serialized per executable (the lazy
// executor thread runs them) and per backend while they use the arena.
//
// Collectives (ops.def's kCollective: all_reduce) are started at their step
// and waited for right before the first step that reads their output (or at
// the end of the run when only the caller reads it), so a bucket's
// all-reduce overlaps the steps in between (compiler/passes/
// collective_schedule.cpp puts those in between). Until its wait a started
// collective's output stays live in the memory plan (the wait comes before
// its last reader, the end of its live range). LOOM_DDP_OVERLAP=0, or a
// backend whose memory the host cannot touch while its stream is idle (sim),
// starts and waits in one stream item instead (the blocking kernel): the
// stream may go idle between two items, and the collective must not be in
// flight then (MPI's progress thread writes its output).
//
//   auto exe = backend.compile_kernels(program);  // plans memory once
//   auto outs = exe->run(inputs, donatable);      // every step
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/executable.h"
#include "backends/kernel_backend.h"
#include "compiler/memory/batch.h"
#include "compiler/memory/plan.h"

namespace loom::dist {
class Work;  // loom/dist.h
}

namespace loom::backends {

class KernelExecutable : public Executable {
 public:
  /// Plans `program`'s memory; KernelBackend::compile_kernels checked its ops.
  KernelExecutable(const KernelBackend& backend, std::shared_ptr<const compiler::Program> program);
  ~KernelExecutable() override;

  const compiler::memory::MemoryPlan& plan() const { return plan_; }

  /// Runs the program on `inputs` (one buffer per graph input, in this
  /// backend's memory) and returns one buffer per graph output. An output
  /// takes its planned donor's buffer only when donatable[i] and nothing
  /// but `inputs` holds that buffer (the run-time veto); else it gets a
  /// fresh buffer. Launches go to the backend's stream and are waited for
  /// before returning. Throws what the kernels throw (loom::Error for bad
  /// index values, unsupported ops or dtypes) and what a collective's wait
  /// throws (loom::Error: "[dist] ... timed out"). A failed run of a program
  /// with collectives keeps its arena block and its bound buffers alive for
  /// good (counter RetiredAfterFailedCollectiveBytes): a started MPI
  /// collective cannot be cancelled and may still write them.
  std::vector<BufferPtr> run(std::vector<BufferPtr> inputs,
                             const std::vector<bool>& donatable) override;

  /// The memory plan's numbers (planned_peak_bytes, arena_bytes, ...).
  MemoryReport memory_report() const override;

  /// Bytes of arena this executable's plan needs (the backend's shared
  /// arena is grown to it on its first run).
  size_t arena_bytes() const { return plan_.arena_bytes; }

  /// Per step (and one past the last): the collective steps whose wait comes
  /// right before it, as planned at construction. Empty on the blocking
  /// path (LOOM_DDP_OVERLAP=0 or a backend that is not host-visible), where
  /// a collective's step starts and waits for it in one stream item.
  const std::vector<std::vector<int>>& collective_waits() const { return wait_before_; }

 protected:
  /// Runs step `s` on the stream with the resolved buffer addresses
  /// (`ptr[v]` for every value the step touches). The default enqueues
  /// one launch per step.
  virtual void launch(const compiler::Step& step, const std::vector<void*>& ptr);
  /// Starts collective step `step` (runs on the stream, in order); the
  /// default is the host kernel body (all_reduce_kernel.h). A device backend
  /// (NCCL on CUDA's stream) overrides it.
  virtual std::unique_ptr<dist::Work> start_collective(const compiler::Step& step,
                                                       const std::vector<void*>& ptr);
  /// Runs steps [first, first + count) — a batch of independent fused
  /// groups (compiler/memory/batch.h) — as one KernelBackend::run_fused_batch.
  void launch_batch(size_t first, int count, const std::vector<void*>& ptr);

 private:
  void bind_outputs(std::vector<BufferPtr>& own, const std::vector<bool>& donatable);
  void plan_collective_waits();
  void launch_steps();

  const KernelBackend& backend_;  // backend(), with its kernels
  compiler::memory::MemoryPlan plan_;
  std::mutex mu_;
  bool needs_arena_ = false;              // some value lives in the arena (maybe 0 bytes)
  std::vector<bool> skip_;                // per step: an alias of the memory plan, not launched
  std::vector<void*> ptr_;                // per value, rebuilt each run
  std::vector<bool> collective_;          // per step: a collective's start
  bool blocking_collectives_ = false;     // each waited inside its own step's stream item
  bool kernel_times_ = false;             // times each kernel (LOOM_KERNEL_TIMES=1 or 2 when built)
  std::vector<std::string> step_labels_;  // per step, LOOM_KERNEL_TIMES=2 only: its detail timer
  // The detail timer name of `step` (one of program_->steps), or null.
  const std::string* step_label_of(const compiler::Step& step) const;
  std::map<size_t, std::string> batch_labels_;  // per batch head, made at its first launch
  // The detail timer name of the batch of steps [first, first + count), or null.
  const std::string* batch_label_of(size_t first, int count);
  std::vector<std::vector<int>> wait_before_;      // per step + 1: collectives to wait for
  std::vector<std::unique_ptr<dist::Work>> work_;  // per step: the started collective
  std::vector<int> in_flight_;                     // started, not waited (stream side)
  std::vector<int> batch_;  // per step: plan_fused_batches (1 = runs alone, 0 = in a batch)
  std::vector<std::vector<FusedCall>> batch_calls_;  // per batch head, reused each run
};

}  // namespace loom::backends
